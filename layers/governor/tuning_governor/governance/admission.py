"""Admission: a job's arrival judged through the capacity ledger, and the sweep's reconciliation of
that ledger with what SageMaker runs."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.capacity import AdmissionPlan, Holder, Ledger, Quota, Reservation
from tuning_governor.domain.job import JobState, iso_time, job_state
from tuning_governor.errors import TransientError
from tuning_governor.governance.actions import act
from tuning_governor.governance.admission_order import (
    RELEASE_GRACE,
    Judgement,
    displaced,
    expired,
    order_of,
    release_ended,
)
from tuning_governor.governance.capacity import capacity_facts, first_fit
from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.job import job_facts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import Decision, Rule
from tuning_governor.observability import metrics
from tuning_governor.policy import Policy


def _capacity(job: JobFacts, policy: Policy, services: EngineServices, ledger: Ledger | None = None) -> CapacityFacts:
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
    services: EngineServices,
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
    holders = services.store.holders(tuning_jobs=ledger is None)
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


def _judge(rule: Rule, facts: JobFacts, policy: Policy, services: EngineServices, ledger: Ledger) -> Judgement:
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


def _commit(services: EngineServices, ledger: Ledger, facts: JobFacts, policy: Policy, judgement: Judgement) -> str:
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


def _act_on(judgement: Judgement, facts: JobFacts, policy: Policy, services: EngineServices) -> list[dict[str, Any]]:
    outcomes = [act(b.decision, b.facts, policy, services) for b in judgement.breachers]
    if judgement.decision is None:
        metrics.add_metric(name="JobsAdmitted", unit=MetricUnit.Count, value=1)
        return outcomes
    return [*outcomes, act(judgement.decision, facts, policy, services)]


def admit(rule: Rule, facts: JobFacts, policy: Policy, services: EngineServices) -> list[dict[str, Any]]:
    """Judge a job's arrival by an ``admission_judged`` rule (concurrency) through the capacity ledger,
    in CreationTime order (docs/policy.md, "Order of admission"), serialized with every other arrival.

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
    """
    checked = False
    for attempt in range(ADMISSION_ATTEMPTS):
        ledger = services.store.read_ledger()
        held = ledger.reservations.get(facts.job_key)
        if held is not None and not (held.incomplete and not facts.arrival_facts_incomplete):
            return []
        if facts.job_key in ledger.ended:
            return []  # admitted, and ended since: a late retry of its arrival has nothing to judge
        claimed = services.store.get_decision(facts.job_key, rule.name, "breach")
        if claimed is not None:
            return [act(Decision.model_validate(claimed | {"job_key": facts.job_key}), facts, policy, services)]
        judgement = _judge(rule, facts, policy, services, ledger)
        if judgement.breaches and not checked:
            checked = True
            if release_ended(services, ledger, facts.job_key, services.clock()):
                continue
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
    services: EngineServices,
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


def running_shapes(job: JobState) -> list[tuple[dict[str, int], bool]]:
    """The instances (and market) of each trial the job item records as running (its ``running``
    map, kept by the training-event path), for re-counting the job's reservation."""
    return [(dict(trial.instances), trial.spot) for trial in job.running if trial.instances]


def _adopted(services: EngineServices, adopt: set[str], jobs: Mapping[str, JobState]) -> dict[str, Reservation]:
    """Reservations for discovered Stopping jobs: their first plan, counted as they run."""
    put: dict[str, Reservation] = {}
    for key in sorted(adopt):
        job = jobs.get(key) or job_state(services.store.get_job(key))
        if job is None:
            continue
        facts = job_facts(job, now=services.clock(), policy=services.policy())
        plans = [p for p in facts.admission_plans() if p.on_demand or p.spot]
        if plans:
            reservation = Reservation.for_plan(key, facts.team, plans[0], facts.max_parallel, iso_time(facts.now))
            put[key] = replace(reservation, job_created=order_of(facts)[0])
    return put


def reconcile_ledger(
    services: EngineServices,
    *,
    live: set[str],
    listed_at: datetime,
    jobs: Mapping[str, JobState],
    adopt: set[str],
    ended_at: Mapping[str, datetime] | None = None,
    attempts: int = 5,
) -> dict[str, list[str]]:
    """The sweep's pass over the capacity ledger, against what SageMaker lists as running (``live``).

    Releases reservations of jobs no longer running (their terminal event was lost), marked ended at
    their end in SageMaker's time (``ended_at``: what the sweep's finalisation described; else the
    listing time) and prunes ended ones past ``ENDED_RETENTION``; adopts jobs the
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
        gone = sorted(k for k, r in ledger.reservations.items() if k not in live and r.created < listed)
        when = {k: iso_time((ended_at or {}).get(k) or listed_at) for k in gone}
        put = {k: replace(ledger.reservations[k], ended=when[k]) for k in gone}
        remove = expired(ledger, listed_at)
        put |= _adopted(services, adopt - set(ledger.reservations), jobs)
        for key, reservation in sorted(ledger.reservations.items()):
            known = jobs.get(key)
            if key in gone or known is None or not known.tracks_running:
                continue
            recounted = reservation.recounted(running_shapes(known))
            if recounted.on_demand != reservation.on_demand or recounted.spot != reservation.spot:
                put[key] = recounted
        if services.store.update_reservations(ledger.version, put, remove):
            changes["released"] = gone
            changes["adopted"] = sorted(k for k in put if k not in ledger.reservations)
            changes["recounted"] = sorted(k for k in put if k in ledger.reservations and k not in gone)
            return changes
        time.sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311 - jitter, not crypto
    raise TransientError("capacity ledger contended during the sweep")
