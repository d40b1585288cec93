"""Admission: a job's arrival judged through the capacity ledger, and the sweep's reconciliation of
that ledger with what SageMaker runs."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.capacity import AdmissionPlan, Holder, Ledger, Quota, Reservation
from tuning_governor.domain.job import iso_time, job_state
from tuning_governor.errors import TransientError
from tuning_governor.governance.actions import act
from tuning_governor.governance.admission_order import (
    Judgement,
    displaced,
    expired,
    order_of,
    release_ended,
)
from tuning_governor.governance.admission_view import (
    Listed,
    as_of_now,
    facts_of_listed,
    latest_stopped,
    listed_running,
    unseen,
)
from tuning_governor.governance.capacity import capacity_facts, first_fit
from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.job import job_facts
from tuning_governor.governance.ledger_reconcile import reconcile_ledger
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import Decision, Rule
from tuning_governor.governance.wrong_stops import mark_wrong_stops
from tuning_governor.observability import metrics
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.ports.uses import AdmissionStore

__all__ = ["admit", "reconcile_ledger", "reserve"]

type Admitting = EngineServices[AdmissionStore]
"""The services admission runs with (named once here: the module's signatures stay on one line)."""


def _capacity(job: JobFacts, policy: Policy, services: Admitting, ledger: Ledger | None = None) -> CapacityFacts:
    """What others hold and the limits for every type the job's plans may use.

    Tuning jobs are counted by their reservations in the capacity ledger (read by the caller, whose
    commit is conditional on it); standalone training jobs and warm pools from their own items.
    """
    return _room(job.job_key, job.team, job.admission_plans(), policy, services, ledger)


def _room(
    job_key: str,
    team: str | None,
    plans: list[AdmissionPlan],
    policy: Policy,
    services: Admitting,
    ledger: Ledger | None,
) -> CapacityFacts:
    on_demand_types = sorted({t for plan in plans for t in plan.on_demand})
    spot_types = sorted({t for plan in plans for t in plan.spot})
    gateway = services.quotas
    quotas: dict[str, Quota | None] = {t: gateway.training_quota(t) if gateway else None for t in on_demand_types}
    spot_quotas: dict[str, Quota | None] = {t: gateway.spot_training_quota(t) if gateway else None for t in spot_types}
    team_limits: dict[str, int] = {}
    if team:
        for itype in sorted(set(on_demand_types) | set(spot_types)):
            limit = policy.team_limit(team, itype)
            if limit is not None:
                team_limits[itype] = limit
    # Standalone training jobs and warm pools are tracked in the home place only.
    holders = services.store.holders(tuning_jobs=ledger is None) if services.place is None else []
    if ledger is not None:
        holders = ledger.holders() + holders
    return capacity_facts(
        job_key=job_key,
        team=team,
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


def _reservation(
    facts: JobFacts, policy: Policy, capacity: CapacityFacts, version: int, job_created: str
) -> Reservation | None:
    """The job's reservation if it is admitted: on the first plan that fits; on its first plan, over the
    limit, when it keeps running anyway (monitor mode or exempt); none when it is refused."""
    plans = facts.admission_plans()
    chosen, _ = first_fit(plans, facts.team, capacity)
    keeps_running = policy.mode != "enforce" or policy.is_exempt(facts.tags)
    if chosen is None and not keeps_running:
        return None
    reservation = Reservation.for_plan(
        facts.job_key,
        facts.team,
        plans[chosen if chosen is not None else 0],
        facts.max_parallel,
        iso_time(facts.now),
        over_limit=chosen is None,
        version=version + 1,
    )
    return replace(reservation, job_created=job_created, incomplete=facts.arrival_facts_incomplete)


def _judge(rule: Rule, facts: JobFacts, policy: Policy, services: Admitting, ledger: Ledger) -> Judgement:
    """The job judged against the jobs created before it, and the later-created jobs it displaces."""
    order = order_of(facts)

    def capacity(job: JobFacts, held: Ledger) -> CapacityFacts:
        return _capacity(job, policy, services, held)

    room = capacity(facts, ledger.before(order))
    decision = rule.evaluate(policy, facts, room)
    reservation = _reservation(facts, policy, room, ledger.version, order[0])
    if decision is not None:
        # The judgement's place in the commit order, for the audit trail.
        decision = decision.model_copy(update={"numbers": decision.numbers | {"ledger_version": ledger.version + 1}})
    judgement = Judgement(decision, reservation)
    if reservation is not None and (reservation.on_demand or reservation.spot):
        with_it = Ledger(ledger.version, {**ledger.reservations, facts.job_key: reservation}, ledger.ended)
        judgement.breachers = displaced(rule, facts, with_it, policy, services, capacity)
    return judgement


ENFORCED = "enforced"


def _enforce_now(held: Reservation, facts: JobFacts, policy: Policy) -> bool:
    """A job admitted over the limit while it kept running (monitor mode) that the policy now enforces
    on (it is not exempt): judged again, once (the rollout's promise: enforce stops what monitor only
    reported)."""
    return held.over_limit and policy.enforcing and not policy.is_exempt(facts.tags)


def _enforced(judgement: Judgement) -> Judgement:
    """A re-judgement under enforce of a job kept over the limit: a breach that still holds is its own
    decision (verdict ``enforced``, claimed once, so it stops once); one that fits now keeps running,
    no longer over the limit."""
    decision = judgement.decision
    if decision is None:
        reservation = judgement.reservation
        fits = replace(reservation, over_limit=False) if reservation is not None else None
        return Judgement(None, fits, judgement.breachers)
    decision = decision.model_copy(
        update={
            "verdict": ENFORCED,
            "message": f"{decision.message}; admitted over the limit in monitor mode, now judged under enforce",
        }
    )
    return Judgement(decision, judgement.reservation, judgement.breachers)


def _settled(
    rule: Rule, facts: JobFacts, ledger: Ledger, policy: Policy, services: Admitting, *, again: bool
) -> list[dict[str, Any]] | None:
    """What a judgement already made says (None: judge): the job reserved (nothing to do, unless it is
    judged again: on fuller facts, or under enforce), ended since, or its decision claimed (act on it)."""
    held = ledger.reservations.get(facts.job_key)
    if held is not None and not again and not (held.incomplete and not facts.arrival_facts_incomplete):
        return []
    if facts.job_key in ledger.ended:
        return []  # admitted, and ended since: a late retry of its arrival has nothing to judge
    claimed = services.store.get_decision(facts.job_key, rule.name, ENFORCED if again else "breach")
    if claimed is not None:
        return [act(Decision.model_validate(claimed | {"job_key": facts.job_key}), facts, policy, services)]
    return None


def _complete_pass(
    rule: Rule, facts: JobFacts, keys: list[str], listed: Listed, policy: Policy, services: Admitting
) -> list[dict[str, Any]]:
    """The pass in creation order over the complete view, from the earliest unseen job: each unseen job
    and this one admitted (or refused) against the jobs created before it, each job the ledger holds
    judged again against the jobs created before it, so that every stop is made on a complete view."""
    new = {key: f for key in keys if (f := facts_of_listed(key, listed[key], policy, services)) is not None}
    new[facts.job_key] = facts
    start = min(order_of(f) for f in new.values())
    held = services.store.read_ledger().reservations
    steps = sorted(
        [(order_of(f), key) for key, f in new.items()] + [(r.order, k) for k, r in held.items() if r.order > start]
    )
    outcomes: list[dict[str, Any]] = []
    for _, key in steps:
        if key in new:
            outcomes.extend(admit(rule, new[key], policy, services, listed, complete=True))
        else:
            outcomes.extend(_judged_again(rule, key, policy, services))
    # Jobs another arrival reserved meanwhile, judged before one of this pass committed: judged again;
    # so is an unseen job of the pass that its own arrival reserved first (``admit`` found it settled).
    done = {key for _, key in steps if key not in new}
    later = services.store.read_ledger().reservations.values()
    for reservation in sorted((r for r in later if r.order > start and r.job_key not in done), key=lambda r: r.order):
        outcomes.extend(_judged_again(rule, reservation.job_key, policy, services))
    metrics.add_metric(name="AdmissionCompletePasses", unit=MetricUnit.Count, value=1)
    return outcomes


def _judged_again(rule: Rule, key: str, policy: Policy, services: Admitting) -> list[dict[str, Any]]:
    """A job the ledger holds judged again, in the complete pass, against the jobs created before it."""
    for attempt in range(ADMISSION_ATTEMPTS):
        ledger = services.store.read_ledger()
        held, job = ledger.reservations.get(key), job_state(services.store.get_job(key))
        if held is None or held.over_limit or job is None:
            return []
        facts = job_facts(job, now=services.clock(), policy=policy)
        decision = rule.evaluate(policy, facts, _capacity(facts, policy, services, ledger.before(held.order)))
        if decision is None:
            return []
        decision = decision.model_copy(
            update={"message": f"{decision.message}; judged again in CreationTime order on SageMaker's list"}
        )
        keeps_running = policy.mode != "enforce" or policy.is_exempt(facts.tags)
        judgement = _as_of_now(
            rule,
            facts,
            Judgement(decision, replace(held, over_limit=True) if keeps_running else None),
            ledger,
            policy,
            services,
        )
        if _commit(services, ledger, facts, policy, judgement) == "committed":
            return _act_on(judgement, facts, policy, services)
        time.sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 6)))  # noqa: S311 - jitter, not crypto
    raise TransientError(f"capacity ledger contended {ADMISSION_ATTEMPTS} times; the event will be retried")


