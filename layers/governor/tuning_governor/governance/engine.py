"""Governance in action: gather facts once, ask the rules, then stop, record and report — once.

One rule loop (:func:`judge`) for every trigger. What differs between rules is declared on the rules
(``scope``, ``admission_judged``, ``late_ok``, ``grace_able``, ``schedules_checks``: see
``governance.rules.base.Rule``); what differs between a live judgement and a late one (a job that had
ended when a trial of it was recorded) is the :class:`Live` or :class:`Late` pass it runs with.

A decision is claimed in DynamoDB before it is acted on, so a duplicated event never stops or
reports twice, and a retried event finishes what a failed attempt started. Monitor mode and the
exemption tag change only the action: the decision is still recorded and reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.job import JobState, job_state
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.domain.reports import decision_fields, decision_report
from tuning_governor.governance import grace
from tuning_governor.governance.actions import act
from tuning_governor.governance.checks import check_time, schedule_check
from tuning_governor.governance.enforce import under_enforce
from tuning_governor.governance.facts import JobFacts, Trigger
from tuning_governor.governance.job import job_facts, pricing_update, stop_lead_update
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.reporting import all_delivered, deliver
from tuning_governor.governance.rules import Decision, Rule, registry
from tuning_governor.governance.team_months import act_on_team, team_month_facts
from tuning_governor.governance.trial_truth import before_stop
from tuning_governor.governance.trials import with_stagnation_spend
from tuning_governor.models.place import place_in_key
from tuning_governor.models.records import TrialRecord
from tuning_governor.observability import metrics
from tuning_governor.policy import Policy
from tuning_governor.policy.accounts import under_job_terms
from tuning_governor.policy.routing import owner_handles

if TYPE_CHECKING:
    from tuning_governor.ports.uses import GoverningStore

Outcomes = list[dict[str, Any]]
LATE_DETAIL = "the job had ended when this trial was recorded: no stop call"


class Pass(Protocol):
    """How one judgement runs its rules: which ones, how each decides, and what a decision does."""

    def rules(self) -> list[Rule]: ...
    def decide(self, rule: Rule, policy: Policy, facts: JobFacts) -> Decision | None: ...
    def decided(self, rule: Rule, decision: Decision | None, facts: JobFacts, policy: Policy) -> Outcomes: ...


def judge(run: Pass, facts: JobFacts, policy: Policy) -> Outcomes:
    """The one rule loop: each rule of the pass, in registry order, decides; the pass acts on it."""
    outcomes: Outcomes = []
    for rule in run.rules():
        outcomes.extend(run.decided(rule, run.decide(rule, policy, facts), facts, policy))
    return outcomes


@dataclass
class Live:
    """A running job judged on ``trigger``: a team-scoped decision is acted on for the team, a breach of
    a grace-able rule waits for its grace period, and rules that schedule checks ask for one."""

    trigger: Trigger
    services: EngineServices[GoverningStore]
    check_times: list[datetime] = field(default_factory=list)

    def rules(self) -> list[Rule]:
        return [rule for rule in registry.for_trigger(self.trigger) if not rule.admission_judged]

    def decide(self, rule: Rule, policy: Policy, facts: JobFacts) -> Decision | None:
        return rule.evaluate(policy, facts, None)

    def decided(self, rule: Rule, decision: Decision | None, facts: JobFacts, policy: Policy) -> Outcomes:
        if rule.schedules_checks and (decision is None or not decision.wants_stop):
            self.check_times.extend(check_time(rule, facts, policy, self.services))
        if decision is None:
            return []
        if rule.scope == "team":
            return act_on_team(decision, facts, policy, self.services)
        step = grace_step(rule, decision, facts, policy, self.services)
        if step.check_at is not None:
            self.check_times.append(step.check_at)
        if step.decision is None:
            return []
        return [act(under_enforce(step.decision, facts, policy, self.services), facts, policy, self.services)]


@dataclass
class Late:
    """A job that had ended when a trial of it was recorded, judged as of that trial's end by the rules
    that may judge it (``late_ok``): each decision is recorded once as ``already-ended`` (no stop call)
    and reported once; one already made while the job ran is not made again."""

    services: EngineServices[GoverningStore]
    job_key: str
    owner: str | None
    records: list[TrialRecord] | None = None

    def rules(self) -> list[Rule]:
        return [rule for rule in registry.for_trigger("trial") if rule.late_ok]

    def trials(self) -> Sequence[TrialRecord]:
        """The job's trial records, read at most once, and only for a rule that asks for them."""
        if self.records is None:
            self.records = self.services.store.trial_records(self.job_key)
        return self.records

    def decide(self, rule: Rule, policy: Policy, facts: JobFacts) -> Decision | None:
        return rule.evaluate_late(policy, facts, self.trials)

    def decided(self, rule: Rule, decision: Decision | None, facts: JobFacts, policy: Policy) -> Outcomes:
        services = self.services
        if decision is None or not services.store.claim_decision(decision, policy.mode, services.clock()):
            return []
        # Reported before the claim is finished: a failed delivery leaves it pending, and the retry
        # (or the next finalisation) sends what is missing.
        fields = decision_fields(
            decision,
            mode=policy.mode,
            action="already-ended",
            detail=LATE_DETAIL,
            owner=self.owner,
            handles=owner_handles(policy, self.owner),
        )
        report = decision_report(**fields)
        channels = deliver(report, services.store, services.notifiers_for(report, policy), services.clock)
        outcome = {"rule": decision.rule, "verdict": decision.verdict, "mode": policy.mode, "action": "already-ended"}
        metrics.add_metric(name="LateDecisions", unit=MetricUnit.Count, value=1)
        if not all_delivered(channels):
            # The action is recorded, so the sweep's delivery step (``resume_stale``) sends the report.
            services.store.record_decision_action(decision, "already-ended", LATE_DETAIL)
            return [outcome | {"pending": True}]
        services.store.finish_decision(decision, "already-ended", LATE_DETAIL)
        return [outcome]


