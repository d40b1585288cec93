"""Grace periods: mark first, stop later (Cloud Custodian's mark-for-op, for tuning jobs).

With ``defaults.grace_minutes.<rule>`` set, a rule's first breach on a job does not stop it: a notice
(verdict ``grace``) is recorded and reported once, saying the job will be stopped at T (the breach's
time + the grace period) unless the breach clears. The job is stopped at the first judgement at or
after T at which the breach still holds; a judgement before T does nothing. There is one notice per
rule and job: a breach that clears and comes back after T is acted on at once (the notice said when).

Pure: what to do with a decision given the stored notice (if any) and the clock. Reading the notice,
acting and asking for the judgement at T are the engine's (``governance.engine.grace_step``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tuning_governor.governance.rules import Decision
from tuning_governor.policy import Policy
from tuning_governor.policy.rules import specs

GRACE = "grace"


@dataclass(frozen=True)
class GraceStep:
    """What the engine does with one decision: act on ``decision`` (None: nothing now) and judge the job
    again at ``check_at`` (None: no need)."""

    decision: Decision | None
    check_at: datetime | None = None


def unless(rule: str, policy: Policy) -> str:
    """What would stop the stop, for the notice: what makes the rule's breach clear before T, in the words
    of the people who get the notice (its spec's ``grace_unless``), or an exemption."""
    spec = specs.get(rule)
    clears = (spec.grace_unless if spec is not None and spec.grace_unless else "the breach clears").format(
        budget_tag=policy.budget_tag
    )
    return f"{clears}, or it is tagged {policy.exempt_tag}=true"


def notice(decision: Decision, grace: timedelta, policy: Policy) -> Decision:
    """The ``grace`` decision for a first breach: the breach's figures, plus when the stop will come."""
    stop_at = decision.at + grace
    stamp = _iso(stop_at)
    return decision.model_copy(
        update={
            "verdict": GRACE,
            "message": f"{decision.message}; stop at {stamp} unless {unless(decision.rule, policy)}",
            "numbers": decision.numbers | {"grace_minutes": _minutes(grace), "stop_at": stamp},
        }
    )


def step(
    decision: Decision, grace: timedelta | None, stored_notice: dict[str, Any] | None, policy: Policy
) -> GraceStep:
    """Given the rule's decision, its grace period and the job's stored notice for the rule (if any).

    - no grace, not a breach: act on the decision as it is;
    - a breach without a notice: act on the notice (recorded and reported once), judge again at T;
    - a breach before T: nothing now, judge at T;
    - a breach at or after T: act on the breach, its figures saying which notice it follows.
    """
    if grace is None or not decision.wants_stop:
        return GraceStep(decision)
    if stored_notice is None:
        return GraceStep(notice(decision, grace, policy), check_at=decision.at + grace)
    numbers = stored_notice.get("numbers") or {}
    stop_at = datetime.fromisoformat(str(numbers.get("stop_at")))
    if decision.at < stop_at:
        return GraceStep(None, check_at=stop_at)
    noticed = decision.model_copy(
        update={
            "message": f"{decision.message} (grace period over: noticed at {stored_notice.get('at')})",
            "numbers": decision.numbers | {"grace_stop_at": _iso(stop_at), "noticed_at": str(stored_notice.get("at"))},
        }
    )
    return GraceStep(noticed)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="seconds")


def _minutes(grace: timedelta) -> int | float:
    minutes = grace.total_seconds() / 60
    return int(minutes) if minutes.is_integer() else minutes