def _as_of_now(
    rule: Rule, facts: JobFacts, judgement: Judgement, ledger: Ledger, policy: Policy, services: Admitting
) -> Judgement:
    def capacity(job: JobFacts, held: Ledger) -> CapacityFacts:
        return _capacity(job, policy, services, held)

    def reserve(room: CapacityFacts) -> Reservation | None:
        return _reservation(facts, policy, room, ledger.version, order_of(facts)[0])

    return as_of_now(rule, judgement, facts, ledger, policy, capacity, reserve)


def _commit(services: Admitting, ledger: Ledger, facts: JobFacts, policy: Policy, judgement: Judgement) -> str:
    now = services.clock()
    claim = (judgement.decision, policy.mode, now) if judgement.decision is not None else None
    breaches = [(b.facts.job_key, b.replacement, (b.decision, policy.mode, now)) for b in judgement.breachers]
    if facts.job_key in ledger.reservations and judgement.reservation is None and claim is not None:
        # Judged again on fuller facts and refused: its reservation goes with the claim.
        breaches.insert(0, (facts.job_key, None, claim))
        claim = None
    prune = expired(ledger, now)
    return services.store.commit_admission(
        ledger.version, facts.job_key, judgement.reservation, claim, breaches, prune=prune
    )


def _act_on(judgement: Judgement, facts: JobFacts, policy: Policy, services: Admitting) -> list[dict[str, Any]]:
    """Act on the judgement's decisions; each stop made is then judged on SageMaker's list (a wrong one
    is marked to be resumed: ``governance.wrong_stops``)."""
    acted = [(b.decision, b.facts) for b in judgement.breachers]
    if judgement.decision is None:
        metrics.add_metric(name="JobsAdmitted", unit=MetricUnit.Count, value=1)
    else:
        acted.append((judgement.decision, facts))
    outcomes = [act(decision, job, policy, services) for decision, job in acted]
    mark_wrong_stops(acted, outcomes, policy, services, lambda job, held: _capacity(job, policy, services, held))
    return outcomes


