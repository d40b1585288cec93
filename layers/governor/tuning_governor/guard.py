"""Governance in action: gather facts, ask the rules, then stop, record and report — once.

A decision is claimed in DynamoDB before it is acted on, so a duplicated event never stops or
reports twice, and a retried event finishes what a failed attempt started. Monitor mode and the
exemption tag change only the action: the decision is still recorded and reported.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.adapters.table_items import job_after_trial
from tuning_governor.breakdowns import rule_decided, rule_stopped
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.domain.reports import Report, decision_report
from tuning_governor.errors import GovernorError, StaleState, TransientError
from tuning_governor.governance import grace, spend
from tuning_governor.governance.capacity import Ledger, Quota, Reservation, capacity_facts, first_fit
from tuning_governor.governance.facts import AdmissionPlan, CapacityFacts, JobFacts, TeamMonthFacts, Trigger
from tuning_governor.governance.rules import BudgetRule, Decision, TeamBudgetRule, registry
from tuning_governor.governance.stagnation import (
    DefinitionObjective,
    ObjectiveSpec,
    StagnationState,
    objectives_from_item,
    resolve_objective,
)
from tuning_governor.models.records import TrialRecord
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy
from tuning_governor.price_catalogs import with_pricing_facts
from tuning_governor.reporting import all_delivered, deliver

if TYPE_CHECKING:
    from tuning_governor.service import Services


def iso_time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds")


def _dt(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def job_facts(
    meta: dict[str, Any],
    *,
    now: datetime,
    policy: Policy,
    catalog: PriceCatalog | None = None,
) -> JobFacts:
    """The job as its META item records it at ``now``. With ``catalog``, the running trials' accrued
    cost is priced too (``spent_usd`` = finished + accrued); without, only finished trials count."""
    tags = {str(k): str(v) for k, v in (meta.get("tags") or {}).items()}
    job_key = str(meta["pk"]).removeprefix("JOB#")
    spent = meta.get("cost_usd")
    unpriced = int(meta.get("unpriced_trials") or 0)
    # Any unpriced trial makes "spent" unknown: a budget is never judged on a partial sum.
    finished = None if unpriced else Decimal(str(spent or 0))
    accrual = (
        spend.accrue(
            spend.running_trials(meta),
            now,
            catalog,
            default_region=meta.get("region"),
            spot_discount=spend.spot_factor(meta.get("spot_billed_usd"), meta.get("spot_on_demand_usd")),
        )
        if catalog is not None
        else spend.Accrual(usd=Decimal(0))
    )
    total = finished + accrual.usd if finished is not None and accrual.usd is not None else None
    return JobFacts(
        job_key=job_key,
        # A job first seen through a trial's event (its own event not yet delivered) is named by its key:
        # the name in the trial's TuningJobArn, in lower case as ARNs spell it.
        job_name=str(meta.get("job_name") or job_key),
        team=policy.team_of(tags),
        tags=tags,
        status=str(meta.get("status") or "Unknown"),
        created_at=_dt(meta.get("creation_time")),
        now=now,
        max_parallel=int(meta.get("max_parallel") or 1),
        max_trials=int(meta["max_trials"]) if meta.get("max_trials") is not None else None,
        demand={str(k): int(v) for k, v in (meta.get("demand") or {}).items()},
        spent_usd=total,
        spent_finished_usd=finished,
        spent_accrued_usd=accrual.usd,
        running_trials=accrual.trials,
        running_accrued_usd=accrual.per_trial,
        burn_usd_per_hour=accrual.burn_usd_per_hour,
        unpriced_running_types=accrual.unpriced_types,
        spend_approximate=accrual.approximate,
        trials_finished=int(meta.get("trials_recorded") or 0),
        trials_failed=int(meta.get("trials_failed") or 0),
        objective_type=meta.get("objective_type"),
        stagnation=StagnationState.from_item(meta.get("stagnation")),
        admission=[AdmissionPlan.model_validate(plan) for plan in meta.get("admission") or []],
    )


def _capacity(job: JobFacts, policy: Policy, services: Services, ledger: Ledger | None = None) -> CapacityFacts:
    """What others hold and the limits for every type the job's plans may use.

    Tuning jobs are counted by their reservations in the capacity ledger (read by the caller, whose
    commit is conditional on it); standalone training jobs and warm pools from their own items.
    """
    plans = job.admission_plans()
    on_demand_types = sorted({t for plan in plans for t in plan.on_demand})
    spot_types = sorted({t for plan in plans for t in plan.spot})
    gateway = services.quotas
    quotas: dict[str, Quota | None] = {t: gateway.training_quota(t) if gateway else None for t in on_demand_types}
    spot_quotas: dict[str, Quota | None] = {t: gateway.spot_training_quota(t) if gateway else None for t in spot_types}
    team_limits: dict[str, int] = {}
    if job.team:
        for itype in sorted(set(on_demand_types) | set(spot_types)):
            limit = policy.team_limit(job.team, itype)
            if limit is not None:
                team_limits[itype] = limit
    holders = services.store.holders(tuning_jobs=ledger is None)
    if ledger is not None:
        holders = ledger.holders() + holders
    return capacity_facts(
        job_key=job.job_key,
        team=job.team,
        demand=dict.fromkeys(on_demand_types, 0),
        holders=holders,
        policy_quotas=policy.quotas,
        service_quotas=quotas,
        team_limits=team_limits,
        spot_demand=spot_types,
        policy_spot_quotas=policy.spot_quotas,
        spot_service_quotas=spot_quotas,
        total_quota=gateway.total_training_quota() if gateway and on_demand_types else None,
        spot_total_quota=gateway.total_spot_training_quota() if gateway and spot_types else None,
    )


# Conflicts on the ledger mean other arrivals committed first; each retry re-reads and re-judges.
ADMISSION_ATTEMPTS = 40
RELEASE_GRACE = timedelta(minutes=5)


def admit(facts: JobFacts, policy: Policy, services: Services) -> list[dict[str, Any]]:
    """Judge a job's arrival through the capacity ledger, serialized with every other arrival.

    Read the ledger, judge the job against it (plans in priority order), and commit on the
    condition that the ledger is unchanged: a job that fits is reserved on the first plan that
    fits; one that does not is not reserved (unless it keeps running: monitor mode or exempt) and its
    breach decision is claimed in the same transaction. A conflict means another arrival or release
    committed first: read and judge again. So the outcome is that of judging the arrivals one after
    the other in ledger commit order. The commit is the durable mark of the judgement: a retried
    event finds the job reserved (nothing to do) or its decision claimed (finish acting on it).
    """
    rule = registry.get("concurrency")
    for attempt in range(ADMISSION_ATTEMPTS):
        ledger = services.store.read_ledger()
        if facts.job_key in ledger.reservations:
            return []
        claimed = services.store.get_decision(facts.job_key, rule.name, "breach")
        if claimed is not None:
            return [act(Decision.model_validate(claimed | {"job_key": facts.job_key}), facts, policy, services)]
        plans = facts.admission_plans()
        capacity = _capacity(facts, policy, services, ledger)
        decision = rule.evaluate(policy, facts, capacity)
        chosen, _ = first_fit(plans, facts.team, capacity)
        keeps_running = policy.mode != "enforce" or policy.is_exempt(facts.tags)
        reservation = None
        if chosen is not None or keeps_running:
            plan = plans[chosen if chosen is not None else 0]
            reservation = Reservation.for_plan(
                facts.job_key,
                facts.team,
                plan,
                facts.max_parallel,
                iso_time(facts.now),
                over_limit=chosen is None,
                version=ledger.version + 1,
            )
        if decision is not None:
            # The judgement's place in the commit order, for the audit trail.
            numbers = decision.numbers | {"ledger_version": ledger.version + 1}
            decision = decision.model_copy(update={"numbers": numbers})
        claim = (decision, policy.mode, services.clock()) if decision is not None else None
        outcome = services.store.commit_admission(ledger.version, facts.job_key, reservation, claim)
        if outcome == "committed":
            if decision is None:
                metrics.add_metric(name="JobsAdmitted", unit=MetricUnit.Count, value=1)
                return []
            return [act(decision, facts, policy, services)]
        if outcome == "decided":
            continue  # a retry of this event claimed it first: the next pass acts on its claim
        metrics.add_metric(name="LedgerConflicts", unit=MetricUnit.Count, value=1)
        time.sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 6)))  # noqa: S311 - jitter, not crypto
    raise TransientError(f"capacity ledger contended {ADMISSION_ATTEMPTS} times; the event will be retried")


def running_shapes(meta: dict[str, Any]) -> list[tuple[dict[str, int], bool]]:
    """The instances (and market) of each trial the job item records as running (its ``running``
    map, kept by the training-event path), for re-counting the job's reservation."""
    return [(dict(trial.instances), trial.spot) for trial in spend.running_trials(meta) if trial.instances]


