"""Application services: what a handler does with one event, given its adapters.

Handlers call ``process_training_event`` / ``process_tuning_event`` with an injected ``Services``
(tests pass moto-backed or fake adapters; Lambda gets ``default_services()``). Every outcome is a
small dict the handler returns; errors whose disposition is RETRY propagate so EventBridge retries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider
from aws_lambda_powertools.utilities.parser import parse
from botocore.config import Config
from pydantic import BaseModel, ValidationError

from tuning_governor.adapters.checks import CheckScheduler, SchedulerChecks
from tuning_governor.adapters.notifiers import Notifier, SlackNotifier, SnsNotifier, webhook_url_from_secret
from tuning_governor.adapters.quotas import QuotaGateway
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.store import GovernorStore
from tuning_governor.domain.cost import trial_cost
from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog
from tuning_governor.domain.reports import summary_report
from tuning_governor.domain.summary import summarise
from tuning_governor.errors import Disposition, GovernorError, RejectedEvent, TransientError
from tuning_governor.governance.spend import RunningTrial, running_trials
from tuning_governor.guard import govern, record_trial, trial_objective
from tuning_governor.models.events import TrainingJobStateChange, TuningJobStateChange
from tuning_governor.models.records import JobSummary, TrialRecord
from tuning_governor.models.sagemaker import (
    TRAINING_RUNNING,
    TRAINING_TERMINAL,
    TUNING_TERMINAL,
    TrainingJob,
    TuningJob,
)
from tuning_governor.observability import logger, metrics, tracer
from tuning_governor.policy import Policy, PolicySource, policy_source
from tuning_governor.price_catalogs import StoredPrices
from tuning_governor.reporting import deliver
from tuning_governor.settings import Settings, get_settings

Outcome = dict[str, Any]
OBJECTIVE_HYPERPARAMETER = "_tuning_objective_metric"


def _utcnow() -> datetime:
    return datetime.now(tz=UTC)


def _default_policy() -> Policy:
    return Policy()


@dataclass
class Services:
    """Everything a handler needs, injected: tests pass moto-backed or fake adapters."""

    settings: Settings
    sagemaker: SageMakerGateway
    store: GovernorStore
    notifiers: list[Notifier] = field(default_factory=list)
    catalog: PriceCatalog = field(default_factory=bundled_catalog)
    clock: Callable[[], datetime] = _utcnow
    policy: Callable[[], Policy] = _default_policy
    """The governance policy in force (cached by its loader; called once per event)."""
    quotas: QuotaGateway | None = None
    stored_prices: StoredPrices | None = None
    """The refreshed catalogs in DynamoDB (None: trials are priced from ``catalog`` and the policy only)."""
    checks: CheckScheduler | None = None
    """Where one-time budget checks are scheduled (None: budgets are judged on events and sweeps only)."""

    def price_catalog(self, policy: Policy) -> PriceCatalog:
        """The prices in force, first found wins: the refreshed catalog in DynamoDB, then ``catalog`` (the
        bundled one), then the policy's per-region and all-region ``prices``; see domain.pricing."""
        catalog = self.catalog
        stored = self.stored_prices.catalog() if self.stored_prices is not None else None
        if stored is not None:
            catalog = stored.over(catalog)
        return catalog.with_policy_prices(policy.price_overrides(), policy.regional_prices())


def policy_loader(source: PolicySource) -> Callable[[], Policy]:
    """The policy in force for each event; a rejected policy update is counted once, never fatal."""

    def current() -> Policy:
        loaded = source.load()
        if loaded.error is not None:
            metrics.add_metric(name="PolicyErrors", unit=MetricUnit.Count, value=1)
        return loaded.policy

    return current


def slack_from_secret(secret_arn: str, secrets_client: Any, *, max_age: int = 300) -> SlackNotifier:
    """A Slack notifier whose webhook URL is read (and cached) through Powertools Parameters."""
    provider = SecretsProvider(boto3_client=secrets_client)

    def webhook_url() -> str:
        return webhook_url_from_secret(str(provider.get(secret_arn, max_age=max_age)))

    return SlackNotifier(webhook_url)


