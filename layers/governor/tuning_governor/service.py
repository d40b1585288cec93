"""Application services: what a handler does with one event, given its adapters.

Handlers call ``process_training_event`` / ``process_tuning_event`` with an injected ``Services``
(tests pass moto-backed or fake adapters; Lambda gets ``default_services()``). Every outcome is a
small dict the handler returns; errors whose disposition is RETRY propagate so EventBridge retries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any, cast

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider
from botocore.config import Config
from pydantic import BaseModel, ValidationError

from tuning_governor.adapters.checks import CheckScheduler, SchedulerChecks
from tuning_governor.adapters.clients import deferred
from tuning_governor.adapters.notifiers import Notifier, SlackNotifier, SnsNotifier, webhook_from_secret
from tuning_governor.adapters.quotas import QuotaGateway
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.store import GovernorStore
from tuning_governor.adapters.table_items import job_partition
from tuning_governor.adapters.team_channels import TeamNotifiers
from tuning_governor.breakdowns import team_spent
from tuning_governor.domain.cost import trial_cost
from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog
from tuning_governor.domain.reports import Report, corrected_report, decision_report, summary_report
from tuning_governor.domain.summary import summarise
from tuning_governor.errors import Disposition, GovernorError, RejectedEvent, TransientError
from tuning_governor.governance.rules import registry
from tuning_governor.governance.spend import RunningTrial, running_trials
from tuning_governor.governance.stagnation import (
    DefinitionObjective,
    StagnationState,
    objectives_from_item,
    resolve_objective,
)
from tuning_governor.guard import govern, job_facts, record_trial, resume_job, trial_objective, with_stagnation_spend
from tuning_governor.models.events import TrainingJobStateChange, TuningJobStateChange
from tuning_governor.models.records import JobSummary, TrialRecord
from tuning_governor.models.sagemaker import TRAINING_RUNNING, TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TrialSummary, TuningJob
from tuning_governor.observability import logger, metrics, tracer
from tuning_governor.policy import Policy, PolicySource, policy_source
from tuning_governor.ports import SageMaker, Store
from tuning_governor.price_catalogs import StoredPrices, with_pricing_facts
from tuning_governor.reporting import all_delivered, deliver
from tuning_governor.routing import ChannelGrants, routing_warnings, team_channels
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
    sagemaker: SageMaker
    store: Store
    """The governor's table (the port; DynamoDB in Lambda, in memory offline)."""
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
    team_notifiers: TeamNotifiers | None = None
    """The teams' own channels (None: every report goes to ``notifiers`` only)."""
    grants: ChannelGrants = field(default_factory=ChannelGrants)
    """Which team secrets and topics the stack may use (see ``tuning_governor.routing``)."""

    def notifiers_for(self, report: Report, policy: Policy) -> list[Notifier]:
        """Every channel ``report`` goes to: the default ones (always), then its team's own, if the
        policy names them and the stack grants them (``routing.team_channels``)."""
        if self.team_notifiers is None:
            return list(self.notifiers)
        team = [self.team_notifiers.notifier(channel) for channel in team_channels(report, policy, self.grants)]
        return [*self.notifiers, *team]

    def price_catalog(self, policy: Policy) -> PriceCatalog:
        """The prices in force, first found wins: the refreshed catalog in DynamoDB, then ``catalog`` (the
        bundled one), then the policy's per-region and all-region ``prices``; see domain.pricing."""
        catalog = self.catalog
        stored = self.stored_prices.catalog() if self.stored_prices is not None else None
        if stored is not None:
            catalog = stored.over(catalog)
        return catalog.with_policy_prices(policy.price_overrides(), policy.regional_prices())


def policy_loader(source: PolicySource, grants: ChannelGrants | None = None) -> Callable[[], Policy]:
    """The policy in force for each event; a rejected policy update is counted once, never fatal.

    With ``grants``, each new policy text's team channels the stack does not grant are logged once as a
    warning (``routing_warnings``): those channels are not used, the team's reports go to the default ones.
    """
    warned: set[str] = set()

    def current() -> Policy:
        loaded = source.load()
        if loaded.error is not None:
            metrics.add_metric(name="PolicyErrors", unit=MetricUnit.Count, value=1)
        if grants is not None and loaded.digest not in warned:
            warned.add(loaded.digest)
            problems = routing_warnings(loaded.policy, grants)
            if problems:
                logger.warning(
                    "policy names team channels the stack does not grant",
                    extra={
                        "policy_source": loaded.source,
                        "policy_digest": loaded.digest[:12],
                        "warnings": [f"{path}: {message}" for path, message in problems],
                    },
                )
        return loaded.policy

    return current