def grace_step(
    rule: Rule, decision: Decision, job: JobFacts, policy: Policy, services: EngineServices[GoverningStore]
) -> grace.GraceStep:
    """A breach of a rule with a grace period (``defaults.grace_minutes``): the first one becomes the
    rule's notice (acted on: recorded and reported once), one before the notice's time waits, one at
    or after it is acted on. One GetItem (the notice), only for a breach of such a rule; exempt jobs get
    no notice (their breach is recorded as exempt at once)."""
    period = policy.grace_for(decision.rule) if rule.grace_able else None
    if period is None or not decision.wants_stop or policy.is_exempt(job.tags):
        return grace.GraceStep(decision)
    return grace.step(decision, period, services.store.get_decision(job.job_key, decision.rule, grace.GRACE), policy)


def load_facts(
    job: JobState,
    now: datetime,
    policy: Policy,
    services: EngineServices[GoverningStore],
    *,
    catalog: PriceCatalog | None = None,
    team_month: bool,
) -> JobFacts:
    """Everything the rules read about the job at ``now``, gathered once: its item's facts, its spend
    priced with the catalog in force, the spend at its last improvement, its team's month (``team_month``)
    and how well it is priced."""
    catalog = catalog or services.price_catalog(policy)
    facts = with_stagnation_spend(job_facts(job, now=now, policy=policy, catalog=catalog), services)
    budget = policy.budget_for(job.tags, job.roles)
    update = {"budget": budget} | stop_lead_update(facts.demand, budget, policy, services.store)
    if team_month:
        update["team_month"] = team_month_facts(facts.team, now, policy, catalog, services)
    return facts.model_copy(update=update | pricing_update(facts, job, catalog))


def govern(
    trigger: Trigger,
    job_key: str,
    now: datetime,
    services: EngineServices[GoverningStore],
    *,
    job: JobState | None = None,
    catalog: PriceCatalog | None = None,
) -> Outcomes:
    """Evaluate the rules for ``trigger`` on one job and act on what they find. ``job``: the job as the
    caller just wrote it (see :func:`record_trial`), without it the item is read; ``catalog``: the
    prices the caller already has in force for this event, without it they are read.

    Judged at ``now`` or at the latest moment the job's state reflects, whichever is later: an event
    handled after later ones of the same job (EventBridge does not keep order) is judged on the state
    as it is, at the time that state is true, never on later trials at an earlier time. Under the terms
    of the job's account (``policy.accounts.under_job_terms``), whoever calls."""
    policy = _terms(services, job_key)
    if job is None:
        job = job_state(services.store.get_job(job_key))
    if job is None or job.ended:
        return []
    now = max(now, job.state_time() or now)
    facts = load_facts(job, now, policy, services, catalog=catalog, team_month=True)
    # About to stop on a rule that reads trials: reconcile them with SageMaker first, judge on the truth.
    job, facts = before_stop(
        trigger,
        job,
        facts,
        policy,
        services,
        lambda fresh: load_facts(fresh, now, policy, services, catalog=catalog, team_month=True),
    )
    outcomes: Outcomes = []
    for rule in registry.for_trigger(trigger):
        if rule.admission_judged:
            # Admission is per account and region: that place's quotas, running jobs and ledger.
            outcomes.extend(_admit(rule, facts, policy, services.at(place_in_key(job_key))))
    live = Live(trigger, services)
    outcomes.extend(judge(live, facts, policy))
    schedule_check(facts, job, min(live.check_times, default=None), services)
    return outcomes


def _admit(rule: Rule, facts: JobFacts, policy: Policy, services: EngineServices[GoverningStore]) -> Outcomes:
    """An arrival judged through the capacity ledger (``governance.admission``): imported here, so a
    handler that judges no arrival (trial events, budget checks) does not load it; the handlers whose
    events are arrivals (tuning events, the sweep, the queue) import it with their use case."""
    from tuning_governor.governance.admission import admit  # noqa: PLC0415 - arrivals only (see above)

    return admit(rule, facts, policy, services)


def judge_ended(job_key: str, at: datetime, services: EngineServices[GoverningStore]) -> Outcomes:
    """The same rule loop on a job that had ended when a trial of it was recorded, as of ``at`` (its
    end): the :class:`Late` pass. So decisions do not depend on delivery order."""
    job = job_state(services.store.get_job(job_key))
    if job is None:
        return []
    policy = _terms(services, job_key)
    facts = load_facts(job, at, policy, services, team_month=False)
    owner = job.owner or job.tags.get(services.settings.owner_tag)
    return judge(Late(services, job_key, owner), facts, policy)


def _terms(services: EngineServices[GoverningStore], job_key: str) -> Policy:
    """The policy as it applies to job ``job_key``: its account's mode (a member in monitor never stops)."""
    return under_job_terms(services.policy(), job_key, services.home)