@cache
def default_services() -> Services:
    """Adapters for Lambda, built on first use and reused while the execution environment lives."""
    settings = get_settings()
    # Standard retry mode backs off on throttling before an error reaches the governor.
    retrying = Config(retries={"mode": "standard", "max_attempts": 5})
    notifiers: list[Notifier] = []
    if settings.topic_arn:
        notifiers.append(SnsNotifier(boto3.client("sns", config=retrying), settings.topic_arn))
    if settings.slack_secret_arn:
        notifiers.append(
            slack_from_secret(
                settings.slack_secret_arn,
                boto3.client("secretsmanager", config=retrying),
                max_age=settings.secret_max_age_seconds,
            )
        )
    ssm = SSMProvider(boto3_client=boto3.client("ssm", config=retrying)) if settings.policy_parameter else None
    source = policy_source(
        parameter=settings.policy_parameter,
        file=settings.policy_file,
        ssm=ssm,
        max_age_seconds=settings.policy_max_age_seconds,
    )
    store = GovernorStore(boto3.client("dynamodb", config=retrying), settings.table_name)
    return Services(
        settings=settings,
        sagemaker=SageMakerGateway(boto3.client("sagemaker", config=retrying)),
        store=store,
        stored_prices=StoredPrices(store, clock=_utcnow, ttl=timedelta(seconds=settings.price_cache_seconds)),
        notifiers=notifiers,
        policy=policy_loader(source),
        quotas=QuotaGateway(
            boto3.client("service-quotas", config=retrying),
            clock=_utcnow,
            ttl=timedelta(seconds=settings.quota_cache_seconds),
        ),
        checks=SchedulerChecks(
            lambda: boto3.client("scheduler", config=retrying),
            group=settings.budget_check_group,
            target_arn=settings.budget_check_target_arn,
            role_arn=settings.budget_check_role_arn,
        )
        if settings.budget_check_target_arn and settings.budget_check_role_arn
        else None,
    )


# -- shared steps ------------------------------------------------------------------------------------
def parse_event[M: BaseModel](event: Any, model: type[M]) -> M:
    """Parse an EventBridge event or raise RejectedEvent with a readable reason."""
    if not isinstance(event, dict):
        raise RejectedEvent(f"event is a {type(event).__name__}, not a JSON object")
    try:
        return parse(event=event, model=model)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise RejectedEvent(problems) from None
    except Exception as exc:  # Powertools wraps some failures in its own types
        raise RejectedEvent(str(exc)[:500]) from None


def handle_errors(kind: str, event: Any, run: Callable[[], Outcome]) -> Outcome:
    """Run one event's processing; drop what retrying cannot fix, re-raise what it can."""
    try:
        return run()
    except GovernorError as exc:
        event_id = event.get("id") if isinstance(event, dict) else None
        if exc.disposition is Disposition.DROP:
            outcome = "rejected" if isinstance(exc, RejectedEvent) else "dropped"
            metrics.add_metric(
                name="RejectedEvents" if outcome == "rejected" else "DroppedEvents",
                unit=MetricUnit.Count,
                value=1,
            )
            logger.warning(
                f"{kind} event {outcome}",
                extra={"event_id": event_id, "reason": str(exc), "error": type(exc).__name__},
            )
            return {"outcome": outcome, "reason": str(exc)}
        metrics.add_metric(name="RetriedEvents", unit=MetricUnit.Count, value=1)
        logger.error(f"{kind} event will be retried", extra={"event_id": event_id, "error": type(exc).__name__})
        raise


