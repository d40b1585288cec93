"""The check-scheduler port: where a job's next one-time budget check is asked for.

Adapters: ``tuning_governor.adapters.checks`` (EventBridge Scheduler, and ``PendingChecks`` in memory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from datetime import datetime

CHECK_KEY = "budget_check"
"""The key of the scheduled check's input: ``{"budget_check": {"job": <name>, "at": <iso time>}}``."""


class CheckScheduler(Protocol):
    """Where a job's next budget check is asked for (the latest request per job wins)."""

    def schedule(self, job_key: str, job_name: str, at: datetime) -> None: ...