def reconcile_ledger(
    services: Services,
    *,
    live: set[str],
    listed_at: datetime,
    jobs: dict[str, dict[str, Any]],
    adopt: set[str],
    attempts: int = 5,
) -> dict[str, list[str]]:
    """The sweep's pass over the capacity ledger, against what SageMaker lists as running (``live``).

    Releases reservations of jobs no longer running (their terminal event was lost); adopts jobs the
    sweep discovered running without an arrival (their reservation is their first plan, counted as
    it runs); re-counts every reservation whose job item records running trials from the types those
    trials actually use. One conditional write, retried on conflict. A reservation made less than
    ``RELEASE_GRACE`` before SageMaker was listed (``listed_at``) is kept until a later sweep.
    """
    changes: dict[str, list[str]] = {"released": [], "adopted": [], "recounted": []}
    for attempt in range(attempts):
        ledger = services.store.read_ledger()
        # SageMaker's list may lag a job that has just started: only older reservations are released.
        listed = iso_time(listed_at - RELEASE_GRACE)
        remove = sorted(k for k, r in ledger.reservations.items() if k not in live and r.created < listed)
        put: dict[str, Reservation] = {}
        for key in sorted(adopt - set(ledger.reservations)):
            meta = jobs.get(key) or services.store.get_job(key)
            if meta is None:
                continue
            facts = job_facts(meta, now=services.clock(), policy=services.policy())
            plans = [p for p in facts.admission_plans() if p.on_demand or p.spot]
            if plans:
                put[key] = Reservation.for_plan(key, facts.team, plans[0], facts.max_parallel, iso_time(facts.now))
        for key, reservation in sorted(ledger.reservations.items()):
            meta = jobs.get(key)
            if key in remove or meta is None or "running" not in meta:
                continue
            recounted = reservation.recounted(running_shapes(meta))
            if recounted.on_demand != reservation.on_demand or recounted.spot != reservation.spot:
                put[key] = recounted
        if services.store.update_reservations(ledger.version, put, remove):
            changes["released"] = remove
            changes["adopted"] = sorted(k for k in put if k not in ledger.reservations)
            changes["recounted"] = sorted(k for k in put if k in ledger.reservations)
            return changes
        time.sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311 - jitter, not crypto
    raise TransientError("capacity ledger contended during the sweep")


