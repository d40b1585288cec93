"""The queue's use cases: a submission recorded (``submit``), and waiting requests admitted when they
fit (``admit_waiting``), run on every submission and whenever capacity frees (a trial or job ends, the
sweep). docs/explanation/queue.md has the design.

Admission, per request the scheduler proposes: claim it (conditional, with a lease) -> check its
execution roles against the team's policy -> reserve its capacity through the ledger (serialized with
every arrival: ``governance.admission.reserve``) -> CreateHyperParameterTuningJob under its derived
name -> mark it admitted -> report. A crash anywhere leaves the claim to lapse; the next pass finds the
reservation held and Create answers "exists" for the name, so the job is created once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.app.queue.plan import account_limits, plan_decisions, queue_types
from tuning_governor.app.queue.requests import (
    Submission,
    build_entry,
    governed_tags_of,
    plans_of,
    shape_problem,
    warm_start_refusal,
)
from tuning_governor.app.queue.shares import borrower_progress, preempt, recorded_borrowing, with_parallel
from tuning_governor.domain.capacity import Holder
from tuning_governor.domain.job import iso_time
from tuning_governor.domain.queue_on_shares import shares_refusal
from tuning_governor.domain.queue_reports import QueueEvent, queue_report
from tuning_governor.domain.queue_schedule import QueueDecision, Scheduler, fifo_schedule
from tuning_governor.errors import RejectedEvent
from tuning_governor.governance.admission import reserve
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.reporting import deliver
from tuning_governor.models.queue import QueuedRequest
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy
from tuning_governor.ports.submissions import Principals, StoppedJobs, TuningJobLauncher
from tuning_governor.ports.uses import QueueingStore  # at run time: scripts/metric_docs reads report_event's hints

#: Longer than the consumer's timeout: a claim lapses only once its owner cannot still be running.
CLAIM_LEASE = timedelta(minutes=5)


@dataclass
class QueueServices:
    """The submission path's own ports, beside the governor's services."""

    launcher: TuningJobLauncher
    principals: Principals
    scheduler: Scheduler = field(default=fifo_schedule)
    stopped_jobs: StoppedJobs | None = None
    """Reads a stopped job for ``on_over_capacity: requeue`` (None: nothing is requeued)."""
    name_key: str = ""
    """The stack's secret name key (Lambda: read from its secret once per cold start), so nobody else
    can compute a queued job's name; empty offline, where names are the plain recipe."""


def report_event(
    services: EngineServices[QueueingStore],
    policy: Policy,
    entry: QueuedRequest,
    event: QueueEvent,
    reason: str,
    **kw: Any,
) -> None:
    report = queue_report(entry, event, reason, **kw)
    deliver(report, services.store, services.notifiers_for(report, policy), services.clock)
    metrics.add_metric(name=f"Queue{event.capitalize()}", unit=MetricUnit.Count, value=1)


def submit(submission: Submission, services: EngineServices[QueueingStore], queue: QueueServices) -> dict[str, Any]:
    """Record a submission and admit what fits. A sender who is no listed submitter, or a message that
    cannot be read, raises RejectedEvent (dropped, logged and counted: there is no owner to tell); a
    listed submitter's request that can never be created is refused and its owner told. Redelivered
    (the same token), a request still queued is refused or reported queued again: a first delivery may
    have crashed before either (reports go once per channel, so nobody is told twice)."""
    policy = services.policy()
    entry = build_entry(
        submission, policy, queue.principals, services.clock(), services.settings.owner_tag, queue.name_key
    )
    stored, new = services.store.enqueue(entry)
    if not new and _canonical(stored.request) != _canonical(entry.request):
        return _token_taken(services, policy, entry, stored, submission.message_id)
    refusal = _refusal(stored, policy, queue)
    # Also on a redelivery: a first delivery may have enqueued it and crashed before refusing it.
    if refusal and stored.state == "queued":
        _refuse(services, policy, stored, refusal)
        return {"outcome": "refused", "job_name": stored.job_name}
    if stored.state == "queued":
        waiting = [e.job_name for e in services.store.waiting_requests()]
        position = waiting.index(stored.job_name) + 1 if stored.job_name in waiting else len(waiting) + 1
        report_event(
            services, policy, stored, "queued", f"Team {stored.team}, priority {stored.priority}.", position=position
        )
    outcomes = admit_waiting(services, queue)
    return {"outcome": "queued" if new else "duplicate", "job_name": stored.job_name, "admitted": outcomes}


