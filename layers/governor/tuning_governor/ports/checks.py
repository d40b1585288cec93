"""The check-scheduler port: where a job's next one-time budget check is asked for.

Adapters: ``tuning_governor.adapters.checks`` (EventBridge Scheduler, and ``PendingChecks`` in memory).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from tuning_governor.models.place import place_in_key

CHECK_KEY = "budget_check"
"""The key of the scheduled check's input: ``{"budget_check": {"job": <name>, "at": <iso time>}}``, with
the job's ``account`` and ``region`` when it runs outside the home place."""


def check_input(job_key: str, job_name: str, at: datetime | None = None) -> dict[str, Any]:
    """The one-time check's input for job ``job_key`` (named ``job_name`` in SageMaker) at ``at``: the
    account and region come from the key alone (``models.place.place_in_key``), never from elsewhere."""
    body: dict[str, Any] = {"job": job_name}
    place = place_in_key(job_key)
    if place is not None:
        body |= {"account": place.account, "region": place.region}
    if at is not None:
        body["at"] = at.astimezone(UTC).isoformat()
    return {CHECK_KEY: body}


class CheckScheduler(Protocol):
    """Where a job's next budget check is asked for (the latest request per job wins)."""

    def schedule(self, job_key: str, job_name: str, at: datetime) -> None: ...