# -- training jobs -----------------------------------------------------------------------------------
def build_trial_record(
    job: TrainingJob,
    *,
    job_key: str,
    region: str,
    objective_name: str | None,
    catalog: PriceCatalog,
    event_id: str,
    event_time: datetime,
) -> TrialRecord:
    cost = trial_cost(job, region, catalog)
    name = job.hyper_parameters.get(OBJECTIVE_HYPERPARAMETER, "").strip('"') or objective_name
    return TrialRecord(
        job_key=job_key,
        training_job_name=job.name,
        status=job.status,
        secondary_status=job.secondary_status,
        failure_reason=job.failure_reason,
        region=region,
        instances=cost.instances,
        instance_count=cost.instance_count,
        spot=cost.spot,
        training_seconds=cost.training_seconds,
        billable_seconds=cost.billable_seconds,
        billable_instance_seconds=cost.billable_instance_seconds,
        warm_pool_seconds=cost.warm_pool_seconds,
        warm_pool_instance_seconds=cost.warm_pool_instance_seconds,
        hourly_usd=cost.hourly_usd,
        cost_usd=cost.cost_usd,
        warm_pool_cost_usd=cost.warm_pool_cost_usd,
        spot_savings_usd=cost.spot_savings_usd,
        unpriced_types=list(cost.unpriced_types),
        approximate_price=cost.approximate_price,
        approximate_types=list(cost.approximate_types),
        objective_name=name,
        objective_value=job.metric(name) if name else None,
        hyperparameters=dict(job.hyper_parameters),
        start_time=job.training_start_time,
        end_time=job.training_end_time,
        event_id=event_id,
        event_time=event_time,
    )


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
    """Record a trial once, at its terminal status: one DescribeTrainingJob, one transaction."""

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
        record = build_trial_record(
            described,
            job_key=job_key,
            region=parsed.region,
            objective_name=objective.metric if objective else (meta or {}).get("objective_name"),
            catalog=services.price_catalog(policy),
            event_id=parsed.id,
            event_time=parsed.time,
        )
        finalised = bool(meta and meta.get("status") in TUNING_TERMINAL)
        if not record_trial(record, described, meta, team=(meta or {}).get("team") or team, services=services):
            # Seen before; but a warm pool that ended since bills retention the record lacks.
            if not services.store.update_trial_warm_pool(record):
                metrics.add_metric(name="DuplicateEvents", unit=MetricUnit.Count, value=1)
                return {"outcome": "duplicate", "job": job_key, "trial": detail.name}
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
            # refresh the summary so it counts this trial too. The report already went out once.
            refinalise(job_key, meta, region=parsed.region, services=services)
            return {
                "outcome": "recorded",
                "job": job_key,
                "trial": detail.name,
                "status": record.status,
                "refinalised": True,
            }
        decisions = govern("trial", job_key, parsed.time, services)
        return {
            "outcome": "recorded",
            "job": job_key,
            "trial": detail.name,
            "status": record.status,
            "decisions": decisions,
        }

    return handle_errors("training", event, run)


# -- tuning jobs -------------------------------------------------------------------------------------
def finalise(job_name: str, *, region: str, event_tags: dict[str, str], services: Services) -> JobSummary:
    """Summarise a finished job with 1 Describe + ceil(trials / 100) List calls, store it, report it."""
    described = services.sagemaker.describe_tuning_job(job_name)
    if described.status not in TUNING_TERMINAL:
        raise TransientError(f"DescribeHyperParameterTuningJob still says {described.status}")
    meta = services.store.get_job(described.key) or {}
    tags = event_tags or dict(meta.get("tags") or {})
    job = described.model_copy(update={"tags": tags})
    trials = services.sagemaker.list_trials(job.name)
    records = services.store.trial_records(job.key)
    stop_requested = meta.get("stop_requested_at")
    stopping = meta.get("stopping_at")
    summary = summarise(
        job,
        trials,
        records,
        region=region,
        team_tag=services.policy().team_tag,
        owner_tag=services.settings.owner_tag,
        now=services.clock(),
        stop_requested_at=datetime.fromisoformat(stop_requested) if stop_requested else None,
        stopping_at=datetime.fromisoformat(stopping) if stopping else None,
    )
    services.store.write_summary(summary)
    leftover = [trial.trial for trial in running_trials(meta)]
    if leftover:
        # Trials whose terminal event never came: the job has ended, so they accrue no more.
        team = meta.get("team") or services.policy().team_of(tags)
        services.store.forget_running(job.key, leftover, team=team)
    return summary


