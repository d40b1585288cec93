"""What a claimed decision does, each step once: the stop, then its report on every channel."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.breakdowns import account_stopped, rule_decided, rule_stopped
from tuning_governor.domain.job import JobState, job_state
from tuning_governor.domain.reports import decision_fields, decision_report
from tuning_governor.errors import GovernorError, TransientError
from tuning_governor.governance import grace
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.fresh import PASSED, Fresh, not_running, read_fresh, rejudged, would_stop
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.reporting import all_delivered, deliver
from tuning_governor.governance.rules import Decision
from tuning_governor.models.keys import job_key_of
from tuning_governor.models.place import place_in_key
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy
from tuning_governor.policy.accounts import under_job_terms
from tuning_governor.policy.routing import owner_handles

if TYPE_CHECKING:
    from tuning_governor.ports.uses import ActingStore


def enforce(
    decision: Decision,
    tags: dict[str, str],
    policy: Policy,
    services: EngineServices[ActingStore],
    fresh: Fresh | None = None,
) -> tuple[str, str]:
    """What a claimed decision does to its job: stop it (enforce), or only say so. (action, detail).

    Before a stop call, SageMaker's status and tags of the job (``fresh``: as the caller read them just
    before its claim, else read now): an exemption tagged since wins, and a job SageMaker no longer runs
    (its owner stopped it first) is recorded as such, never as stopped by the governor. Makes the stop
    call only; the caller records the step (``record_stop``). Under the terms of the job's account: a
    member in monitor mode (``accounts.<id>.mode``) is never stopped, whichever path decided."""
    policy = under_job_terms(policy, decision.job_key, services.home)
    if decision.verdict == grace.GRACE:
        stop_at = decision.numbers.get("stop_at")
        when = "will stop" if policy.mode == "enforce" else "monitor mode: would stop"
        return grace.GRACE, f"{when} at {stop_at} if the breach still holds"
    if decision.verdict == PASSED:
        return PASSED, "the breach no longer held when the governor came to act: no stop call made"
    if not decision.wants_stop:
        return "warned", "reported only"
    if policy.is_exempt(tags):
        return "exempt", f"tag {policy.exempt_tag}=true; would have stopped"
    if policy.mode != "enforce":
        return "would-stop", "monitor mode: no stop call made"
    return _stop(decision, policy, services, fresh)


def _stop(
    decision: Decision, policy: Policy, services: EngineServices[ActingStore], fresh: Fresh | None
) -> tuple[str, str]:
    """The stop call, on SageMaker's facts of now. A decision resumed from its stored row (no ``fresh``
    from the claim) may have made its stop already, its record lost: a job Stopping then may be its own
    doing, so only a first attempt tells the owner's stop from its own."""
    first = fresh is not None
    place = place_in_key(decision.job_key)
    fresh = fresh or read_fresh(services, decision.job_name, place)
    if fresh.tags is not None and policy.is_exempt(fresh.tags):
        return "exempt", f"tag {policy.exempt_tag}=true (read from SageMaker before the stop); would have stopped"
    if first and fresh.status != "InProgress":
        return not_running(fresh.status)
    result = services.sagemaker_for(place).stop_tuning_job(decision.job_name)
    if first and result in {"already-stopping", "already-ended"}:
        # Someone else's stop landed between the read and ours.
        return not_running("Stopping" if result == "already-stopping" else "ended")
    metrics.add_metric(name="JobsStopped", unit=MetricUnit.Count, value=1)
    rule_stopped(decision.rule)
    where = place or services.home
    if where is not None:
        account_stopped(where.account, where.region)
    return ("stopped" if result in {"stop-requested", "already-stopping"} else result), result