# -- stagnation: advanced with each completed trial, in the trial's own transaction --------------------
STALE_ATTEMPTS = 5


def trial_objective(meta: dict[str, Any] | None, trial: TrainingJob) -> ObjectiveSpec | None:
    """The objective (metric and direction) of the definition ``trial`` belongs to, from the job item."""
    meta = meta or {}
    objectives = objectives_from_item(meta.get("objectives"))
    if not objectives and meta.get("objective_name") and meta.get("objective_type"):
        # A job item written before objectives were kept per definition.
        objectives = [DefinitionObjective(metric=str(meta["objective_name"]), type=str(meta["objective_type"]))]
    return resolve_objective(
        objectives,
        definition_name=trial.training_job_definition_name,
        hyperparameters=trial.hyper_parameters,
        reported_metrics={m.metric_name for m in trial.final_metric_data_list},
    )


def _advanced(meta: dict[str, Any] | None, record: TrialRecord, trial: TrainingJob) -> StagnationState | None:
    if record.status != "Completed":
        return None
    objective = trial_objective(meta, trial)
    value = trial.metric(objective.metric) if objective is not None else None
    if objective is None or value is None:
        return None  # no objective value, or no direction to judge it by: not counted either way
    current = StagnationState.from_item((meta or {}).get("stagnation")) or StagnationState()
    return current.advance(value, objective, record.end_time or record.event_time)


