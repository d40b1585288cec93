"""The queue area of the store port: submitted requests waiting for capacity (docs/explanation/queue.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from tuning_governor.models.queue import QueuedRequest, QueueState


class QueueStore(Protocol):
    """Requests by job name (derived from team and client token: ``models.queue.job_name_for``)."""

    def enqueue(self, entry: QueuedRequest) -> tuple[QueuedRequest, bool]:
        """Store ``entry`` unless a request of the same job name exists: (the stored request, True when
        this call stored it). A repeated submission is therefore one entry, in its first place."""
        ...

    def get_request(self, job_name: str) -> QueuedRequest | None: ...

    def waiting_requests(self) -> list[QueuedRequest]:
        """Requests still waiting (``queued`` or ``admitting``), in the queue's order (priority, then
        FIFO). Read from an index: a request enqueued a moment ago may be missing; claims are exact."""
        ...

    def claim_request(self, job_name: str, owner: str, now: datetime, until: datetime) -> bool:
        """Make the request ``admitting`` for ``owner`` until ``until``: only when it is ``queued``, or
        ``admitting`` under a lease that ended before ``now`` (its owner crashed). False otherwise."""
        ...

    def release_request(self, job_name: str, owner: str) -> bool:
        """Back to ``queued`` (keeping its place) when ``owner`` holds its claim; False otherwise."""
        ...

    def finish_request(
        self, job_name: str, state: QueueState, reason: str, now: datetime, borrowed: Mapping[str, int] | None = None
    ) -> bool:
        """Move a waiting request to ``state`` (admitted, expired or refused) with ``reason`` (and, when
        admitted beyond its team's share, what it ``borrowed``); False when it no longer waits (another
        admission finished it first)."""
        ...