def stop_step(
    decision: Decision,
    stored: dict[str, Any],
    tags: dict[str, str],
    policy: Policy,
    services: EngineServices[ActingStore],
    fresh: Fresh | None = None,
) -> tuple[str, str]:
    """The decision's stop step, once: the action a failed attempt already recorded, or enforce and
    record it now. Only a stop that took effect marks the job (``stop_requested_at``): it separates
    our stop from early stopping."""
    if stored.get("action") is not None:
        return str(stored["action"]), str(stored.get("action_detail") or "")
    action, detail = enforce(decision, tags, policy, services, fresh)
    services.store.record_decision_action(
        decision, action, detail, stop_requested_at=decision.at if action == "stopped" else None
    )
    return action, detail


#: How often taking a lease is tried in place: its answer lost after the write, the same token takes
#: it again (nobody else can have it); handed to a retry, a new token would wait for it to run out.
LEASE_ATTEMPTS = 4
LEASE_BACKOFF_S = 0.05


def take_lease[T](take: Callable[[], T], give_back: Callable[[], None]) -> T:
    """``take()`` (a lease write under one token), tried in place while it fails with a TransientError;
    after the last failure the lease is given back (it may have been written) and the failure raised."""
    pause = LEASE_BACKOFF_S
    for _ in range(LEASE_ATTEMPTS - 1):
        try:
            return take()
        except TransientError:
            metrics.add_metric(name="LeaseWritesRetried", unit=MetricUnit.Count, value=1)
            time.sleep(pause)
            pause *= 2
    try:
        return take()
    except TransientError:
        with contextlib.suppress(GovernorError):
            give_back()
        raise


def lease_job_decision(
    services: EngineServices[ActingStore], job_key: str, rule: str, verdict: str, token: str
) -> dict[str, Any] | None:
    """A job's pending decision leased to ``token`` (its stored row), or None (see ``lease_decision``)."""
    return take_lease(
        lambda: services.store.lease_decision(job_key, rule, verdict, token, services.clock()),
        lambda: services.store.release_decision(job_key, rule, verdict, token),
    )


def resume_decision(
    stored: dict[str, Any],
    tags: dict[str, str],
    policy: Policy,
    services: EngineServices[ActingStore],
    fresh: Fresh | None = None,
) -> dict[str, Any]:
    """Carry out a claimed decision's steps from its stored row, each once: the stop, then its report
    on every channel (built from the stored action, detail and figures, so a retry sends what the
    first attempt would have). The decision is done only when every step is; a channel that fails
    raises ``DeliveryFailed`` (the event is retried) and one still in flight leaves it pending for
    the sweep (``resume_stale``).

    The steps have one owner at a time, whatever the concurrency: the caller first leases the decision
    under a token of its own (``lease_decision``); a decision another caller is carrying out is left
    to it (action ``in-progress``, no Stop call, no report). A lease not finished is given back, so a
    retry need not wait for it to run out; a crashed owner's lease runs out (``DECISION_LEASE``)."""
    job_key, rule, verdict = job_key_of(stored["pk"]), str(stored["rule"]), str(stored["verdict"])
    token = uuid.uuid4().hex
    leased = lease_job_decision(services, job_key, rule, verdict, token)
    if leased is None:
        metrics.add_metric(name="DecisionsInProgressElsewhere", unit=MetricUnit.Count, value=1)
        mode = str(stored.get("mode") or policy.mode)
        return {"rule": rule, "verdict": verdict, "mode": mode, "action": "in-progress", "at": stored.get("at")}
    outcome: dict[str, Any] = {"pending": True}
    try:
        outcome = _carry_out(leased, tags, policy, services, fresh)
        return outcome
    finally:
        if outcome.get("pending"):
            with contextlib.suppress(GovernorError):
                services.store.release_decision(job_key, rule, verdict, token)