def record_trial(
    record: TrialRecord,
    trial: TrainingJob,
    meta: dict[str, Any] | None,
    *,
    team: str | None,
    services: Services,
    catalog: PriceCatalog | None = None,
) -> dict[str, Any] | None:
    """Record a finished trial once and advance the job's stagnation state in the same transaction:
    the best objective, trials / time since it last improved and, at an improvement, the job's spend
    then (finished + accrued at the trial's event, priced with ``catalog``, by default the policy's).

    Returns the job item as this write left it (``meta`` with the trial applied), for judging the job
    without reading it again; None for a duplicate. Reads no trial records: the state is on the job
    item (``meta``, already read by the caller). When a concurrent trial of the same job wrote first,
    the item is read again and the trial re-applied.
    """
    for attempt in range(STALE_ATTEMPTS):
        state = _advanced(meta, record, trial)
        known_end = _dt((meta or {}).get("last_trial_end"))
        later = record.end_time is not None and (known_end is None or record.end_time > known_end)
        latest = record.end_time if later else None
        if state is not None and state.improved_at is not None and state.spent_at_improvement is None:
            policy = services.policy()
            after = job_after_trial(meta, record)
            facts = job_facts(
                after, now=record.event_time, policy=policy, catalog=catalog or services.price_catalog(policy)
            )
            state = state.model_copy(update={"spent_at_improvement": facts.spent_usd})
        try:
            return services.store.record_trial(
                record,
                job=meta,
                team=team,
                stagnation=state.to_item() if state is not None else None,
                latest_end=latest,
            )
        except StaleState:
            if attempt == STALE_ATTEMPTS - 1:
                raise
            meta = services.store.get_job(record.job_key)
    raise AssertionError("unreachable")  # pragma: no cover


def with_stagnation_spend(facts: JobFacts, services: Services) -> JobFacts:
    """Fill in the spend at the last improvement when the job's state lacks it (a state recorded
    before the trial's own transaction carried it): the first judgement after the improvement
    stores ``spent_usd`` then; a later trial that advanced the state first wins.
    """
    state = facts.stagnation
    if state is None or state.improved_at is None or state.spent_at_improvement is not None:
        return facts
    if facts.spent_usd is None:
        return facts  # unpriced: dollars since the improvement cannot be judged
    services.store.set_stagnation_spend(facts.job_key, state.trials_seen, facts.spent_usd)
    return facts.model_copy(update={"stagnation": state.model_copy(update={"spent_at_improvement": facts.spent_usd})})


def state_time(meta: dict[str, Any] | None) -> datetime | None:
    """The latest moment the job item's state reflects: the end of its latest recorded trial
    (``last_trial_end``) or the start of its latest running trial."""
    meta = meta or {}
    times = [_dt(meta.get("last_trial_end"))] + [trial.start for trial in spend.running_trials(meta)]
    known = [t for t in times if t is not None]
    return max(known, default=None)


