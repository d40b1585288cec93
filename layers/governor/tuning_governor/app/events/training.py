"""Use case: a SageMaker Training Job State Change event (a trial, or a standalone training job)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.app.envelope import Outcome, handle_errors, parse_event, placed
from tuning_governor.app.membership import admit
from tuning_governor.domain.job import JobState, job_state, trial_objective
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.domain.spend import RunningTrial
from tuning_governor.domain.trial_record import build_trial_record
from tuning_governor.errors import TransientError
from tuning_governor.governance.actions import resume_job
from tuning_governor.governance.engine import govern
from tuning_governor.governance.trials import record_trial
from tuning_governor.models.events import TrainingJobStateChange
from tuning_governor.models.records import TrialRecord
from tuning_governor.models.sagemaker import TRAINING_RUNNING, TRAINING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.observability import logger, metrics, tracer
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import GoverningStore


def track_standalone(
    job: TrainingJob, *, team: str | None, event_time: datetime, services: AppServices[GoverningStore]
) -> Outcome:
    """A training job outside any tuning job still holds instances (and maybe a warm pool): track them.
    Only in the home place: their items are keyed by name and count against the home place's quotas."""
    if job.place is not None:
        return {
            "outcome": "ignored",
            "reason": "standalone training job outside the home place",
            "training_job": job.name,
        }
    if job.resource_config is None:
        job = services.sagemaker_for(job.place).describe_training_job(job.name).model_copy(update={"tags": job.tags})
    fresh = services.store.upsert_training_job(job, team=team, event_time=event_time)
    if job.status in TRAINING_TERMINAL:
        services.store.set_warm_pool(job, team=team)
    return {"outcome": "tracked" if fresh else "stale", "training_job": job.name, "status": job.status}


def running_trial_of(
    detail: TrainingJob, known_job: JobState | None, region: str, services: AppServices[GoverningStore]
) -> RunningTrial | None:
    """What a running trial accrues on, from its event; one DescribeTrainingJob only when the event
    lacks the link to its tuning job, its instances, or a spot flag the job's own item cannot supply.
    None when Describe says it is not a trial (a standalone job whose name looks like one)."""
    job = detail
    spot: bool | None = detail.enable_managed_spot_training
    if "enable_managed_spot_training" not in detail.model_fields_set:
        spot = known_job.spot_training if known_job is not None else None
    if not detail.tuning_job_arn or not detail.instances() or spot is None:
        job = services.sagemaker_for(detail.place).describe_training_job(detail.name)
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


def track_progress(
    parsed: TrainingJobStateChange, detail: TrainingJob, policy: Policy, services: AppServices[GoverningStore]
) -> Outcome:
    """An event of a trial still running. From TrainingStartTime on it accrues cost: it is tracked as a
    running trial on its job and team items (once; never after its terminal record), then the spend
    and time rules judge the job (``trial-progress``: no trial history is read). ``detail``: the event's
    training job, carrying its place."""
    job_key = detail.tuning_job_key
    assert job_key is not None
    job = job_state(services.store.get_job(job_key))
    known: JobState | None = None  # the job as read, when this event changes nothing on it
    outcome: Outcome = {"outcome": "progress", "job": job_key, "trial": detail.name, "status": detail.status}
    if detail.status in TRAINING_RUNNING and detail.training_start_time is not None:
        if job is not None and detail.name.lower() in job.running_names:
            outcome["running"] = "known"
            known = job
        else:
            trial = running_trial_of(detail, job, parsed.region, services)
            team = policy.team_of(detail.tags, detail.roles)
            if trial is None:
                return track_standalone(detail, team=team, event_time=parsed.time, services=services)
            tracked = services.store.track_running(trial, team=(job.team if job is not None else None) or team)
            outcome["running"] = "tracked" if tracked else "already-finished"
    if job is None or job.ended:
        return outcome
    # Read again by the judgement when tracking the trial changed the job item; judged on the item as
    # read when it did not (a trial already known as running).
    outcome["decisions"] = govern("trial-progress", job_key, parsed.time, services, job=known)
    return outcome


def described_trial(detail: TrainingJob, services: AppServices[GoverningStore]) -> TrainingJob:
    """The trial as DescribeTrainingJob says, once it agrees the trial has ended (else: retry later)."""
    described = services.sagemaker_for(detail.place).describe_training_job(detail.name)
    if described.status not in TRAINING_TERMINAL:
        raise TransientError(f"DescribeTrainingJob still says {described.status}")
    return described


def record_finished(
    parsed: TrainingJobStateChange,
    described: TrainingJob,
    job: JobState | None,
    *,
    team: str | None,
    policy: Policy,
    services: AppServices[GoverningStore],
) -> tuple[TrialRecord, JobState | None, PriceCatalog]:
    """The trial's record, written once with its job's totals: (record, the job as written or None for a
    duplicate, the prices it was costed with)."""
    objective = trial_objective(job, described)
    catalog = services.price_catalog(policy)
    record = build_trial_record(
        described,
        job_key=str(described.tuning_job_key),
        region=parsed.region,
        objective_name=objective.metric if objective else (job.objective_name if job is not None else None),
        catalog=catalog,
        event_id=parsed.id,
        event_time=parsed.time,
    )
    written = record_trial(record, described, job, team=team, services=services, catalog=catalog)
    return record, written, catalog