def _canonical(request: dict[str, Any]) -> str:
    return json.dumps(request, sort_keys=True, default=str)


def _token_taken(
    services: EngineServices[QueueingStore],
    policy: Policy,
    entry: QueuedRequest,
    stored: QueuedRequest,
    message_id: str,
) -> dict[str, Any]:
    """Another request (another sender's, or the same sender's changed one) under a token in use: its
    sender is told, once per message, and nothing else happens."""
    reason = (
        f"Sent by {entry.owner or entry.submitter}: the token {entry.client_token} already names {stored.job_name}, by"
        f" {stored.owner or stored.submitter} at {iso_time(stored.enqueued_at)} ({stored.state});"
        " send again with a token of your own."
    )
    report_event(services, policy, entry, "conflict", reason, once_per=message_id or entry.owner)
    return {"outcome": "token-taken", "job_name": stored.job_name}


def _refusal(entry: QueuedRequest, policy: Policy, queue: QueueServices) -> str | None:
    """Why a submitted request can never be created, known before it waits (None: it may wait): its
    shape (SageMaker's API model, then ours), an execution role the team does not list, no instances."""
    problem = queue.launcher.request_problem(entry.request) or shape_problem(entry.request)
    if problem:
        return problem
    unlisted = policy.passes_roles(entry.team, _roles(entry.request))
    if unlisted:
        return _unlisted_reason(entry, unlisted)
    if not entry.demand:
        return "the request names no instance type and count (TrainingJobDefinition(s).ResourceConfig)"
    return warm_start_refusal(entry.request, entry.team, policy.team_tag, queue.launcher)


def _holdings(services: EngineServices[QueueingStore], waiting: set[str]) -> list[Holder]:
    """What holds instances, but not the reservations of waiting requests themselves (one whose
    admission crashed after reserving is still waiting: counted twice, it would never fit again)."""
    held = [h for h in services.store.read_ledger().holders() if h.key not in waiting]
    return held + services.store.holders(tuning_jobs=False)


def admit_waiting(services: EngineServices[QueueingStore], queue: QueueServices) -> list[dict[str, Any]]:
    """One pass over the queue: expire requests past their wait, then admit, refuse or leave waiting
    what the scheduler proposes, in its order. Safe to run concurrently (claims and the ledger decide)."""
    policy, now = services.policy(), services.clock()
    live: list[QueuedRequest] = []
    for entry in services.store.waiting_requests():
        if entry.state == "queued" and entry.wait_until is not None and now > entry.wait_until:
            minutes = (entry.wait_until - entry.enqueued_at).total_seconds() / 60
            if services.store.finish_request(entry.job_name, "expired", f"waited {minutes:g} minutes", now):
                report_event(services, policy, entry, "expired", f"Not admitted within {minutes:g} minutes.")
            continue
        live.append(entry)
    if not live:
        return []  # nothing waits: no ledger or holder reads (most job and trial ends)
    capacity = account_limits(policy, services.quotas, queue_types(policy, live))
    by_name = {e.job_name: e for e in live}
    outcomes: list[dict[str, Any]] = []
    holdings = _holdings(services, {e.job_name.lower() for e in live})
    borrowed = recorded_borrowing(services, holdings, set(policy.shares()))
    progress = borrower_progress(services, holdings, policy)
    decisions = plan_decisions(
        policy, live, holdings, capacity, now, borrowed=borrowed, progress=progress, scheduler=queue.scheduler
    )
    for decision in decisions:
        if decision.verdict == "preempt":
            outcomes.append(preempt(services, policy, decision))
        elif decision.verdict == "refuse":
            outcomes.append(_refuse(services, policy, by_name[decision.job_name], decision.reason))
        elif decision.verdict == "admit":
            outcomes.append(_admit(services, queue, policy, by_name[decision.job_name], decision, capacity))
    return outcomes


def _refuse(
    services: EngineServices[QueueingStore], policy: Policy, entry: QueuedRequest, reason: str
) -> dict[str, Any]:
    if services.store.finish_request(entry.job_name, "refused", reason, services.clock()):
        report_event(services, policy, entry, "refused", reason)
    return {"job_name": entry.job_name, "outcome": "refused", "reason": reason}


