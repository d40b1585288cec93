"""Use case: a SageMaker Training Job State Change event (a trial, or a standalone training job)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.app.envelope import Outcome, handle_errors, parse_event
from tuning_governor.app.finalise import refinalise
from tuning_governor.app.trial_records import build_trial_record
from tuning_governor.app.wiring import Services
from tuning_governor.errors import TransientError
from tuning_governor.governance.actions import resume_job
from tuning_governor.governance.engine import govern
from tuning_governor.governance.spend import RunningTrial
from tuning_governor.governance.trials import record_trial, trial_objective
from tuning_governor.models.events import TrainingJobStateChange
from tuning_governor.models.sagemaker import (
    TRAINING_RUNNING,
    TRAINING_TERMINAL,
    TUNING_TERMINAL,
    TrainingJob,
)
from tuning_governor.observability import logger, metrics, tracer
from tuning_governor.policy import Policy


def track_standalone(job: TrainingJob, *, team: str | None, event_time: datetime, services: Services) -> Outcome:
    """A training job outside any tuning job still holds instances (and maybe a warm pool): track them."""
    if job.resource_config is None:
        job = services.sagemaker.describe_training_job(job.name).model_copy(update={"tags": job.tags})
    fresh = services.store.upsert_training_job(job, team=team, event_time=event_time)
    if job.status in TRAINING_TERMINAL:
        services.store.set_warm_pool(job, team=team)
    return {"outcome": "tracked" if fresh else "stale", "training_job": job.name, "status": job.status}


def running_trial_of(
    detail: TrainingJob, meta: dict[str, Any] | None, region: str, services: Services
) -> RunningTrial | None:
    """What a running trial accrues on, from its event; one DescribeTrainingJob only when the event
    lacks the link to its tuning job, its instances, or a spot flag the job's own item cannot supply.
    None when Describe says it is not a trial (a standalone job whose name looks like one)."""
    job = detail
    spot: bool | None = detail.enable_managed_spot_training
    if "enable_managed_spot_training" not in detail.model_fields_set:
        known = (meta or {}).get("spot_training")
        spot = known if isinstance(known, bool) else None
    if not detail.tuning_job_arn or not detail.instances() or spot is None:
        job = services.sagemaker.describe_training_job(detail.name)
        if not job.tuning_job_arn:
            return None
        spot = job.enable_managed_spot_training
    start = job.training_start_time or detail.training_start_time
    job_key = job.tuning_job_key
    if start is None or job_key is None:
        return None
    stop = job.stopping_condition or detail.stopping_condition
    limits = [stop.max_runtime_in_seconds, stop.max_wait_time_in_seconds if spot else None] if stop else []
    return RunningTrial(
        job_key=job_key,
        trial=job.name.lower(),
        start=start,
        instances=job.instances(),
        spot=bool(spot),
        region=region,
        max_seconds=max((s for s in limits if s), default=None),
    )


def track_progress(parsed: TrainingJobStateChange, policy: Policy, services: Services) -> Outcome:
    """An event of a trial still running. From TrainingStartTime on it accrues cost: it is tracked as a
    running trial on its job and team items (once; never after its terminal record), then the spend
    and time rules judge the job (``trial-progress``: no trial history is read)."""
    detail = parsed.detail
    job_key = detail.tuning_job_key
    assert job_key is not None
    meta = services.store.get_job(job_key)
    outcome: Outcome = {"outcome": "progress", "job": job_key, "trial": detail.name, "status": detail.status}
    if detail.status in TRAINING_RUNNING and detail.training_start_time is not None:
        if detail.name.lower() in ((meta or {}).get("running") or {}):
            outcome["running"] = "known"
        else:
            trial = running_trial_of(detail, meta, parsed.region, services)
            if trial is None:
                return track_standalone(
                    detail, team=policy.team_of(detail.tags), event_time=parsed.time, services=services
                )
            team = (meta or {}).get("team") or policy.team_of(detail.tags)
            tracked = services.store.track_running(trial, team=team)
            outcome["running"] = "tracked" if tracked else "already-finished"
    if meta is None or meta.get("status") in TUNING_TERMINAL:
        return outcome
    outcome["decisions"] = govern("trial-progress", job_key, parsed.time, services)
    return outcome


@tracer.capture_method
def process_training_event(event: Any, services: Services) -> Outcome:
    """Record a trial once, at its terminal status: one DescribeTrainingJob, one read of the job item
    and one transaction (of at most three items: the trial, its job, its team)."""

    def run() -> Outcome:
        parsed = parse_event(event, TrainingJobStateChange)
        detail = parsed.detail
        logger.append_keys(training_job=detail.name)
        policy = services.policy()
        team = policy.team_of(detail.tags)
        if detail.tuning_job_key is None:
            return track_standalone(detail, team=team, event_time=parsed.time, services=services)
        if detail.status not in TRAINING_TERMINAL:
            return track_progress(parsed, policy, services)
        described = services.sagemaker.describe_training_job(detail.name)
        if described.status not in TRAINING_TERMINAL:
            raise TransientError(f"DescribeTrainingJob still says {described.status}")
        # Describe is authoritative: a job whose name merely looks like a trial's has no TuningJobArn.
        if not described.tuning_job_arn:
            return track_standalone(
                described.model_copy(update={"tags": detail.tags}), team=team, event_time=parsed.time, services=services
            )
        job_key = described.tuning_job_key
        assert job_key is not None
        services.store.set_warm_pool(described, team=team)
        meta = services.store.get_job(job_key)
        objective = trial_objective(meta, described)
        catalog = services.price_catalog(policy)
        record = build_trial_record(
            described,
            job_key=job_key,
            region=parsed.region,
            objective_name=objective.metric if objective else (meta or {}).get("objective_name"),
            catalog=catalog,
            event_id=parsed.id,
            event_time=parsed.time,
        )
        finalised = bool(meta and meta.get("status") in TUNING_TERMINAL)
        team = (meta or {}).get("team") or team
        written = record_trial(record, described, meta, team=team, services=services, catalog=catalog)
        if written is None:
            # Seen before; but a warm pool that ended since bills retention the record lacks.
            if not services.store.update_trial_warm_pool(record):
                metrics.add_metric(name="DuplicateEvents", unit=MetricUnit.Count, value=1)
                # Maybe a retry of an attempt that failed after recording the trial: finish the steps it
                # left pending, then judge again (claimed decisions make that idempotent).
                resumed = resume_job(job_key, meta, services) + govern("trial", job_key, parsed.time, services)
                duplicate: Outcome = {"outcome": "duplicate", "job": job_key, "trial": detail.name}
                return duplicate | ({"decisions": resumed} if resumed else {})
            if finalised:
                refinalise(job_key, meta, region=parsed.region, services=services)
            return {
                "outcome": "warm-pool-billed",
                "job": job_key,
                "trial": detail.name,
                "warm_pool_seconds": record.warm_pool_seconds,
                "refinalised": finalised,
            }
        metrics.add_metric(name="TrialsRecorded", unit=MetricUnit.Count, value=1)
        if record.unpriced_types:
            logger.warning("trial has unpriced instance types", extra={"types": record.unpriced_types})
        if finalised:
            # The trial's event came after its job was finalised (EventBridge does not keep order):
            # refresh the summary so it counts this trial too, judge the trial rules on the ended job
            # (decisions recorded as already-ended), and report or correct the summary (report_summary).
            refinalise(job_key, meta, region=parsed.region, services=services, judge=True)
            return {
                "outcome": "recorded",
                "job": job_key,
                "trial": detail.name,
                "status": record.status,
                "refinalised": True,
            }
        # Judged on the job item as the trial's transaction left it: no second read.
        decisions = govern("trial", job_key, parsed.time, services, meta=written)
        return {
            "outcome": "recorded",
            "job": job_key,
            "trial": detail.name,
            "status": record.status,
            "decisions": decisions,
        }

    return handle_errors("training", event, run)
