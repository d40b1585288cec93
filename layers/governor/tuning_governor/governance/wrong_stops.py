"""A concurrency stop made in error: found right after the stop call, and marked so the job is resumed.

A concurrency stop (on arrival, by the sweep, or of a job displaced in CreationTime order) is judged
on the ledger, checked against SageMaker's list and against what runs when the governor comes to act
(``governance.admission_view``). Between that check and the stop call another job may still end (its
owner stops it, it completes). A stop is *wrong* when, judged on what SageMaker reports at the stop
call (the instances its running tuning jobs hold, plus the stopped job's own demand), the job fitted
the limit.

Right after a concurrency stop that took effect, SageMaker's InProgress and Stopping tuning jobs are
listed once (2 x ceil(running / 100) List calls, per judgement that stopped someone; none when nothing
was stopped) and each stopped job judged again against the reservations of the listed jobs (a
Stopping job still holds its instances; the jobs this judgement stopped hold nothing the ledger
counts). A listed InProgress job the ledger does not hold makes the check inconclusive: the stop
stands (the check only ever resumes a job, so it errs on the side of a right stop).

A wrong stop is marked on its decision record (its ``action_detail`` carries ``WRONG_STOP``); the
queue's hold-don't-kill path (``app.queue.requeue``) resumes its remaining trials by warm start once it
is Stopped, whichever of its Stopped event or the sweep's finaliser comes first, whatever the policy's
``on_over_capacity``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.capacity import Ledger
from tuning_governor.governance.admission_view import Listed, holds_now, listed_running
from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import Decision, registry
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.ports.uses import LedgerDecisionStore

#: The words on a wrong stop's decision record (and its resume's report).
WRONG_STOP = "stopped in error"

Capacity = Callable[[JobFacts, Ledger], CapacityFacts]


def is_wrong_stop(decision: dict[str, Any]) -> bool:
    """Whether a stored decision is a stop marked wrong (``mark_wrong_stops``)."""
    return decision.get("action") == "stopped" and WRONG_STOP in str(decision.get("action_detail") or "")


def _fitted(
    decision: Decision, job: JobFacts, listed: Listed, ledger: Ledger, policy: Policy, capacity: Capacity
) -> str | None:
    """Why the stop of ``job`` was wrong on ``listed`` (SageMaker at the stop call), or None."""
    others = {k: r for k, r in ledger.reservations.items() if k in listed and k != job.job_key}
    unknown = [
        key
        for key, summary in listed.items()
        if key != job.job_key and key not in others and summary.get("HyperParameterTuningJobStatus") == "InProgress"
    ]
    if unknown:
        return None  # a job whose demand the ledger does not know: the stop stands
    room = capacity(job, Ledger(ledger.version, others))
    if holds_now(registry.get(decision.rule), policy, job, room):
        return None
    used = ", ".join(f"{n} {itype}" for itype, n in sorted(room.usage.items())) or "no instances"
    return (
        f"{WRONG_STOP}: at the stop call SageMaker's other running tuning jobs held {used}, and this job's"
        " demand fitted the limit (a job it was judged against ended before the stop)"
    )


def mark_wrong_stops(
    acted: list[tuple[Decision, JobFacts]],
    outcomes: list[dict[str, Any]],
    policy: Policy,
    services: EngineServices[LedgerDecisionStore],
    capacity: Capacity,
) -> list[str]:
    """Judge each concurrency stop just made (``acted`` with its ``outcomes``) on SageMaker's list now;
    mark each wrong one on its decision record. Returns the keys of the jobs marked."""
    stopped = [(d, f) for (d, f), o in zip(acted, outcomes, strict=True) if o.get("action") == "stopped"]
    if not stopped:
        return []
    listed, ledger = listed_running(services), services.store.read_ledger()
    marked: list[str] = []
    for decision, job in stopped:
        why = _fitted(decision, job, listed, ledger, policy, capacity)
        stored = services.store.get_decision(decision.job_key, decision.rule, decision.verdict) if why else None
        if why is None or stored is None or is_wrong_stop(stored):
            continue
        detail = f"{stored.get('action_detail') or ''}; {why}".lstrip("; ")
        services.store.record_decision_action(decision, "stopped", detail)
        metrics.add_metric(name="WrongStopsFound", unit=MetricUnit.Count, value=1)
        logger.warning("concurrency stop made in error; resumed once Stopped", extra={"job": decision.job_name})
        marked.append(decision.job_key)
    return marked
