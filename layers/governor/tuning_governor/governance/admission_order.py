"""The order of admission (docs/reference/policy.md): jobs are admitted in CreationTime order, whatever order
their events are handled in, and a judgement about to stop checks its holders against SageMaker.

A job is judged as of its CreationTime: against the reservations of the jobs created before it that
had not ended by then, whether they still run or ended since (the ledger keeps an ended reservation,
with its end in SageMaker's time, for ``ENDED_RETENTION``), plus standalone training jobs and warm
pools. When it is admitted and holds instances, each job created after it that was
admitted is judged again, in creation order, against the jobs created before that one: one that no
longer fits is the breacher (removed from the ledger, or kept over the limit when it keeps running),
so the admitted set is the greedy pass in creation order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.capacity import Ledger, Reservation
from tuning_governor.domain.job import iso_time, job_state
from tuning_governor.errors import JobNotFound
from tuning_governor.governance.job import job_facts
from tuning_governor.governance.rules import registry
from tuning_governor.models.place import name_in_key, place_in_key
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.observability import metrics

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping

    from tuning_governor.governance.facts import CapacityFacts, JobFacts
    from tuning_governor.governance.ports import EngineServices
    from tuning_governor.governance.rules import Decision, Rule
    from tuning_governor.policy import Policy
    from tuning_governor.ports.uses import LedgerDecisionStore

    Capacity = Callable[[JobFacts, Ledger], CapacityFacts]

#: SageMaker's list may lag a job that has just started: the sweep releases only reservations older
#: than this for not being listed.
RELEASE_GRACE = timedelta(minutes=5)

#: How long an ended reservation stays in the ledger. A job created before a holder ended is judged at
#: the latest when its own event is handled (EventBridge drops an event older than the rules'
#: MaximumEventAgeInSeconds, 3600 s in template.yaml) or when a sweep lists it unjudged (every 5
#: minutes by default): 3600 s and two sweep intervals. Later commits prune what is older.
ENDED_RETENTION = timedelta(seconds=3600 + 2 * 300)


def expired(ledger: Ledger, now: datetime) -> list[str]:
    """The ended reservations past ``ENDED_RETENTION`` at ``now``: pruned by the next ledger write."""
    return ledger.expired(iso_time(now - ENDED_RETENTION))


def order_of(facts: JobFacts) -> tuple[str, str]:
    """A job's place in the order of admission: (CreationTime, job key)."""
    return (iso_time(facts.created_at or facts.now), facts.job_key)


@dataclass
class Breacher:
    """A job created after the one judged that no longer fits next to it."""

    facts: JobFacts
    decision: Decision
    replacement: Reservation | None
    """What its reservation becomes: None (removed) or kept over the limit (it keeps running)."""


@dataclass
class Judgement:
    """One job judged in creation order: its decision and reservation, and the jobs it displaces."""

    decision: Decision | None
    reservation: Reservation | None
    breachers: list[Breacher] = field(default_factory=list)

    @property
    def breaches(self) -> bool:
        return self.decision is not None or bool(self.breachers)


def displaced(
    rule: Rule,
    judged: JobFacts,
    ledger: Ledger,
    policy: Policy,
    services: EngineServices[LedgerDecisionStore],
    capacity: Capacity,
) -> list[Breacher]:
    """The jobs created after ``judged`` (whose reservation ``ledger`` holds with the others) that no
    longer fit, each judged in creation order against the jobs created before it. A job already over
    the limit (it keeps running, its breach recorded) is not judged again. One GetItem per job created
    after ``judged`` that holds a reservation."""
    own = ledger.reservations[judged.job_key]
    held = dict(ledger.reservations)
    ended = ledger.ended
    breachers: list[Breacher] = []
    for later in sorted((r for r in held.values() if r.order > own.order), key=lambda r: r.order):
        job = job_state(services.store.get_job(later.job_key))
        if later.over_limit or job is None:
            continue
        facts = job_facts(job, now=judged.now, policy=policy)
        before = Ledger(ledger.version, held, ended).before(later.order)
        room = capacity(facts, before)
        decision = rule.evaluate(policy, facts, room)
        if decision is None:
            continue  # it still fits (on one of its plans): it keeps the reservation it has
        decision = decision.model_copy(
            update={
                "message": f"{decision.message}; created after {judged.job_name}, whose arrival was handled"
                " later: jobs are admitted in CreationTime order",
                "numbers": decision.numbers
                | {
                    "displaced_by": judged.job_key,
                    "displaced_by_created": own.job_created,
                    "created": later.job_created,
                    "ledger_version": ledger.version + 1,
                },
            }
        )
        keeps_running = policy.mode != "enforce" or policy.is_exempt(facts.tags)
        replacement = replace(later, over_limit=True) if keeps_running else None
        if replacement is None:
            held.pop(later.job_key)
        else:
            held[later.job_key] = replacement
        breachers.append(Breacher(facts=facts, decision=decision, replacement=replacement))
    metrics.add_metric(name="AdmissionsDisplaced", unit=MetricUnit.Count, value=len(breachers))
    return breachers


