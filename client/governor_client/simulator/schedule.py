"""The deployed schedule on a virtual clock: the sweep at its interval and the one-time budget checks at
their time, as the simulator, the demo, the replay and the benchmarks run them.

Deployed, the sweep is an EventBridge schedule (template.yaml's ``SweepSchedule``, ``rate(5 minutes)``
by default) and each budget check a one-time EventBridge Scheduler schedule (``adapters.checks``).
Offline, :class:`Schedule` says what is due when, and :func:`invoke_sweep` / :func:`invoke_budget_check`
invoke the same Lambda handlers the schedules invoke.

A rate schedule fires on multiples of its interval since 1970-01-01 UTC (:func:`first_tick`); when a
check and a sweep are due at the same moment the sweep runs first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import budget_check
import sweep
from governor_client.cli.defaults import DEFAULT_SWEEP_EVERY, DEFAULT_SWEEP_SCHEDULE
from governor_client.simulator.runner import FakeLambdaContext
from tuning_governor.adapters.checks import PendingChecks
from tuning_governor.app.services import Services

__all__ = [
    "DEFAULT_SWEEP_EVERY",
    "DEFAULT_SWEEP_SCHEDULE",
    "Firing",
    "Schedule",
    "first_tick",
    "invoke_budget_check",
    "invoke_sweep",
]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def first_tick(at: datetime, every: timedelta) -> datetime:
    """The first time at or after ``at`` a schedule of rate ``every`` fires: a multiple of ``every`` since
    1970-01-01 UTC."""
    periods = -((_EPOCH - at) // every)  # ceiling division
    return _EPOCH + periods * every


@dataclass(frozen=True)
class Firing:
    """One scheduled invocation due: a sweep, or the budget checks of ``jobs`` (job names) at ``at``,
    each invoked with its input in ``inputs`` (as the one-time schedule carries it)."""

    kind: Literal["sweep", "checks"]
    at: datetime
    jobs: tuple[str, ...] = ()
    inputs: tuple[dict[str, Any], ...] = ()


@dataclass
class Schedule:
    """When the next sweep and the next one-time checks are due; ``every`` None: no sweep.

    ``checks`` is the in-memory check scheduler to give the governor's services (``services.checks``):
    the checks its judgements ask for are handed out here at their time, once each.
    """

    every: timedelta | None = DEFAULT_SWEEP_EVERY
    checks: PendingChecks = field(default_factory=PendingChecks)
    next_sweep: datetime | None = None

    def start(self, at: datetime) -> None:
        """The sweep's first tick is the first at or after ``at``."""
        if self.every is not None and self.next_sweep is None:
            self.next_sweep = first_tick(at, self.every)

    def next_due(self) -> datetime | None:
        """When the next sweep or check is due (None: neither)."""
        due = [t for t in (self.checks.next_due(), self.next_sweep if self.every else None) if t is not None]
        return min(due, default=None)

    def pop_due(self, until: datetime, *, inclusive: bool = True) -> Firing | None:
        """The earliest firing due by ``until`` (or strictly before it), taken off the schedule; None if
        nothing is. Checks due at one moment come together; a sweep at the same moment comes first."""
        check, swept = self.checks.next_due(), self.next_sweep if self.every else None
        due = [t for t in (check, swept) if t is not None and (t <= until if inclusive else t < until)]
        if not due:
            return None
        at = min(due)
        if swept is not None and swept == at:
            assert self.every is not None
            self.next_sweep = swept + self.every
            return Firing("sweep", at)
        names = {key: name for key, (_, name) in self.checks.pending.items()}
        inputs = {key: self.checks.input_for(key) for key in self.checks.pending}
        keys = [key for _, key in self.checks.due(at)]
        return Firing("checks", at, tuple(names[key] for key in keys), tuple(inputs[key] for key in keys))


def invoke_sweep(services: Services) -> dict[str, Any]:
    """The sweep function's handler, as the schedule invokes it (a raise propagates: a failed run)."""
    result: dict[str, Any] = sweep.handler({}, FakeLambdaContext("sweep"), services=services)
    return result


def invoke_budget_check(event: dict[str, Any], services: Services) -> dict[str, Any]:
    """The budget-check function's handler with the input Scheduler's one-time schedule carries."""
    result: dict[str, Any] = budget_check.handler(event, FakeLambdaContext("budget-check"), services=services)
    return result