def govern(
    trigger: Trigger, job_key: str, now: datetime, services: Services, meta: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Evaluate the rules for ``trigger`` on one job and act on what they find. ``meta``: the job item
    as the caller just wrote it (see :func:`record_trial`); without it, the item is read.

    Judged at ``now`` or at the latest moment the job's state reflects, whichever is later: an event
    handled after later ones of the same job (EventBridge does not keep order) is judged on the state
    as it is, at the time that state is true, never on later trials at an earlier time."""
    policy = services.policy()
    if meta is None:
        meta = services.store.get_job(job_key)
    if meta is None or meta.get("status") in TUNING_TERMINAL:
        return []
    now = max(now, state_time(meta) or now)
    catalog = services.price_catalog(policy)
    facts = with_stagnation_spend(job_facts(meta, now=now, policy=policy, catalog=catalog), services)
    facts = facts.model_copy(update={"team_month": team_month_facts(facts.team, now, policy, catalog, services)})
    facts = with_pricing_facts(facts, meta, catalog)
    outcomes = admit(facts, policy, services) if trigger == "arrival" else []
    check_times: list[datetime] = []
    budget_breached = False
    for rule in registry.for_trigger(trigger):
        if rule.name == "concurrency":
            continue  # judged through the capacity ledger (admit)
        decision = rule.evaluate(policy, facts, None)
        if decision is None:
            continue
        if decision.rule == TeamBudgetRule.name:
            outcomes.extend(act_on_team(decision, facts, policy, services))
            continue
        budget_breached |= decision.rule == BudgetRule.name and decision.wants_stop
        step = grace_step(decision, facts, policy, services)
        if step.decision is not None:
            outcomes.append(act(step.decision, facts, policy, services))
        if step.check_at is not None:
            check_times.append(step.check_at)
    if not budget_breached:
        check_times.extend(budget_check_time(facts, policy, services))
    schedule_check(facts, meta, min(check_times, default=None), services)
    return outcomes


def grace_step(decision: Decision, job: JobFacts, policy: Policy, services: Services) -> grace.GraceStep:
    """A breach of a rule with a grace period (``defaults.grace_minutes``): the first one becomes the
    rule's notice (acted on: recorded and reported once), one before the notice's time waits, one at
    or after it is acted on. One GetItem (the notice), only for a breach of such a rule; exempt jobs get
    no notice (their breach is recorded as exempt at once)."""
    period = policy.grace_for(decision.rule)
    if period is None or not decision.wants_stop or policy.is_exempt(job.tags):
        return grace.GraceStep(decision)
    return grace.step(decision, period, services.store.get_decision(job.job_key, decision.rule, grace.GRACE), policy)


def budget_check_time(facts: JobFacts, policy: Policy, services: Services) -> list[datetime]:
    """When the job's burn brings it to a budget breach, if within the horizon (a later crossing is
    re-estimated by the sweeps, since the burn changes as trials start and end)."""
    at = BudgetRule.check_at(policy, facts)
    if at is None or at - facts.now > timedelta(seconds=services.settings.budget_check_horizon_seconds):
        return []
    return [at]


def schedule_check(facts: JobFacts, meta: dict[str, Any], at: datetime | None, services: Services) -> None:
    """Ask for one more judgement of the job at ``at``: a projected budget crossing, or the end of a
    breach's grace period (one schedule per job: the earliest wins; that judgement asks for the next).

    Rounded up to the whole minute (a check never comes before the moment it is for), and only when
    that time differs from the one already asked for, so an unchanged estimate costs no call. A failure
    is logged and counted: the sweep still judges the job.
    """
    if services.checks is None or at is None:
        return
    at = _minute_ceiling(max(at, facts.now + timedelta(seconds=1)))
    if meta.get("budget_check_at") == iso_time(at):
        return
    try:
        services.checks.schedule(facts.job_key, facts.job_name, at)
        services.store.set_budget_check(facts.job_key, at)
    except GovernorError as exc:
        metrics.add_metric(name="BudgetCheckFailures", unit=MetricUnit.Count, value=1)
        logger.warning("budget check not scheduled", extra={"job": facts.job_name, "error": type(exc).__name__})
        return
    logger.info("budget check scheduled", extra={"job": facts.job_name, "at": iso_time(at)})


def _minute_ceiling(at: datetime) -> datetime:
    floor = at.replace(second=0, microsecond=0)
    return floor if floor == at else floor + timedelta(minutes=1)


def enforce(decision: Decision, tags: dict[str, str], policy: Policy, services: Services) -> tuple[str, str]:
    """What a claimed decision does to its job: stop it (enforce), or only say so. (action, detail).

    Makes the stop call only; the caller records the step (``record_stop``)."""
    if decision.verdict == grace.GRACE:
        stop_at = decision.numbers.get("stop_at")
        if policy.mode != "enforce":
            return grace.GRACE, f"monitor mode: would stop at {stop_at} if the breach still holds"
        return grace.GRACE, f"will stop at {stop_at} if the breach still holds"
    if decision.verdict != "breach":
        return "warned", "reported only"
    if policy.is_exempt(tags):
        return "exempt", f"tag {policy.exempt_tag}=true; would have stopped"
    if policy.mode != "enforce":
        return "would-stop", "monitor mode: no stop call made"
    result = services.sagemaker.stop_tuning_job(decision.job_name)
    stopping = result in {"stop-requested", "already-stopping"}
    metrics.add_metric(name="JobsStopped", unit=MetricUnit.Count, value=1)
    rule_stopped(decision.rule)
    return ("stopped" if stopping else result), result


def stop_step(
    decision: Decision, stored: dict[str, Any], tags: dict[str, str], policy: Policy, services: Services
) -> tuple[str, str]:
    """The decision's stop step, once: the action a failed attempt already recorded, or enforce and
    record it now. Only a stop that took effect marks the job (``stop_requested_at``): it separates
    our stop from early stopping."""
    if stored.get("action") is not None:
        return str(stored["action"]), str(stored.get("action_detail") or "")
    action, detail = enforce(decision, tags, policy, services)
    services.store.record_decision_action(
        decision, action, detail, stop_requested_at=decision.at if action == "stopped" else None
    )
    return action, detail


def resume_decision(stored: dict[str, Any], tags: dict[str, str], policy: Policy, services: Services) -> dict[str, Any]:
    """Carry out a claimed decision's steps from its stored row, each once: the stop, then its report
    on every channel (built from the stored action, detail and figures, so a retry sends what the
    first attempt would have). The decision is done only when every step is; a channel that fails
    raises ``DeliveryFailed`` (the event is retried) and one still in flight leaves it pending for
    the sweep (``resume_stale``)."""
    decision = Decision.model_validate(stored | {"job_key": str(stored["pk"]).removeprefix("JOB#")})
    mode = str(stored.get("mode") or policy.mode)
    fresh = stored.get("action") is None
    action, detail = stop_step(decision, stored, tags, policy, services)
    if fresh:
        metrics.add_metric(name="Decisions", unit=MetricUnit.Count, value=1)
        rule_decided(decision.rule)
        logger.info(
            "governance decision",
            extra={
                "rule": decision.rule,
                "verdict": decision.verdict,
                "mode": mode,
                "action": action,
                "job": decision.job_name,
            },
        )
    delivered = True
    if stored.get("own_report", True):
        owner = tags.get(services.settings.owner_tag)
        report = decision_report(
            rule=decision.rule,
            verdict=decision.verdict,
            job_key=decision.job_key,
            job_name=decision.job_name,
            team=decision.team,
            message=decision.message,
            numbers=decision.numbers,
            at=decision.at.isoformat(),
            mode=mode,
            action=action,
            detail=detail,
            owner=owner,
            owner_member=policy.slack_member(owner),
        )
        delivered = all_delivered(
            deliver(report, services.store, services.notifiers_for(report, policy), services.clock)
        )
    if delivered:
        services.store.finish_decision(decision, action, detail)
    outcome = {"rule": decision.rule, "verdict": decision.verdict, "mode": mode, "action": action, "at": decision.at}
    return outcome if delivered else outcome | {"pending": True}


def act(decision: Decision, job: JobFacts, policy: Policy, services: Services) -> dict[str, Any]:
    """Claim the decision once, then carry out its steps (stop, reports); a retry resumes them."""
    stored = services.store.open_decision(decision, policy.mode, services.clock())
    if stored is None:
        return {
            "rule": decision.rule,
            "verdict": decision.verdict,
            "mode": policy.mode,
            "action": "already-decided",
            "at": decision.at,
        }
    return resume_decision(stored, job.tags, policy, services)


def resume_job(job_key: str, meta: dict[str, Any] | None, services: Services) -> list[dict[str, Any]]:
    """Finish the steps a failed attempt left pending on one job's decisions (a redelivered event's
    first move: whatever it then judges, what was started is finished first)."""
    pending = services.store.pending_decisions(job_key)
    if not pending:
        return []
    policy = services.policy()
    tags = {str(k): str(v) for k, v in ((meta or {}).get("tags") or {}).items()}
    return [resume_decision(stored, tags, policy, services) for stored in pending]


# A step pending this long was left by an attempt that failed and was not retried (or whose claim on
# a channel lapsed): one sweep interval, and the delivery claim timeout.
STEP_TIMEOUT = timedelta(minutes=5)


def resume_stale(services: Services, now: datetime) -> list[dict[str, Any]]:
    """The sweep's pass over decisions left pending longer than ``STEP_TIMEOUT`` (one gsi1 Query, one
    GetItem per job for its tags). A failure on one is logged and counted; the others still resume."""
    outcomes: list[dict[str, Any]] = []
    policy = services.policy()
    for stored in services.store.stale_pending_decisions(now - STEP_TIMEOUT):
        job_key = str(stored["pk"]).removeprefix("JOB#")
        try:
            meta = services.store.get_job(job_key) or {}
            tags = {str(k): str(v) for k, v in (meta.get("tags") or {}).items()}
            outcome = resume_decision(stored, tags, policy, services)
        except GovernorError as exc:
            metrics.add_metric(name="StepResumeFailures", unit=MetricUnit.Count, value=1)
            logger.warning("pending decision not finished", extra={"job": job_key, "error": type(exc).__name__})
            continue
        outcomes.append(outcome | {"job": job_key})
    return outcomes


# -- team budgets (a team's month over all its tuning jobs) -------------------------------------------
def team_month_facts(
    team: str | None, now: datetime, policy: Policy, catalog: PriceCatalog, services: Services
) -> TeamMonthFacts | None:
    """The team's spend this calendar month: its month totals plus its running trials (one GetItem of
    the team's item, only for a team with a monthly budget; never a scan)."""
    if team is None or policy.team_monthly_budget(team) is None:
        return None
    return team_month_spend(team, now, catalog, services)