def release_ended(
    services: EngineServices[LedgerDecisionStore], ledger: Ledger, job_key: str, now: datetime, live: Collection[str]
) -> list[str]:
    """Before a concurrency stop: mark ended the reservations of jobs SageMaker no longer runs (their
    end event still in flight, or lost), each at its end in SageMaker's time, so a job is judged as of
    its CreationTime: a holder that ended before it was created causes no stop, one that ended after
    still counts (``Ledger.before``).

    ``live``: the jobs SageMaker lists InProgress or Stopping (``admission_view.listed_running``: 2 x
    ceil(running jobs / 100) calls). SageMaker calls: one
    DescribeHyperParameterTuningJob per reservation whose job is not listed (its end time:
    HyperParameterTuningEndTime, else LastModifiedTime); made only when a judgement breaches. A job
    Describe still shows running (the list lags a new job) keeps its reservation. Returns the
    released job keys (empty: nothing to release, or the ledger moved on)."""
    put: dict[str, Reservation] = {}
    remove = expired(ledger, now)
    for key, reservation in sorted(ledger.reservations.items()):
        if key in live or key == job_key:
            continue
        try:
            end = _end_time(services, key, now)
        except JobNotFound:
            remove.append(key)  # deleted: its end unknown, it holds nothing
            continue
        if end is not None:
            put[key] = replace(reservation, ended=end)
    released = sorted([*put, *(k for k in remove if k in ledger.reservations)])
    if not released or not services.store.update_reservations(ledger.version, put, remove):
        return []
    metrics.add_metric(name="ReservationsReleasedBeforeStop", unit=MetricUnit.Count, value=len(released))
    return released


def _end_time(services: EngineServices[LedgerDecisionStore], key: str, now: datetime) -> str | None:
    """When SageMaker says the job ended (ISO), or None while it still runs: one Describe."""
    job = services.store.get_job(key) or {}
    described = services.sagemaker_for(place_in_key(key)).describe_tuning_job(
        str(job.get("job_name") or name_in_key(key))
    )
    if described.status not in TUNING_TERMINAL:
        return None
    return iso_time(described.end_time or described.last_modified_time or now)


def unjudged(
    services: EngineServices[LedgerDecisionStore], listed: Mapping[str, Mapping[str, Any]], ledger: Ledger
) -> list[str]:
    """The jobs SageMaker lists InProgress that were never judged for admission: no reservation in
    ``ledger`` and no admission decision (their arrival event lost, or still in flight), in
    CreationTime order (the order they are to be judged in). One GetItem per job not reserved."""
    names = [rule.name for rule in registry.for_trigger("arrival") if rule.admission_judged]
    found: list[tuple[str, str]] = []
    for key, summary in listed.items():
        if summary.get("HyperParameterTuningJobStatus") != "InProgress" or key in ledger.reservations:
            continue
        if any(services.store.get_decision(key, name, "breach") is not None for name in names):
            continue
        created = summary.get("CreationTime")
        found.append((iso_time(created) if isinstance(created, datetime) else str(created or ""), key))
    return [key for _, key in sorted(found)]


def kept_over_limit(ledger: Ledger, policy: Policy) -> list[str]:
    """Under enforce, the jobs the ledger holds over the limit (admitted so in monitor mode, or exempt
    then), in CreationTime order: each is judged again like an arrival (``admit``), which stops one
    still in breach once and leaves an exempt one be. No SageMaker call of its own."""
    if not policy.enforcing:
        return []
    return [r.job_key for r in sorted(ledger.reservations.values(), key=lambda r: r.order) if r.over_limit]