def refinalise(job_key: str, meta: dict[str, Any] | None, *, region: str, services: Services) -> JobSummary:
    """Recompute a finalised job's summary after late trial data; its report is not sent again."""
    meta = meta or {}
    return finalise(
        str(meta.get("job_name") or job_key), region=region, event_tags=dict(meta.get("tags") or {}), services=services
    )


def finalise_and_report(
    job_name: str, *, region: str, tags: dict[str, str], services: Services
) -> tuple[JobSummary, dict[str, str]]:
    """Finalise, then report the summary once per channel (the tuning handler and the sweep share this)."""
    summary = finalise(job_name, region=region, event_tags=tags, services=services)
    metrics.add_metric(name="JobsFinalised", unit=MetricUnit.Count, value=1)
    return summary, deliver(summary_report(summary), services.store, services.notifiers, services.clock)


def complete_arrival_facts(job: TuningJob, services: Services) -> TuningJob:
    """The job with what arrival is judged on, whatever the event carried.

    AWS's documented tuning-job event has no HyperParameterTuningJobConfig (MaxParallel) and may have
    no Tags: then one DescribeHyperParameterTuningJob (for the configuration and definitions) and one
    ListTags (for the tags) complete it. The event's own status and times are kept, so ordering
    against other events still goes by the event.
    """
    has_tags = "tags" in job.model_fields_set
    if job.lacks_arrival_facts() or (not has_tags and not job.arn):
        described = services.sagemaker.describe_tuning_job(job.name)
        metrics.add_metric(name="ArrivalDescribes", unit=MetricUnit.Count, value=1)
        job = job.model_copy(
            update={
                "config": described.config,
                "training_job_definition": described.training_job_definition,
                "training_job_definitions": described.training_job_definitions,
                "arn": job.arn or described.arn,
                "creation_time": job.creation_time or described.creation_time,
            }
        )
    if not has_tags and job.arn:
        job = job.model_copy(update={"tags": services.sagemaker.list_tags(job.arn)})
    return job


@tracer.capture_method
def process_tuning_event(event: Any, services: Services) -> Outcome:
    """InProgress/Stopping: record the job and its demand. Completed/Stopped/Failed: finalise and report."""

    def run() -> Outcome:
        parsed = parse_event(event, TuningJobStateChange)
        job = parsed.detail
        logger.append_keys(tuning_job=job.name)
        if job.status in TUNING_TERMINAL:
            summary, channels = finalise_and_report(job.name, region=parsed.region, tags=job.tags, services=services)
            # The job holds no instances any more: its reservation goes back to the capacity ledger.
            services.store.release_reservation(job.key)
            return {"outcome": "finalised", "job": job.key, "status": summary.status, "reports": channels}
        if job.status in {"Deleting", "DeleteFailed"}:
            return {"outcome": "ignored", "reason": f"status {job.status}"}
        job = complete_arrival_facts(job, services)
        fresh = services.store.upsert_job(
            job,
            region=parsed.region,
            team=services.policy().team_of(job.tags),
            owner=job.tags.get(services.settings.owner_tag),
            event_time=parsed.time,
        )
        if not fresh:
            metrics.add_metric(name="StaleEvents", unit=MetricUnit.Count, value=1)
            return {"outcome": "stale", "job": job.key, "status": job.status}
        decisions: list[dict[str, Any]] = []
        if job.status == "InProgress":
            # Judged through the capacity ledger: a job already reserved, or whose decision is already
            # claimed, is not judged again; a retry after a failure finishes what was started.
            decisions = govern("arrival", job.key, parsed.time, services)
        return {
            "outcome": "recorded",
            "job": job.key,
            "status": job.status,
            "demand": job.demand(),
            "decisions": decisions,
        }

    return handle_errors("tuning", event, run)
