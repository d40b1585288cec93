"""The governor's verdict on the request now, from its arrival rules (``tuning_governor.app.checks.preflight``).

Two paths: a request created directly (CreateHyperParameterTuningJob) is admitted or stopped on
arrival by the first breach; a request submitted to the governor's queue (``check --submit``: a
``SubmissionQueue``) is created now, queued (position, behind what) or refused (it can never fit), and
once created it still meets the other arrival rules (budget, tags) as any job does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from governor_client.check.queue_view import QueuePlacement, SubmissionQueue
from governor_client.check.result import Admission
from governor_client.validate.findings import Finding
from tuning_governor.app.checks.preflight import Preflight
from tuning_governor.models.decisions import Decision


def _refusal(preflight: Preflight) -> Decision | None:
    return next((d for d in preflight.now if d.verdict == "breach"), None)


def _limits_exceeded(numbers: Mapping[str, Any], team: str | None) -> list[tuple[int, str]]:
    """Every limit the concurrency decision's rows show exceeded by the demand alone: (limit, how it reads)."""
    found: list[tuple[int, str]] = []
    team_demand: dict[str, int] = {}
    team_limits: dict[str, int] = {}
    for key, market in (("instance_types", ""), ("spot_instance_types", " (spot)")):
        for itype, row in (numbers.get(key) or {}).items():
            demand, limit = int(row.get("demand", 0)), row.get("limit")
            if limit is not None and demand > limit:
                source = row.get("limit_source")
                found.append((int(limit), f"{itype}{market}: demand {demand} > limit {limit} ({source})"))
            team_demand[itype] = team_demand.get(itype, 0) + demand
            if row.get("team_limit") is not None:
                team_limits[itype] = int(row["team_limit"])
    for itype, limit in team_limits.items():
        if team_demand[itype] > limit:
            found.append((limit, f"{itype}: demand {team_demand[itype]} > team {team}'s limit {limit}"))
    for name, row in (numbers.get("totals") or {}).items():
        if row.get("limit") is not None and int(row.get("demand", 0)) > row["limit"]:
            said = f"instances across {name}: demand {row['demand']} > limit {row['limit']}"
            found.append((int(row["limit"]), f"{said} ({row.get('limit_source')})"))
    return found


def never_fits(preflight: Preflight) -> str | None:
    """The one limit that refuses the request whatever else runs (None: it can fit on an idle account):
    the lowest limit its demand alone exceeds, as ``<type>: demand D > <whose> limit L``. The verdict and
    the ``never-fits`` finding both name it, so a refusal cites one limit everywhere."""
    alone = next((d for d in preflight.alone if d.rule == "concurrency" and d.verdict == "breach"), None)
    if alone is None:
        return None
    exceeded = _limits_exceeded(alone.numbers, preflight.team)
    return min(exceeded)[1] if exceeded else alone.message


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
    refused = never_fits(preflight) if breach.rule == "concurrency" else None
    if refused is not None:
        common["message"] = f"{refused}: it can never run"
    return Admission(outcome="stopped on arrival", mode=mode, **common)


def queue_verdict(preflight: Preflight, request: Mapping[str, Any], queue: SubmissionQueue, now: datetime) -> Admission:
    """Submitted to the queue: refused (never fits), queued (position, behind), or created now; a job
    created now still meets the arrival rules other than capacity (the queue admitted it on capacity)."""
    placed: QueuePlacement = queue.place(request, preflight.team, now)
    mode = "enforce" if preflight.enforcing else "monitor"
    decision, common = placed.decision, {"team": preflight.team, "mode": mode, "path": "queue"}
    if decision.verdict == "refuse":
        refused = never_fits(preflight)
        message = f"{refused}: it can never run" if refused else decision.reason
        return Admission(outcome="refused", message=message, **common)
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
    refused = never_fits(preflight)
    found = [
        Finding(
            severity="error",
            code="never-fits",
            path="HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs",
            message=f"even with nothing else running: {refused}; lower MaxParallelTrainingJobs or InstanceCount",
        )
        for _ in [refused]
        if refused is not None
    ]
    # The pricing rule's warning is said from the catalogue (check.core's approximate-price note, which also
    # names third-party figures in the region); unpriced types are lint's unpriced-instance-type.
    found += [
        Finding(severity="warning", code=f"rule-{d.rule}", path=None, message=d.message)
        for d in preflight.now
        if d.verdict == "warning" and d.rule != "pricing"
    ]
    return found
