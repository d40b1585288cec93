"""A tuning job the governor stopped to make room is queued again, as the request that resumes it
(``domain.resume.plan_resume``: a warm start from it when it had completed trials, the remaining trial
budget, a unique traceable name), in its team's queue, and its owner told "<how> and queued as <name>"
(docs/explanation/queue.md, "Integration: the queue on the shares core"). Three stops qualify:

- a preemption by the queue (rule ``queue-preempt``: a borrower stopped to give a lender its share
  back), always: issue 20's "no finished trial is wasted";
- a stop for room by a rule whose spec says so (``requeued_as``: concurrency, on arrival), when the
  policy says ``defaults.on_over_capacity: requeue``;
- a concurrency stop made in error (``governance.wrong_stops``: on SageMaker's list at the stop call the
  job fitted), whatever the policy: its owner is told "<name> was stopped in error: resumed as <new>",
  its decision record says so too, and ``WrongStopsResumed`` counts it.

It runs once the job is Stopped (only a Stopped job can be a warm-start parent, and a
StopHyperParameterTuningJob call only starts the stop), from whichever sees that first: its ``Stopped``
event at the queue consumer or at the tuning-events function, or the sweep finalising a job whose
Stopped event was lost. Exactly once whichever comes first and whatever arrives later: the requeue is
claimed per stopped job (``DELIVERY#requeue#queue`` on its partition) before the queue entry is written,
and a requeue already made costs one GetItem, no SageMaker call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.app.queue.admission import report_event
from tuning_governor.app.queue.requests import demand_of, queue_terms, with_token
from tuning_governor.app.queue.shares import PREEMPT_RULE
from tuning_governor.domain.resume import ResumeRefused, StoppedJob, plan_resume
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import Decision
from tuning_governor.governance.wrong_stops import WRONG_STOP, is_wrong_stop
from tuning_governor.models.queue import QueuedRequest
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy
from tuning_governor.policy.rules import specs
from tuning_governor.ports.submissions import StoppedJobs

if TYPE_CHECKING:
    from tuning_governor.ports.uses import QueueingStore

SUBMITTER = "tuning-governor (on_over_capacity: requeue)"
WRONG_STOP_SUBMITTER = f"tuning-governor ({WRONG_STOP})"

#: The claim that makes a stopped job's requeue happen once (a delivery claim on the stopped job).
REQUEUE_CLAIM = ("requeue", "queue")


#: How each stop that is requeued is told: a preemption, and the stops of the rules that declare it.
HOW = {PREEMPT_RULE: "preempted"} | {spec.name: spec.requeued_as for spec in specs if spec.requeued_as}


def _our_stop(services: EngineServices[QueueingStore], policy: Policy, key: str) -> dict[str, Any] | None:
    """The governor's stop of ``key`` that calls for a resume (a preemption; a stop on arrival under
    ``on_over_capacity: requeue``; a concurrency stop made in error, ``governance.wrong_stops``), or None."""
    for decision in services.store.decisions(key):
        if decision.get("action") != "stopped":
            continue
        rule = decision.get("rule")
        if rule == PREEMPT_RULE or (rule in HOW and policy.defaults.on_over_capacity == "requeue"):
            return decision
        if rule in HOW and is_wrong_stop(decision):
            return decision  # a concurrency stop found wrong at the stop call: resumed whatever the policy
    return None


def requeue_stopped(
    name: str,
    services: EngineServices[QueueingStore],
    reader: StoppedJobs | None,
    name_key: Callable[[], str] | None = None,
) -> dict[str, Any] | None:
    """Queue ``name`` again, once, when the governor stopped it to make room (a preemption; a stop on
    arrival for concurrency with ``on_over_capacity: requeue``); None when neither applies or there is
    no ``reader`` to describe it with. ``name_key`` gives the stack's secret name key (read only when a
    job is requeued), so the resumed job's name is one nobody else can compute (``domain.resume``)."""
    if reader is None:
        return None
    policy, key = services.policy(), name.lower()
    decision = _our_stop(services, policy, key)
    if decision is None:
        return None
    store, now = services.store, services.clock()
    if store.delivery_sent(key, *REQUEUE_CLAIM) or not store.claim_delivery(key, *REQUEUE_CLAIM, now):
        return {"job_name": name, "outcome": "duplicate", "from": name}
    try:
        outcome = _requeue(name, decision, services, policy, reader, name_key() if name_key else "")
    except Exception:
        store.finish_delivery(key, *REQUEUE_CLAIM, now, sent=False)  # the next attempt takes it again
        raise
    store.finish_delivery(key, *REQUEUE_CLAIM, services.clock(), sent=True)
    return outcome


def _requeue(
    name: str,
    decision: dict[str, Any],
    services: EngineServices[QueueingStore],
    policy: Policy,
    reader: StoppedJobs,
    name_key: str,
) -> dict[str, Any]:
    describe, tags = reader.describe_for_resume(name)
    plan = plan_resume(StoppedJob(describe=describe, tags=tags), name_key=name_key)
    if isinstance(plan, ResumeRefused):
        logger.info("stopped job not requeued", extra={"job": name, "reason": plan.reason})
        return {"job_name": name, "outcome": "not-requeued", "reason": plan.reason}
    team = decision.get("team") or tags.get(policy.team_tag)  # the team the governor judged it for
    if not team:
        return {"job_name": name, "outcome": "not-requeued", "reason": "the job names no team"}
    now = services.clock()
    priority, wait_until = queue_terms(policy, str(team), now)
    entry = QueuedRequest(
        client_token=plan.name,
        team=str(team),
        submitter=WRONG_STOP_SUBMITTER if is_wrong_stop(decision) else SUBMITTER,
        owner=tags.get(services.settings.owner_tag),
        job_name=plan.name,
        request=with_token(plan.request, str(team), plan.name, name_key),
        demand=demand_of(plan.request),
        priority=priority,
        enqueued_at=now,
        wait_until=wait_until,
    )
    stored, new = services.store.enqueue(entry)
    if new:
        how = f"warm-starting from {', '.join(plan.parents)}" if plan.parents else "no trial had completed"
        told = _told(name, decision, plan.name, services)
        report_event(services, policy, stored, "queued", f"{told} ({plan.remaining_trials} trials left; {how}).")
    return {"job_name": plan.name, "outcome": "requeued" if new else "duplicate", "from": name}


def _told(name: str, decision: dict[str, Any], resumed: str, services: EngineServices[QueueingStore]) -> str:
    """What the owner is told of the requeue; a wrong stop's decision record says what resumed it."""
    if not is_wrong_stop(decision):
        return f"{name} was {HOW[str(decision['rule'])]} and queued as {resumed}"
    told = f"{name} was {WRONG_STOP}: resumed as {resumed}"
    stored = Decision.model_validate(decision | {"job_key": name.lower()})
    services.store.record_decision_action(stored, "stopped", f"{decision.get('action_detail')}; {told}")
    metrics.add_metric(name="WrongStopsResumed", unit=MetricUnit.Count, value=1)
    return told