def team_month_spend(team: str, now: datetime, catalog: PriceCatalog, services: Services) -> TeamMonthFacts:
    """A team's spend in the calendar month of ``now`` as the team-budget rule judges it (finished +
    accrued), whether or not the team has a monthly budget (one GetItem of the team's item; a replay draws it)."""
    month = spend.month_key(now)
    start, end = spend.month_bounds(now)
    totals, running = services.store.team_spend(team, month)
    accrual = spend.accrue(
        running,
        now,
        catalog,
        default_region=services.settings.region,
        spot_discount=spend.spot_factor(totals.get("spot_billed_usd"), totals.get("spot_on_demand_usd")),
        since=start,
    )
    return TeamMonthFacts(
        team=team,
        month=month,
        month_start=start,
        month_end=end,
        finished_usd=Decimal(str(totals.get("finished_usd") or 0)),
        accrued_usd=accrual.priced_usd,
        running_trials=accrual.trials,
        unpriced_trials=int(totals.get("unpriced_trials") or 0),
        unpriced_running_types=accrual.unpriced_types,
    )


def act_on_team(decision: Decision, job: JobFacts, policy: Policy, services: Services) -> list[dict[str, Any]]:
    """A team's month is over budget (or projected to be): decide once per team and month.

    The first caller claims the team's decision; on a breach it stops each of the team's InProgress
    tuning jobs (exempt: exempt; monitor: would-stop), recording a decision on each job, then reports
    once for the team with every job's action. A job of that team judged later in the month (one that
    started after the breach) is stopped on its own decision and reported on its own, once.
    """
    month = str(decision.numbers["month"])
    mode = policy.mode
    if not services.store.claim_team_decision(decision, month, mode, services.clock()):
        if decision.verdict != "breach":
            return []
        return [act(decision, job, policy, services)]
    results: list[dict[str, Any]] = []
    if decision.verdict == "breach":
        jobs = {
            str(item["pk"]).removeprefix("JOB#"): item for item in services.store.team_jobs_in_progress(job.team or "")
        }
        jobs.setdefault(job.job_key, {"job_name": job.job_name, "tags": job.tags})  # the index may lag
        for key, item in sorted(jobs.items()):
            tags = {str(k): str(v) for k, v in (item.get("tags") or {}).items()}
            per_job = decision.model_copy(update={"job_key": key, "job_name": str(item.get("job_name") or key)})
            stored = services.store.open_decision(per_job, mode, services.clock(), own_report=False)
            if stored is None:
                # Done by an earlier attempt at this team decision (its report failed): still named in it.
                done = services.store.get_decision(key, per_job.rule, per_job.verdict) or {}
                if done.get("own_report") is False and done.get("action") is not None:
                    results.append({"job": per_job.job_name, "action": done["action"], "detail": done["action_detail"]})
                continue
            action, detail = stop_step(per_job, stored, tags, policy, services)
            services.store.finish_decision(per_job, action, detail)
            results.append({"job": per_job.job_name, "action": action, "detail": detail})
    metrics.add_metric(name="TeamDecisions", unit=MetricUnit.Count, value=1)
    logger.info(
        "team governance decision",
        extra={"rule": decision.rule, "verdict": decision.verdict, "mode": mode, "team": job.team, "jobs": results},
    )
    # The team decision is done only once its report is out on every channel: until then it stays
    # pending, and the next judgement of the team (event or sweep) re-claims it and sends the report.
    report = team_report(decision, month, mode, results)
    channels = deliver(report, services.store, services.notifiers_for(report, policy), services.clock)
    if all_delivered(channels):
        services.store.finish_team_decision(decision, month, results)
    return [
        {
            "rule": decision.rule,
            "verdict": decision.verdict,
            "mode": mode,
            "action": r["action"],
            "at": decision.at,
            "job": r["job"],
        }
        for r in results
    ] or [{"rule": decision.rule, "verdict": decision.verdict, "mode": mode, "action": "warned", "at": decision.at}]


def team_report(decision: Decision, month: str, mode: str, jobs: list[dict[str, Any]]) -> Report:
    """The one report of a team's monthly-budget decision, naming what happened to each of its jobs."""
    base = decision_report(
        rule=decision.rule,
        verdict=decision.verdict,
        job_key=decision.job_key,
        job_name=f"team {decision.team}",
        team=decision.team,
        message=decision.message,
        numbers=decision.numbers,
        at=decision.at.isoformat(),
        mode=mode,
        action=_team_action(decision, jobs),
        detail=", ".join(f"{j['job']}: {j['action']}" for j in jobs) or "reported only",
    )
    lines = [f"- {j['job']}: {j['action']} ({j['detail']})" for j in jobs]
    text = base.text + ("\n\nJobs of the team:\n" + "\n".join(lines) if lines else "")
    return base.model_copy(update={"kind": f"{base.kind}-{month}", "text": text})


def _team_action(decision: Decision, jobs: list[dict[str, Any]]) -> str:
    if decision.verdict != "breach":
        return "warned"
    actions = {j["action"] for j in jobs}
    for action in ("stopped", "would-stop", "exempt"):
        if action in actions:
            return action
    return "already-ended"