def seen_before(
    parsed: TrainingJobStateChange,
    record: TrialRecord,
    job: JobState | None,
    *,
    catalog: PriceCatalog,
    services: AppServices[GoverningStore],
    team: str | None = None,
) -> Outcome:
    """A trial recorded before; but a warm pool that ended since bills retention the record lacks (its
    job and its ``team``'s month grow by it)."""
    job_key, name = record.job_key, parsed.detail.name
    if not services.store.update_trial_warm_pool(record, team=team):
        metrics.add_metric(name="DuplicateEvents", unit=MetricUnit.Count, value=1)
        # Maybe a retry of an attempt that failed after recording the trial: judge again (claimed
        # decisions make that idempotent), then finish the steps it left pending (a stop, a report):
        # in that order, so a report that cannot go out never holds back this judgement.
        resumed = govern("trial", job_key, parsed.time, services, catalog=catalog) + resume_job(job_key, job, services)
        duplicate: Outcome = {"outcome": "duplicate", "job": job_key, "trial": name}
        return duplicate | ({"decisions": resumed} if resumed else {})
    finalised = job is not None and job.ended
    if finalised:
        from tuning_governor.app.finalise import refinalise  # noqa: PLC0415 - a late trial only

        refinalise(job_key, job, region=parsed.region, services=services)
    return {
        "outcome": "warm-pool-billed",
        "job": job_key,
        "trial": name,
        "warm_pool_seconds": record.warm_pool_seconds,
        "refinalised": finalised,
    }


def judge_recorded(
    parsed: TrainingJobStateChange,
    record: TrialRecord,
    job: JobState | None,
    *,
    written: JobState,
    catalog: PriceCatalog,
    services: AppServices[GoverningStore],
) -> Outcome:
    """A trial recorded now: the trial rules judge its job, as the trial's transaction left it."""
    metrics.add_metric(name="TrialsRecorded", unit=MetricUnit.Count, value=1)
    if record.unpriced_types:
        logger.warning("trial has unpriced instance types", extra={"types": record.unpriced_types})
    outcome: Outcome = {"outcome": "recorded", "job": record.job_key, "trial": parsed.detail.name}
    if job is not None and job.ended:
        # The trial's event came after its job was finalised (EventBridge does not keep order):
        # refresh the summary so it counts this trial too, judge the trial rules on the ended job
        # (decisions recorded as already-ended), and report or correct the summary (report_summary).
        from tuning_governor.app.finalise import refinalise  # noqa: PLC0415 - a late trial only

        refinalise(record.job_key, job, region=parsed.region, services=services, judge=True)
        return outcome | {"status": record.status, "refinalised": True}
    # Judged on the job as the trial's transaction left it: no second read.
    decisions = govern("trial", record.job_key, parsed.time, services, job=written, catalog=catalog)
    return outcome | {"status": record.status, "decisions": decisions}


@tracer.capture_method
def process_training_event(event: Any, services: AppServices[GoverningStore]) -> Outcome:
    """Record a trial once, at its terminal status: one DescribeTrainingJob, one read of the job item
    and one transaction (of at most three items: the trial, its job, its team)."""

    def run() -> Outcome:
        nonlocal services  # an ungoverned account is rejected here; a monitored member is judged in monitor mode
        services = admit(event, services)
        parsed = parse_event(event, TrainingJobStateChange)
        detail = placed(parsed, services.home)
        logger.append_keys(training_job=detail.name)
        policy = services.policy()
        team = policy.team_of(detail.tags, detail.roles)
        if detail.tuning_job_key is None:
            return track_standalone(detail, team=team, event_time=parsed.time, services=services)
        if detail.status not in TRAINING_TERMINAL:
            return track_progress(parsed, detail, policy, services)
        described = described_trial(detail, services)
        # Describe is authoritative: a job whose name merely looks like a trial's has no TuningJobArn.
        if not described.tuning_job_arn:
            standalone = described.model_copy(update={"tags": detail.tags})
            return track_standalone(standalone, team=team, event_time=parsed.time, services=services)
        if described.place is None:  # warm pools are kept (by name) for the home place's capacity only
            services.store.set_warm_pool(described, team=team)
        job = job_state(services.store.get_job(str(described.tuning_job_key)))
        team = (job.team if job is not None else None) or team
        record, written, catalog = record_finished(parsed, described, job, team=team, policy=policy, services=services)
        if written is None:
            return seen_before(parsed, record, job, catalog=catalog, services=services, team=team)
        return judge_recorded(parsed, record, job, written=written, catalog=catalog, services=services)

    return handle_errors("training", event, run)