def _carry_out(
    stored: dict[str, Any],
    tags: dict[str, str],
    policy: Policy,
    services: EngineServices[ActingStore],
    fresh: Fresh | None,
) -> dict[str, Any]:
    """A leased decision's steps (see :func:`resume_decision`)."""
    decision = Decision.model_validate(stored | {"job_key": job_key_of(stored["pk"])})
    mode = str(stored.get("mode") or policy.mode)
    first = stored.get("action") is None
    action, detail = stop_step(decision, stored, tags, policy, services, fresh)
    if first:
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
        fields = decision_fields(
            decision, mode=mode, action=action, detail=detail, owner=owner, handles=owner_handles(policy, owner)
        )
        report = decision_report(**fields)
        delivered = all_delivered(
            deliver(report, services.store, services.notifiers_for(report, policy), services.clock)
        )
    if delivered:
        services.store.finish_decision(decision, action, detail)
    outcome = {"rule": decision.rule, "verdict": decision.verdict, "mode": mode, "action": action, "at": decision.at}
    return outcome if delivered else outcome | {"pending": True}


def act(decision: Decision, job: JobFacts, policy: Policy, services: EngineServices[ActingStore]) -> dict[str, Any]:
    """Claim the decision once, then carry out its steps (stop, reports); a retry resumes them.

    A decision that would stop the job is first judged on SageMaker's facts of now (``governance.fresh``:
    one GetItem: only a decision not claimed yet, then one Describe and one ListTags): a breach its fresh
    tags clear is recorded as ``passed`` instead, and the stop step uses the status read (a job its
    owner stopped first is recorded as such). A claimed decision resumed reads them in its stop step."""
    fresh = None
    store = services.store
    if (
        would_stop(decision, job.tags, policy)
        and store.get_decision(decision.job_key, decision.rule, decision.verdict) is None
    ):
        fresh = read_fresh(services, decision.job_name, place_in_key(decision.job_key))
        decision, job = rejudged(decision, job, fresh, policy, services)
    stored = services.store.open_decision(decision, policy.mode, services.clock())
    if stored is None:
        return {
            "rule": decision.rule,
            "verdict": decision.verdict,
            "mode": policy.mode,
            "action": "already-decided",
            "at": decision.at,
        }
    return resume_decision(stored, job.tags, policy, services, fresh)


def resume_job(job_key: str, job: JobState | None, services: EngineServices[ActingStore]) -> list[dict[str, Any]]:
    """Finish the steps a failed attempt left pending on one job's decisions (a redelivered event's
    first move: whatever it then judges, what was started is finished first)."""
    pending = services.store.pending_decisions(job_key)
    if not pending:
        return []
    policy = services.policy()
    tags = job.tags if job is not None else {}
    return [resume_decision(stored, tags, policy, services) for stored in pending]


# A step pending this long was left by an attempt that failed and was not retried (or whose claim on
# a channel lapsed): one sweep interval, and the delivery claim timeout.
STEP_TIMEOUT = timedelta(minutes=5)


def resume_stale(services: EngineServices[ActingStore], now: datetime) -> list[dict[str, Any]]:
    """The sweep's pass over decisions left pending longer than ``STEP_TIMEOUT`` (one gsi1 Query, one
    GetItem per job for its tags). A failure on one is logged and counted; the others still resume."""
    outcomes: list[dict[str, Any]] = []
    policy = services.policy()
    for stored in services.store.stale_pending_decisions(now - STEP_TIMEOUT):
        job_key = job_key_of(stored["pk"])
        try:
            job = job_state(services.store.get_job(job_key))
            outcome = resume_decision(stored, job.tags if job is not None else {}, policy, services)
        except GovernorError as exc:
            metrics.add_metric(name="StepResumeFailures", unit=MetricUnit.Count, value=1)
            logger.warning("pending decision not finished", extra={"job": job_key, "error": type(exc).__name__})
            continue
        if outcome.get("pending"):
            # A report the delivery step still could not send, a step older than STEP_TIMEOUT: alarmed.
            metrics.add_metric(name="ReportsOverdue", unit=MetricUnit.Count, value=1)
        outcomes.append(outcome | {"job": job_key})
    return outcomes