def _admit(
    services: EngineServices[QueueingStore],
    queue: QueueServices,
    policy: Policy,
    entry: QueuedRequest,
    decision: QueueDecision,
    capacity: Mapping[str, int],
) -> dict[str, Any]:
    owner, now = uuid.uuid4().hex, services.clock()
    if not services.store.claim_request(entry.job_name, owner, now, now + CLAIM_LEASE):
        return {"job_name": entry.job_name, "outcome": "claimed-elsewhere"}
    request = with_parallel(entry.request, decision.max_parallel)
    plans, slots = plans_of(request)
    unlisted = policy.passes_roles(entry.team, _roles(entry.request))
    if unlisted:  # the policy may have changed since the submission
        return _refuse(services, policy, entry, _unlisted_reason(entry, unlisted))
    terms = policy.shares()
    also = (lambda held: shares_refusal(entry, decision.max_parallel, held, terms, capacity)) if terms else None
    reservation, breaches = reserve(entry.job_name.lower(), entry.team, plans, slots, policy, services, also)
    if reservation is None:
        services.store.release_request(entry.job_name, owner)
        return {"job_name": entry.job_name, "outcome": "waiting", "reason": "; ".join(breaches)}
    try:
        created = queue.launcher.create_tuning_job(request)
    except RejectedEvent as exc:
        services.store.release_reservation(entry.job_name.lower(), iso_time(services.clock()))
        return _refuse(services, policy, entry, exc.reason)
    conflict = _name_conflict(services, queue, entry, request) if created == "exists" else None
    if conflict:
        return _refuse(services, policy, entry, conflict)
    reason = f"created on {reservation.plan} ({'created' if created == 'created' else 'found created by an earlier attempt'})"
    if decision.reason.startswith("admitted"):  # the shares core's: on its share, borrowing, fitted
        reason += f"; {decision.reason}"
    if services.store.finish_request(entry.job_name, "admitted", reason, services.clock(), decision.borrowed):
        report_event(services, policy, entry, "admitted", f"Tuning job {entry.job_name} {reason}.")
    logger.info("queued request admitted", extra={"job": entry.job_name, "team": entry.team, "create": created})
    return {"job_name": entry.job_name, "outcome": "admitted", "create": created}


def _name_conflict(
    services: EngineServices[QueueingStore], queue: QueueServices, entry: QueuedRequest, request: dict[str, Any]
) -> str | None:
    """Why the job SageMaker has under the request's name is not the request's own (None: it carries
    the team, owner and token tags the request was created with: an earlier attempt created it). Its
    reservation is given back unless the governor knows the job as running (then the arrival's
    judgement holds it); the conflict is counted (metric ``QueueNameConflicts``, alarmed) and logged."""
    wanted = governed_tags_of(request, services.policy().team_tag, services.settings.owner_tag)
    found = queue.launcher.job_tags(entry.job_name) or {}
    differ = sorted(k for k, v in wanted.items() if found.get(k) != v)
    if not differ:
        return None
    key = entry.job_name.lower()
    if services.store.get_job(key) is None:
        services.store.release_reservation(key, iso_time(services.clock()))
    metrics.add_metric(name="QueueNameConflicts", unit=MetricUnit.Count, value=1)
    logger.warning("queued job name taken", extra={"job": entry.job_name, "team": entry.team, "differ": differ})
    return (
        f"name conflict: a tuning job named {entry.job_name} exists that this request did not create"
        f" (its {', '.join(differ)} tags differ); nothing was created for it, send it again with a new token"
    )


def _definitions(request: dict[str, Any]) -> list[dict[str, Any]]:
    single = request.get("TrainingJobDefinition")
    many = request.get("TrainingJobDefinitions") or []
    return ([single] if isinstance(single, dict) else []) + [d for d in many if isinstance(d, dict)]


def _roles(request: dict[str, Any]) -> list[str]:
    """Every execution role the request would pass (a definition without one: ``"(none)"``, never listed)."""
    return sorted({str(d.get("RoleArn") or "(none)") for d in _definitions(request)}) or ["(none)"]


def _unlisted_reason(entry: QueuedRequest, unlisted: list[str]) -> str:
    return f"execution role {', '.join(unlisted)} is not listed in teams.{entry.team}.execution_roles"