def channel_grants(settings: Settings) -> ChannelGrants:
    """The team channels the deployment grants (its prefixes), in its own account and region."""
    return ChannelGrants(
        slack_secret_prefix=settings.slack_secret_prefix,
        topic_prefix=settings.team_topic_prefix,
        region=settings.region,
        account=settings.account_id,
    )


def slack_from_secret(secret_arn: str, secrets_client: Any, *, max_age: int = 300) -> SlackNotifier:
    """A Slack notifier whose webhook URL is read (and cached) through Powertools Parameters."""
    provider = SecretsProvider(boto3_client=secrets_client)
    return SlackNotifier(webhook_from_secret(provider, secret_arn, max_age=max_age))


@cache
def default_services() -> Services:
    """Adapters for Lambda, built on first use and reused while the execution environment lives."""
    settings = get_settings()
    # Standard retry mode backs off on throttling before an error reaches the governor.
    retrying = Config(retries={"mode": "standard", "max_attempts": 5})
    notifiers: list[Notifier] = []
    sns = deferred(lambda: boto3.client("sns", config=retrying)) if settings.topic_arn else None
    if sns is not None:
        notifiers.append(SnsNotifier(sns, settings.topic_arn))
    if settings.slack_secret_arn:
        notifiers.append(
            slack_from_secret(
                settings.slack_secret_arn,
                deferred(lambda: boto3.client("secretsmanager", config=retrying)),
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
    grants = channel_grants(settings)
    team_notifiers = None
    if grants.slack_secret_prefix or grants.topic_prefix:
        # Clients made when a team channel is first used (the SNS client shared with the default topic).
        team_notifiers = TeamNotifiers(
            sns_client=lambda: sns if sns is not None else boto3.client("sns", config=retrying),
            secrets_client=lambda: boto3.client("secretsmanager", config=retrying),
            secret_max_age=settings.secret_max_age_seconds,
        )
    store = GovernorStore(
        boto3.client("dynamodb", config=retrying),
        settings.table_name,
        trial_retention_days=settings.trial_retention_days,
    )
    return Services(
        settings=settings,
        sagemaker=SageMakerGateway(boto3.client("sagemaker", config=retrying)),
        store=store,
        stored_prices=StoredPrices(store, clock=_utcnow, ttl=timedelta(seconds=settings.price_cache_seconds)),
        notifiers=notifiers,
        team_notifiers=team_notifiers,
        grants=grants,
        policy=policy_loader(source, grants),
        quotas=QuotaGateway(
            deferred(lambda: boto3.client("service-quotas", config=retrying)),
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
#: An event its caller has already parsed with :func:`parse_event` (the replay, which reads each line
#: before delivering it): (the very event object, the model, the result). See :func:`parsed_already`.
_PARSED: ContextVar[tuple[object, type[BaseModel], BaseModel] | None] = ContextVar("parsed_event", default=None)


@contextmanager
def parsed_already(event: dict[str, Any], model: type[BaseModel], parsed: BaseModel) -> Iterator[None]:
    """Inside, :func:`parse_event` of this very ``event`` object with this ``model`` returns ``parsed``
    (which ``parse_event(event, model)`` gave) instead of validating it a second time. Nothing else
    changes; in Lambda nothing sets it."""
    token = _PARSED.set((event, model, parsed))
    try:
        yield
    finally:
        _PARSED.reset(token)


def parse_event[M: BaseModel](event: Any, model: type[M]) -> M:
    """Parse an EventBridge event or raise RejectedEvent with a readable reason."""
    if not isinstance(event, dict):
        raise RejectedEvent(f"event is a {type(event).__name__}, not a JSON object")
    known = _PARSED.get()
    if known is not None and known[0] is event and known[1] is model:
        return cast("M", known[2])
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise RejectedEvent(problems) from None
    except Exception as exc:  # a validator's own failure (a model bug, never an input's): still a reason
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


# -- tuning jobs -------------------------------------------------------------------------------------
#: How long after its tuning job ended a summary report waits for trials SageMaker lists as finished
#: but the governor could not record yet (judged by the sweep); then it goes out naming them.
REPORT_GRACE = timedelta(minutes=30)
#: A summary whose cost moves by more than this after its report went out is reported again, once.
CORRECTION_THRESHOLD = Decimal("0.01")
#: How long after its job ended the sweep keeps trying to record a summary's missing trials.
GAPS_GIVE_UP = timedelta(days=1)
#: The trial rules judged on a job that had already ended when a trial of it was recorded: those that
#: depend on the trials (runtime is the running job's clock; a team's month is judged on its next trial).
LATE_TRIAL_RULES = ("budget", "stagnation", "failed-trials", "pricing")
LATE_DETAIL = "the job had ended when this trial was recorded: no stop call"


def record_missing_trials(
    job: TuningJob,
    trials: list[TrialSummary],
    records: list[TrialRecord],
    meta: dict[str, Any] | None,
    *,
    region: str,
    services: Services,
) -> list[str]:
    """Record the trials SageMaker lists as finished that have no trial record (their event was lost or
    is still on its way): one DescribeTrainingJob each, through the same conditional write as a trial
    event, so a late real event of the same trial is a duplicate. In order of their end, as events would
    have come. ``meta`` is the job item as read (None: none yet); each trial recorded carries it forward
    as written, so no trial reads it again. Returns the trials recorded; a trial Describe does not show
    finished yet is left out."""
    recorded = {r.training_job_name.lower() for r in records}
    latest = datetime.max.replace(tzinfo=UTC)
    missing = sorted(
        (
            t
            for t in trials
            if t.training_job_status in TRAINING_TERMINAL and t.training_job_name.lower() not in recorded
        ),
        key=lambda t: (t.training_end_time or latest, t.training_job_name),
    )
    if not missing:
        return []
    policy = services.policy()
    catalog = services.price_catalog(policy)
    added: list[str] = []
    for trial in missing:
        described = services.sagemaker.describe_training_job(trial.training_job_name)
        if described.status not in TRAINING_TERMINAL or described.tuning_job_key != job.key:
            continue
        team = (meta or {}).get("team") or policy.team_of(job.tags)
        services.store.set_warm_pool(described, team=team)
        objective = trial_objective(meta, described)
        record = build_trial_record(
            described,
            job_key=job.key,
            region=region,
            objective_name=objective.metric if objective else (meta or {}).get("objective_name"),
            catalog=catalog,
            event_id=f"finaliser:{described.name}",
            event_time=described.training_end_time or services.clock(),
        )
        written = record_trial(record, described, meta, team=team, services=services, catalog=catalog)
        if written is not None:
            meta = written
            added.append(described.name)
            metrics.add_metric(name="TrialsRecoveredAtFinalise", unit=MetricUnit.Count, value=1)
    return added


def replayed_stagnation(meta: dict[str, Any], records: list[TrialRecord]) -> Iterator[tuple[StagnationState, datetime]]:
    """The job's stagnation state after each completed trial with an objective value, in order of the
    trials' end (the order their events come in when none is lost), with that trial's end time."""
    objectives = objectives_from_item(meta.get("objectives"))
    if not objectives and meta.get("objective_name") and meta.get("objective_type"):
        objectives = [DefinitionObjective(metric=str(meta["objective_name"]), type=str(meta["objective_type"]))]
    state = StagnationState()
    completed = [r for r in records if r.status == "Completed" and r.objective_value is not None]
    for record in sorted(completed, key=lambda r: (r.end_time or r.event_time, r.training_job_name)):
        objective = resolve_objective(
            objectives,
            hyperparameters=record.hyperparameters,
            reported_metrics={record.objective_name} if record.objective_name else (),
        )
        if objective is None or record.objective_value is None:
            continue
        ended = record.end_time or record.event_time
        state = state.advance(record.objective_value, objective, ended)
        yield state, ended


def judge_ended(job_key: str, at: datetime, services: Services) -> list[dict[str, Any]]:
    """Run the trial rules on a job that had ended when a trial of it was recorded, as of ``at`` (its
    end). A decision is recorded once with action ``already-ended`` (no stop call) and reported once;
    one already made while the job ran is not made again. So decisions do not depend on delivery order."""
    meta = services.store.get_job(job_key)
    if meta is None:
        return []
    policy = services.policy()
    catalog = services.price_catalog(policy)
    facts = with_pricing_facts(
        with_stagnation_spend(job_facts(meta, now=at, policy=policy, catalog=catalog), services), meta, catalog
    )
    owner = meta.get("owner") or (meta.get("tags") or {}).get(services.settings.owner_tag)
    outcomes: list[dict[str, Any]] = []
    for name in LATE_TRIAL_RULES:
        rule = registry.get(name)
        if "trial" not in rule.triggers:
            continue
        if name == "stagnation":
            # The stored state was advanced in the order trials were recorded; judge it as the trials'
            # events would have come (by end time), at each trial, as the live path would have.
            decision = None
            for state, ended in replayed_stagnation(meta, services.store.trial_records(job_key)):
                decision = rule.evaluate(policy, facts.model_copy(update={"stagnation": state, "now": ended}), None)
                if decision is not None:
                    break
        else:
            decision = rule.evaluate(policy, facts, None)
        if decision is None or not services.store.claim_decision(decision, policy.mode, services.clock()):
            continue
        # Reported before the claim is finished: a failed delivery leaves it pending, and the retry
        # (or the next finalisation) sends what is missing.
        report = decision_report(
            rule=decision.rule,
            verdict=decision.verdict,
            job_key=decision.job_key,
            job_name=decision.job_name,
            team=decision.team,
            message=decision.message,
            numbers=decision.numbers,
            at=decision.at.isoformat(),
            mode=policy.mode,
            action="already-ended",
            detail=LATE_DETAIL,
            owner=owner,
            owner_member=policy.slack_member(owner),
        )
        deliver(report, services.store, services.notifiers_for(report, policy), services.clock)
        services.store.finish_decision(decision, "already-ended", LATE_DETAIL)
        metrics.add_metric(name="LateDecisions", unit=MetricUnit.Count, value=1)
        outcomes.append(
            {"rule": decision.rule, "verdict": decision.verdict, "mode": policy.mode, "action": "already-ended"}
        )
    return outcomes


@dataclass(frozen=True)
class Finalised:
    """A finalisation: the summary stored, the job as described, the trials it recorded itself, and
    the job item and decision rows as read (after any trial it recorded and decision it made)."""

    summary: JobSummary
    job: TuningJob
    recovered: list[str]
    late_decisions: list[dict[str, Any]]
    meta: dict[str, Any]
    decisions: list[dict[str, Any]]


def read_job(job_key: str, services: Services) -> tuple[dict[str, Any], list[TrialRecord], list[dict[str, Any]]]:
    """The job item, its trial records and its decision rows, in one consistent read of its partition."""
    meta, trials, decisions = job_partition(services.store.items(job_key))
    return meta or {}, [TrialRecord.model_validate(item) for item in trials], decisions


def finalise_job(
    job_name: str, *, region: str, event_tags: dict[str, str], services: Services, judge: bool = False
) -> Finalised:
    """Summarise a finished job and store it: 1 Describe + ceil(trials / 100) List calls, plus one
    DescribeTrainingJob per trial listed as finished but not recorded (recorded now, see
    :func:`record_missing_trials`). Trials recorded here, or ``judge``, or a late decision left pending
    make the trial rules judge the ended job (:func:`judge_ended`). Idempotent."""
    described = services.sagemaker.describe_tuning_job(job_name)
    if described.status not in TUNING_TERMINAL:
        raise TransientError(f"DescribeHyperParameterTuningJob still says {described.status}")
    meta, records, decisions = read_job(described.key, services)
    tags = event_tags or dict(meta.get("tags") or {})
    job = described.model_copy(update={"tags": tags})
    trials = services.sagemaker.list_trials(job.name)
    recovered = record_missing_trials(job, trials, records, meta or None, region=region, services=services)
    if recovered:
        meta, records, decisions = read_job(job.key, services)
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
    late: list[dict[str, Any]] = []
    pending = recovered or judge or any(d.get("state") == "pending" for d in decisions)
    if pending:
        late = judge_ended(job.key, job.end_time or services.clock(), services)
        decisions = services.store.decisions(job.key)
    return Finalised(summary=summary, job=job, recovered=recovered, late_decisions=late, meta=meta, decisions=decisions)


def finalise(job_name: str, *, region: str, event_tags: dict[str, str], services: Services) -> JobSummary:
    """Summarise a finished job and store it (see :func:`finalise_job`); nothing is reported."""
    return finalise_job(job_name, region=region, event_tags=event_tags, services=services).summary


def decision_lines(decisions: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """A job's finished decisions as a summary report lists them: (rule, verdict, action)."""
    return sorted(
        (str(d.get("rule")), str(d.get("verdict")), str(d.get("action"))) for d in decisions if d.get("state") == "done"
    )


def report_summary(done: Finalised, services: Services) -> dict[str, str]:
    """Report a finalised job's summary, once per channel, when it is complete; or, when trials listed
    as finished are still unrecorded, once :data:`REPORT_GRACE` after the job ended (the sweep judges
    that), naming them. A summary whose cost has moved by more than :data:`CORRECTION_THRESHOLD` since
    its report went out gets one ``summary-corrected`` report (once per channel).

    Returns the delivery result per channel (``waiting-for-trials`` while the report is held back).
    A job keeps a ``GAPS`` item, for the sweep, while trials are unrecorded or its first report is not
    yet out on every channel (a channel still ``in-flight``: another attempt's claim, taken again
    once stale); the item is written before the report is sent, so an invocation that fails for good
    in between still leaves the sweep something to finish. Both give up :data:`GAPS_GIVE_UP` after the
    job ended.
    """
    summary, store, now = done.summary, services.store, services.clock()
    ended = done.job.end_time or now
    gaps = summary.unaccounted_trials
    # As read by the finalisation: only set_summary_reported writes these, and only below.
    meta = done.meta
    reported_at = meta.get("summary_reported_at")
    followed = (bool(gaps) or reported_at is None) and now - ended < GAPS_GIVE_UP
    if followed:
        store.mark_gaps(summary.job_key, job_name=summary.job_name, region=summary.region, ended_at=ended, missing=gaps)
    else:
        store.clear_gaps(summary.job_key)
    if reported_at is None and gaps and now - ended < REPORT_GRACE:
        metrics.add_metric(name="SummariesWaitingForTrials", unit=MetricUnit.Count, value=1)
        return {notifier.channel: "waiting-for-trials" for notifier in services.notifiers}
    decisions = decision_lines(done.decisions)
    policy = services.policy()
    member = policy.slack_member(summary.owner)
    report = summary_report(summary, decisions, owner_member=member)
    channels = deliver(report, store, services.notifiers_for(report, policy), services.clock)
    if reported_at is None:
        if all_delivered(channels):
            store.set_summary_reported(summary.job_key, summary.cost.priced_cost_usd, now)
            team_spent(summary.team, summary.cost.priced_cost_usd)  # once per job: the dashboard's spend by team
            if followed and not gaps:
                store.clear_gaps(summary.job_key)  # written above for this report only
        return channels
    reported = Decimal(str(meta.get("summary_reported_usd") or 0))
    if abs(summary.cost.priced_cost_usd - reported) > CORRECTION_THRESHOLD:
        correction = corrected_report(summary, reported, decisions, owner_member=member)
        corrected = deliver(correction, store, services.notifiers_for(correction, policy), services.clock)
        channels |= {f"{channel}-corrected": result for channel, result in corrected.items()}
        metrics.add_metric(name="SummariesCorrected", unit=MetricUnit.Count, value=1)
    return channels


def refinalise(
    job_key: str, meta: dict[str, Any] | None, *, region: str, services: Services, judge: bool = False
) -> JobSummary:
    """Recompute a finalised job's summary after late trial data (``judge``: a trial was recorded, so
    the trial rules judge the ended job), then report it if it was waiting for this trial, or correct
    its report once if the cost moved."""
    meta = meta or {}
    done = finalise_job(
        str(meta.get("job_name") or job_key),
        region=region,
        event_tags=dict(meta.get("tags") or {}),
        services=services,
        judge=judge,
    )
    report_summary(done, services)
    return done.summary


def finalise_and_report(
    job_name: str, *, region: str, tags: dict[str, str], services: Services
) -> tuple[JobSummary, dict[str, str]]:
    """Finalise, then report the summary once per channel (the tuning handler and the sweep share this);
    see :func:`report_summary` for when it is held back or corrected."""
    done = finalise_job(job_name, region=region, event_tags=tags, services=services)
    metrics.add_metric(name="JobsFinalised", unit=MetricUnit.Count, value=1)
    return done.summary, report_summary(done, services)


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
