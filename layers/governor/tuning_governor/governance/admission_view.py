"""A concurrency stop on SageMaker's list: the view a stop is made on, and the breach at the moment of
acting (docs/reference/policy.md, "Order of admission").

A judgement that breaches (the job judged, or later-created jobs it displaces) is made on the ledger,
which knows only the arrivals handled so far. Before it stops anyone:

1. SageMaker's running tuning jobs are listed once (``listed_running``; the same listing releases the
   reservations of jobs that have ended, ``admission_order.release_ended``);
2. every InProgress job created before the latest job the judgement would stop that the ledger has not
   seen (``unseen_before``: no reservation, no recent end, no admission decision; its arrival in flight
   or lost) is judged first, in CreationTime order, like an arrival: the stop is made only on a
   complete view;
3. each breach is checked against what runs now (``holds_now``): the reservations of the jobs SageMaker
   still runs (Stopping ones hold their instances), standalone training jobs and warm pools, plus the
   job's own demand. CreationTime order says *who* breaches; a breach that no longer holds (its
   holder ended since) stops nobody and is recorded as ``passed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.capacity import Ledger, Reservation
from tuning_governor.domain.job import iso_time, job_state
from tuning_governor.errors import JobNotFound
from tuning_governor.governance.admission_order import Breacher, Judgement, order_of
from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.fresh import passed
from tuning_governor.governance.job import job_facts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import Decision, Rule
from tuning_governor.models.place import job_key
from tuning_governor.observability import metrics
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.ports.uses import JobDecisionStore

Listed = Mapping[str, Mapping[str, Any]]
RUNNING = ("InProgress", "Stopping")


def listed_running(services: EngineServices[JobDecisionStore]) -> dict[str, Mapping[str, Any]]:
    """SageMaker's InProgress and Stopping tuning jobs by key: ListHyperParameterTuningJobs per status,
    100 jobs per call (2 x ceil(running jobs / 100) calls), in the place the services act in."""
    return {
        job_key(str(summary["HyperParameterTuningJobName"]), services.place, None): summary
        for status in RUNNING
        for summary in services.sagemaker.list_tuning_jobs(status)
    }


def _created(summary: Mapping[str, Any]) -> str:
    created = summary.get("CreationTime")
    return iso_time(created) if isinstance(created, datetime) else str(created or "")


def unseen_before(listed: Listed, ledger: Ledger, order: tuple[str, str], decided: Callable[[str], bool]) -> list[str]:
    """The InProgress jobs ``listed`` created before ``order`` (CreationTime, key) that the ledger has
    not seen: not reserved, not recently ended, and with no admission decision (``decided``: one
    GetItem per such job). In CreationTime order."""
    found = sorted(
        (_created(summary), key)
        for key, summary in listed.items()
        if summary.get("HyperParameterTuningJobStatus") == "InProgress"
        and key not in ledger.reservations
        and key not in ledger.ended
        and (_created(summary), key) < order
    )
    return [key for _, key in found if not decided(key)]


def facts_of_listed(
    key: str, summary: Mapping[str, Any], policy: Policy, services: EngineServices[JobDecisionStore]
) -> JobFacts | None:
    """The facts of a listed job to judge its admission by: from its item, or (a job the table does not
    know: its arrival still in flight, or lost) from one Describe and one ListTags, recorded as its
    arrival would record it. None when SageMaker no longer knows it."""
    item = services.store.get_job(key)
    if item is None:
        try:
            job = services.sagemaker.describe_tuning_job(str(summary["HyperParameterTuningJobName"]))
            tags = services.sagemaker.list_tags(job.arn) if job.arn else {}
        except JobNotFound:
            return None
        job = job.model_copy(update={"tags": tags})
        services.store.upsert_job(
            job,
            region=services.place.region if services.place else services.settings.region,
            team=policy.team_of(tags, job.role_arns()),
            owner=tags.get(services.settings.owner_tag),
            event_time=services.clock(),
        )
        item = services.store.get_job(key)
    state = job_state(item)
    if state is None or state.ended:
        return None
    metrics.add_metric(name="AdmissionsJudgedFirst", unit=MetricUnit.Count, value=1)
    return job_facts(state, now=services.clock(), policy=policy)


def holds_now(rule: Rule, policy: Policy, facts: JobFacts, room_now: CapacityFacts) -> bool:
    """Whether a breach still holds at the moment of acting: the job's demand on top of what runs now."""
    decision = rule.evaluate(policy, facts, room_now)
    return decision is not None and decision.wants_stop


def passed_decision(decision: Decision) -> Decision:
    """A concurrency breach as of CreationTime that no longer holds when acted on: recorded, no stop."""
    metrics.add_metric(name="AdmissionBreachesPassed", unit=MetricUnit.Count, value=1)
    return passed(
        decision,
        "what SageMaker runs now, plus this job's demand, is within the limit (a job it was judged"
        " against has ended since)",
    )


def latest_stopped(judgement: Judgement, candidate: JobFacts) -> tuple[str, str]:
    """The place in the order of admission of the latest-created job ``judgement`` would stop."""
    stopped = [b.facts for b in judgement.breachers] + ([candidate] if judgement.decision is not None else [])
    return max(order_of(f) for f in stopped)


def unseen(
    rule: Rule,
    listed: Listed,
    ledger: Ledger,
    services: EngineServices[JobDecisionStore],
    judging: frozenset[str],
    before: tuple[str, str],
) -> list[str]:
    """Step 2: the unseen InProgress jobs created before ``before`` (the latest job a judgement would
    stop), in CreationTime order, but for the jobs being judged (``judging``)."""

    def decided(key: str) -> bool:
        return key in judging or services.store.get_decision(key, rule.name, "breach") is not None

    return unseen_before(listed, ledger, before, decided)


def as_of_now(
    rule: Rule,
    judgement: Judgement,
    candidate: JobFacts,
    ledger: Ledger,
    policy: Policy,
    capacity: Callable[[JobFacts, Ledger], CapacityFacts],
    reserve: Callable[[CapacityFacts], Reservation | None],
) -> Judgement:
    """Step 3: each breach of ``judgement`` checked against what runs now (``ledger``'s reservations,
    once the ended ones are released) in creation order; one that no longer holds becomes ``passed``:
    the job judged is reserved on the plan that fits now, a displaced job keeps its reservation."""
    held = dict(ledger.reservations)

    def others(key: str) -> Ledger:
        return Ledger(ledger.version, {k: r for k, r in held.items() if k != key})

    decision, reservation = judgement.decision, judgement.reservation
    if decision is not None:
        room = capacity(candidate, others(candidate.job_key))
        if not holds_now(rule, policy, candidate, room):
            decision, reservation = passed_decision(decision), reserve(room)
    if reservation is not None:
        held[candidate.job_key] = reservation
    breachers: list[Breacher] = []
    for breacher in judgement.breachers:
        key = breacher.facts.job_key
        if holds_now(rule, policy, breacher.facts, capacity(breacher.facts, others(key))):
            breachers.append(breacher)
            if breacher.replacement is None:
                held.pop(key, None)
            else:
                held[key] = breacher.replacement
        else:
            breachers.append(Breacher(breacher.facts, passed_decision(breacher.decision), held.get(key)))
    return Judgement(decision, reservation, breachers)
