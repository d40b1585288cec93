"""The governor's verdict on the request now, from its arrival rules (``tuning_governor.app.preflight``).

Extension point for the queue (issue 20, item 2, built separately): a ``QueueView`` passed to
``verdict`` is asked where a job that does not fit now would wait; with one, such a job is ``queued``
(``behind`` what) instead of ``stopped on arrival``. Without one (today), the governor stops it.
"""

from __future__ import annotations

from typing import Protocol

from governor_sim.check.result import Admission
from governor_sim.validate.findings import Finding
from tuning_governor.app.preflight import Preflight
from tuning_governor.models.decisions import Decision


class QueueView(Protocol):
    """Where a request that does not fit now would wait: the keys of the entries ahead of it, or None
    when the queue would not take it (it then is stopped on arrival, as today)."""

    def place(self, job_name: str, team: str | None, refusal: Decision) -> list[str] | None: ...


def _refusal(preflight: Preflight) -> Decision | None:
    return next((d for d in preflight.now if d.verdict == "breach"), None)


def verdict(preflight: Preflight, job_name: str, queue: QueueView | None = None) -> Admission:
    """Admitted, stopped on arrival (the first breach, under enforce, of a job not exempt), or queued.

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
    behind = queue.place(job_name, preflight.team, breach) if queue is not None else None
    if behind is not None:
        return Admission(outcome="queued", behind=behind, mode=mode, **common)
    return Admission(outcome="stopped on arrival", mode=mode, **common)


def decision_findings(preflight: Preflight) -> list[Finding]:
    """never-fits (error): the concurrency rule breaches even on an idle account, so the job can never
    run under these limits; and the arrival rules' warnings (tags, pricing) as they would be reported."""
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
    for d in preflight.now:
        if d.verdict != "warning":
            continue
        if d.rule != "pricing":
            found.append(Finding(severity="warning", code=f"rule-{d.rule}", path=None, message=d.message))
        elif d.numbers.get("approximate_types"):  # unpriced types are lint's unpriced-instance-type
            notes = "; ".join(f"{t}: {n}" for t, n in sorted(d.numbers.get("prices", {}).items()))
            found.append(Finding(severity="note", code="approximate-price", path=None, message=notes or d.message))
    return found