# Long: its contract (the order of admission on SageMaker's list, a sentence a case) is its docstring.
def admit(
    rule: Rule,
    facts: JobFacts,
    policy: Policy,
    services: Admitting,
    listed: Listed | None = None,
    *,
    complete: bool = False,
) -> list[dict[str, Any]]:
    """Judge a job's arrival by an ``admission_judged`` rule (concurrency) through the capacity ledger,
    in CreationTime order (docs/reference/policy.md, "Order of admission"), serialized with every other arrival.

    Read the ledger, judge the job against the jobs created before it (plans in priority order), and
    the jobs created after it that it displaces; commit on the condition that the ledger is unchanged:
    a job that fits is reserved on the first plan that fits; one that does not is not reserved (unless
    it keeps running: monitor mode or exempt) and its breach decision is claimed in the same
    transaction, as are those of the later-created jobs that no longer fit. Before a judgement that
    breaches is committed, reservations of jobs SageMaker no longer runs are released and the job is
    judged again (``release_ended``). A conflict means another arrival or release committed first:
    read and judge again. The commit is the durable mark of the judgement: a retried event finds the
    job reserved (nothing to do) or its decision claimed (finish acting on it); a job reserved on
    incomplete facts is judged again when its facts are complete.

    A judgement that breaches stops only on SageMaker's list (``governance.admission_view``): the
    running jobs listed once (``listed``: a caller's listing, else 2 x ceil(running / 100) List
    calls), ended holders released; with unseen earlier-created InProgress jobs, the pass in creation
    order over the complete view (``_complete_pass``: ``complete``, each step of it, judging no
    later job); each breach checked against what runs now (one that has passed is recorded
    ``passed``, stops nobody). A judgement that breaches nothing makes no SageMaker call.
    """
    released = False
    for attempt in range(ADMISSION_ATTEMPTS):
        ledger = services.store.read_ledger()
        held = ledger.reservations.get(facts.job_key)
        again = held is not None and _enforce_now(held, facts, policy)
        settled = _settled(rule, facts, ledger, policy, services, again=again)
        if settled is not None:
            return settled
        judgement = _judge(rule, facts, policy, services, ledger)
        if again:
            judgement = _enforced(judgement)
        if complete:
            judgement = Judgement(judgement.decision, judgement.reservation)  # the pass judges later jobs
        if judgement.breaches and not complete:
            listed = listed if listed is not None else listed_running(services)
            if not released:
                released = True
                if release_ended(services, ledger, facts.job_key, services.clock(), listed):
                    continue
            keys = unseen(rule, listed, ledger, services, frozenset({facts.job_key}), latest_stopped(judgement, facts))
            if keys:
                return _complete_pass(rule, facts, keys, listed, policy, services)
        if judgement.breaches:
            judgement = _as_of_now(rule, facts, judgement, ledger, policy, services)
        outcome = _commit(services, ledger, facts, policy, judgement)
        if outcome == "committed":
            return _act_on(judgement, facts, policy, services)
        if outcome == "ended":
            # Its end was recorded first: it holds nothing and needs no stop (the end releases).
            metrics.add_metric(name="EndedBeforeAdmission", unit=MetricUnit.Count, value=1)
            return []
        if outcome == "decided":
            continue  # a retry of this event claimed it first: the next pass acts on its claim
        metrics.add_metric(name="LedgerConflicts", unit=MetricUnit.Count, value=1)
        time.sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 6)))  # noqa: S311 - jitter, not crypto
    raise TransientError(f"capacity ledger contended {ADMISSION_ATTEMPTS} times; the event will be retried")


