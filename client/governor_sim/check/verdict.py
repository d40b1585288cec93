"""The governor's verdict on the request now, from its arrival rules (``tuning_governor.app.preflight``).

Two paths: a request created directly (CreateHyperParameterTuningJob) is admitted or stopped on
arrival by the first breach; a request submitted to the governor's queue (``check --submit``: a
``SubmissionQueue``) is created now, queued (position, behind what) or refused (it can never fit), and
once created it still meets the other arrival rules (budget, tags) as any job does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from governor_sim.check.queue_view import QueuePlacement, SubmissionQueue
from governor_sim.check.result import Admission
from governor_sim.validate.findings import Finding
from tuning_governor.app.preflight import Preflight
from tuning_governor.models.decisions import Decision


def _refusal(preflight: Preflight) -> Decision | None:
    return next((d for d in preflight.now if d.verdict == "breach"), None)


def verdict(preflight: Preflight, job_name: str) -> Admission:
    """Created directly: admitted, or stopped on arrival (the first breach, under enforce, of a job not exempt).

    Under monitor mode, or for an exempt job, a breach is recorded and nothing is stopped: the job is
    admitted, and ``rule``/``message`` name the breach it would be recorded with."""
    mode = "enforce" if preflight.enforcing else "monitor"
    breach = _refusal(preflight)
    if breach is None:
        return Admission(outcome="admitted", team=preflight.team, mode=mode)
    common = {"rule": breach.rule, "message": breach.message, "numbers": breach.numbers, "team": preflight.team}
    if not preflight.enforcing or preflight.exempt:
        why = "monitor mode" if not preflight.enforcing else "the job is exempt"
        return Admission(
            outcome="admitted", mode=mode, **common | {"message": f"{breach.message} ({why}: not stopped)"}
        )
    return Admission(outcome="stopped on arrival", mode=mode, **common)


def queue_verdict(preflight: Preflight, request: Mapping[str, Any], queue: SubmissionQueue, now: datetime) -> Admission:
    """Submitted to the queue: refused (never fits), queued (position, behind), or created now; a job
    created now still meets the arrival rules other than capacity (the queue admitted it on capacity)."""
    placed: QueuePlacement = queue.place(request, preflight.team, now)
    mode = "enforce" if preflight.enforcing else "monitor"
    decision, common = placed.decision, {"team": preflight.team, "mode": mode, "path": "queue"}
    if decision.verdict == "refuse":
        return Admission(outcome="refused", message=decision.reason, **common)
    if decision.verdict == "wait":
        where = f"position {placed.position} in team {preflight.team}'s queue"
        ahead = f"; behind {', '.join(placed.behind)}" if placed.behind else ""
        return Admission(
            outcome="queued",
            message=f"{where}{ahead}: {decision.reason}",
            numbers={"position": placed.position},
            behind=placed.behind,
            **common,
        )
    created = f"created now: {decision.reason}"
    numbers = {"max_parallel": decision.max_parallel} if decision.max_parallel is not None else {}
    other = next((d for d in preflight.now if d.verdict == "breach" and d.rule != "concurrency"), None)
    if other is not None and preflight.enforcing and not preflight.exempt:
        message = f"{created}; then {other.message}"
        return Admission(
            outcome="stopped on arrival", rule=other.rule, message=message, numbers=other.numbers, **common
        )
    return Admission(outcome="admitted", message=created, numbers=numbers, **common)


def decision_findings(preflight: Preflight) -> list[Finding]:
    """never-fits (error): the concurrency rule breaches even on an idle account, so the job can never
    run under these limits; and the arrival rules' warnings (tags) as they would be reported."""
    found = [
        Finding(
            severity="error",
            code="never-fits",
            path="HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs",
            message=f"even with nothing else running: {d.message}; lower MaxParallelTrainingJobs or InstanceCount",
        )
        for d in preflight.alone
        if d.rule == "concurrency" and d.verdict == "breach"
    ]
    # The pricing rule's warning is said from the catalogue (check.core's approximate-price note, which also
    # names third-party figures in the region); unpriced types are lint's unpriced-instance-type.
    found += [
        Finding(severity="warning", code=f"rule-{d.rule}", path=None, message=d.message)
        for d in preflight.now
        if d.verdict == "warning" and d.rule != "pricing"
    ]
    return found
