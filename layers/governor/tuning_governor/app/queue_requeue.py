"""``defaults.on_over_capacity: requeue``: a tuning job the governor stopped on arrival for
concurrency is queued again, as the request that resumes it (``domain.resume.plan_resume``: a warm
start from it when it had completed trials, the remaining trial budget, a unique traceable name), in
its team's queue, and its owner told "stopped on arrival and queued as <name>" (docs/queue.md,
"Integration: the queue on the shares core").

It runs when the job's ``Stopped`` event reaches the queue consumer: only a Stopped job can be a
warm-start parent, and a StopHyperParameterTuningJob call only starts the stop. Idempotent: the
resumed name is the same for the same stopped job, and the queue keeps one entry per name.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tuning_governor.app.queue_admission import QueueServices, report_event
from tuning_governor.app.queue_requests import demand_of
from tuning_governor.domain.resume import ResumeRefused, StoppedJob, plan_resume
from tuning_governor.governance.ports import EngineServices
from tuning_governor.models.queue import QueuedRequest
from tuning_governor.observability import logger

ARRIVAL_RULE = "concurrency"
SUBMITTER = "tuning-governor (on_over_capacity: requeue)"


def _stopped_on_arrival(services: EngineServices, key: str) -> dict[str, Any] | None:
    for decision in services.store.decisions(key):
        if decision.get("rule") == ARRIVAL_RULE and decision.get("action") == "stopped":
            return decision
    return None


def requeue_stopped(name: str, services: EngineServices, queue: QueueServices) -> dict[str, Any] | None:
    """Queue ``name`` again when the policy says ``requeue`` and the governor stopped it on arrival
    for concurrency; None when neither applies."""
    policy = services.policy()
    reader = queue.stopped_jobs
    if policy.defaults.on_over_capacity != "requeue" or reader is None:
        return None
    decision = _stopped_on_arrival(services, name.lower())
    if decision is None:
        return None
    describe, tags = reader.describe_for_resume(name)
    plan = plan_resume(StoppedJob(describe=describe, tags=tags))
    if isinstance(plan, ResumeRefused):
        logger.info("stopped job not requeued", extra={"job": name, "reason": plan.reason})
        return {"job_name": name, "outcome": "not-requeued", "reason": plan.reason}
    team = tags.get(policy.team_tag) or decision.get("team")
    if not team:
        return {"job_name": name, "outcome": "not-requeued", "reason": "the job names no team"}
    now = services.clock()
    wait = policy.teams[team].max_wait_minutes if team in policy.teams else 0
    entry = QueuedRequest(
        client_token=plan.name,
        team=str(team),
        submitter=SUBMITTER,
        owner=tags.get(services.settings.owner_tag),
        job_name=plan.name,
        request=plan.request,
        demand=demand_of(plan.request),
        priority=policy.teams[team].request_priority() if team in policy.teams else 0,
        enqueued_at=now,
        wait_until=now + timedelta(minutes=wait) if wait else None,
    )
    stored, new = services.store.enqueue(entry)
    if new:
        how = f"warm-starting from {', '.join(plan.parents)}" if plan.parents else "no trial had completed"
        reason = (
            f"{name} was stopped on arrival and queued as {plan.name} ({plan.remaining_trials} trials left; {how})."
        )
        report_event(services, policy, stored, "queued", reason)
    return {"job_name": plan.name, "outcome": "requeued" if new else "duplicate", "from": name}