def reserve(
    job_key: str,
    team: str,
    plans: list[AdmissionPlan],
    slots: int,
    policy: Policy,
    services: Admitting,
    also: Callable[[list[Holder]], str | None] | None = None,
) -> tuple[Reservation | None, list[str]]:
    """Reserve capacity for a tuning job the governor is about to create (a queued request), through
    the same serialized ledger as every arrival: read the ledger, judge the plans (in priority order)
    against everything reserved and held, commit on the condition that the ledger is unchanged, and
    judge again on a conflict. The reservation's CreationTime is now: the job is created after it.

    Returns (the reservation, []) when a plan fits (or the job is reserved already: a retried
    admission); (None, the breaches of the first plan) when none fits now. When the job's arrival
    event comes, ``admit`` finds it reserved and has nothing to judge.

    ``also``: a further condition judged on the same ledger read and committed under the same version
    (the queue's shares: why the job would no longer fit, given the ledger's holders, or None).
    """
    for attempt in range(ADMISSION_ATTEMPTS):
        ledger = services.store.read_ledger()
        held = ledger.reservations.get(job_key)
        if held is not None:
            return held, []
        chosen, judged = first_fit(plans, team, _room(job_key, team, plans, policy, services, ledger))
        if chosen is None:
            return None, judged[0].breaches if judged else ["no plan"]
        refused = also(ledger.holders()) if also is not None else None
        if refused is not None:
            return None, [refused]
        now = iso_time(services.clock())
        reservation = Reservation.for_plan(job_key, team, plans[chosen], slots, now, version=ledger.version + 1)
        reservation = replace(reservation, job_created=now)
        outcome = services.store.commit_admission(
            ledger.version, job_key, reservation, prune=expired(ledger, services.clock())
        )
        if outcome == "committed":
            metrics.add_metric(name="QueuedJobsReserved", unit=MetricUnit.Count, value=1)
            return reservation, []
        metrics.add_metric(name="LedgerConflicts", unit=MetricUnit.Count, value=1)
        time.sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 6)))  # noqa: S311 - jitter, not crypto
    raise TransientError(f"capacity ledger contended {ADMISSION_ATTEMPTS} times; admission will be retried")
