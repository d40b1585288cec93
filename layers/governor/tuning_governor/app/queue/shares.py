"""The admission loop's shares path (docs/explanation/queue.md, "Integration: the queue on the shares core"):
when the policy gives any team a ``share``, waiting requests are decided by the shares core
(``domain.queue_on_shares``), admissions record what they borrowed, and a preemption the core asks for
(only ever of a team whose share says ``preemption: allowed``) is a decision of rule ``queue-preempt``
claimed once and carried out through the governor's stop path (``governance.actions``: monitor mode
and the exemption tag apply; the stop is recorded, so the job's end is known as ours and the queue
consumer re-queues it as a warm start, ``app.queue.requeue``), reported to the stopped job's owner
when it came from the queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tuning_governor.domain.capacity import Holder
from tuning_governor.domain.job import job_state
from tuning_governor.domain.queue_on_shares import Progress
from tuning_governor.domain.queue_reports import queue_report
from tuning_governor.domain.queue_schedule import QueueDecision
from tuning_governor.governance.actions import resume_decision
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.reporting import deliver
from tuning_governor.models.decisions import Decision
from tuning_governor.models.queue import QueuedRequest
from tuning_governor.observability import logger
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.ports.uses import SharesStore

PREEMPT_RULE = "queue-preempt"


def recorded_borrowing(
    services: EngineServices[SharesStore], holders: Sequence[Holder], teams: set[str]
) -> dict[str, dict[str, int]]:
    """What each queued-and-admitted job of a team with a share recorded as borrowed, by holder key."""
    out: dict[str, dict[str, int]] = {}
    for holder in holders:
        if holder.kind != "tuning-job" or holder.team not in teams:
            continue
        entry = services.store.get_request(holder.key)
        if entry is not None and entry.borrowed:
            out[holder.key] = dict(entry.borrowed)
    return out


def borrower_progress(
    services: EngineServices[SharesStore], holders: Sequence[Holder], policy: Policy
) -> dict[str, Progress]:
    """Per running tuning job of a team whose share may be preempted: (completed trials, resumable), from
    the governor's job item (trials recorded less failed; launched = recorded + running, against
    MaxNumberOfTrainingJobs). Preemption stops the fewest completed first and never a job that has
    launched its whole budget. One GetItem per such job; none when no share allows preemption."""
    preemptible = {team for team, terms in policy.shares().items() if terms.preemptible}
    out: dict[str, Progress] = {}
    for holder in holders:
        if holder.kind != "tuning-job" or holder.team not in preemptible:
            continue
        job = job_state(services.store.get_job(holder.key))
        if job is None:
            continue
        launched = job.trials_recorded + len(job.running)
        out[holder.key] = (job.trials_recorded - job.trials_failed, job.max_trials is None or launched < job.max_trials)
    return out


def with_parallel(request: dict[str, Any], parallel: int | None) -> dict[str, Any]:
    """The request with HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs lowered to ``parallel`` (None: as asked)."""
    if parallel is None:
        return request
    config = dict(request.get("HyperParameterTuningJobConfig") or {})
    config["ResourceLimits"] = dict(config.get("ResourceLimits") or {}) | {"MaxParallelTrainingJobs": parallel}
    return request | {"HyperParameterTuningJobConfig": config}


def _tags(entry: QueuedRequest | None) -> dict[str, str]:
    tags = entry.request.get("Tags") if entry is not None else None
    return {str(t.get("Key")): str(t.get("Value")) for t in tags or [] if isinstance(t, dict)}


def preempt(services: EngineServices[SharesStore], policy: Policy, decision: QueueDecision) -> dict[str, Any]:
    """Stop the borrowing job ``decision.job_name`` to give a lender its share back, and tell its owner.

    Claimed once per job (``open_decision``): a pass while the job is still stopping neither calls
    StopHyperParameterTuningJob again nor tells its owner again."""
    entry = services.store.get_request(decision.job_name)
    name = entry.job_name if entry is not None else decision.job_name
    if services.store.get_job(name.lower()) is None:
        # Its creation event has not been handled yet: the stop could not be recorded as ours. The
        # lender keeps waiting; the pass after the event (or the sweep) preempts it.
        logger.info("queue preemption deferred: job not yet registered", extra={"job": name})
        return {"job_name": name, "outcome": "preempt-deferred", "for": decision.for_key}
    stop = Decision(
        rule=PREEMPT_RULE,
        verdict="enforced",
        job_key=name.lower(),
        job_name=name,
        team=entry.team if entry is not None else None,
        message=decision.reason,
        numbers={"for": decision.for_key},
        at=services.clock(),
    )
    stored = services.store.open_decision(stop, policy.mode, services.clock(), own_report=False)
    if stored is None:
        return {"job_name": name, "outcome": "already-preempted", "for": decision.for_key}
    outcome = resume_decision(stored, _tags(entry), policy, services)
    action = str(outcome["action"])
    logger.info("queue preemption", extra={"job": name, "for": decision.for_key, "action": action})
    if entry is not None and action != "in-progress":
        text = f"Preempted ({action}) to give capacity back to {decision.for_key}: {decision.reason}."
        if action == "stopped":
            text += " It will be queued again as a warm start from its finished trials once it has stopped."
        report = queue_report(entry, "preempted", text)
        deliver(report, services.store, services.notifiers_for(report, policy), services.clock)
    return {"job_name": name, "outcome": "preempted", "action": action, "for": decision.for_key}
