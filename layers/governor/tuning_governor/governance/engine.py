"""Governance in action: gather facts, ask the rules, then stop, record and report — once.

A decision is claimed in DynamoDB before it is acted on, so a duplicated event never stops or
reports twice, and a retried event finishes what a failed attempt started. Monitor mode and the
exemption tag change only the action: the decision is still recorded and reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.reports import decision_report
from tuning_governor.governance import grace
from tuning_governor.governance.actions import act
from tuning_governor.governance.admission import admit
from tuning_governor.governance.checks import budget_check_time, schedule_check
from tuning_governor.governance.facts import JobFacts, Trigger
from tuning_governor.governance.job import job_facts, state_time, with_pricing_facts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import BudgetRule, Decision, TeamBudgetRule, registry
from tuning_governor.governance.stagnation import (
    DefinitionObjective,
    StagnationState,
    objectives_from_item,
    resolve_objective,
)
from tuning_governor.governance.team_months import act_on_team, team_month_facts
from tuning_governor.governance.trials import with_stagnation_spend
from tuning_governor.models.records import TrialRecord
from tuning_governor.models.sagemaker import (
    TUNING_TERMINAL,
)
from tuning_governor.observability import metrics
from tuning_governor.policy import Policy
from tuning_governor.reporting import deliver


def govern(
    trigger: Trigger, job_key: str, now: datetime, services: EngineServices, meta: dict[str, Any] | None = None
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


def grace_step(decision: Decision, job: JobFacts, policy: Policy, services: EngineServices) -> grace.GraceStep:
    """A breach of a rule with a grace period (``defaults.grace_minutes``): the first one becomes the
    rule's notice (acted on: recorded and reported once), one before the notice's time waits, one at
    or after it is acted on. One GetItem (the notice), only for a breach of such a rule; exempt jobs get
    no notice (their breach is recorded as exempt at once)."""
    period = policy.grace_for(decision.rule)
    if period is None or not decision.wants_stop or policy.is_exempt(job.tags):
        return grace.GraceStep(decision)
    return grace.step(decision, period, services.store.get_decision(job.job_key, decision.rule, grace.GRACE), policy)


#: The trial rules judged on a job that had already ended when a trial of it was recorded: those that
#: depend on the trials (runtime is the running job's clock; a team's month is judged on its next trial).
LATE_TRIAL_RULES = ("budget", "stagnation", "failed-trials", "pricing")


LATE_DETAIL = "the job had ended when this trial was recorded: no stop call"


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


def judge_ended(job_key: str, at: datetime, services: EngineServices) -> list[dict[str, Any]]:
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
