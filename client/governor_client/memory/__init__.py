"""The governor's table in memory (``MemoryStore``): the shared store logic over the in-memory item
table of ``table``. Nothing in the Lambda layer imports this package."""

from __future__ import annotations

from collections.abc import Iterator

from governor_client.memory.table import MemoryItems
from tuning_governor.adapters.store import TableStore
from tuning_governor.adapters.store.keys import job_pk
from tuning_governor.adapters.store.port import Item

__all__ = ["MemoryStore"]


class MemoryStore(TableStore):
    """The ``Store`` port in memory; see :mod:`governor_client.memory.table` for what it keeps identical."""

    def __init__(self, *, trial_retention_days: int = 0) -> None:
        self._memory = MemoryItems()
        super().__init__(self._memory, trial_retention_days=trial_retention_days)

    def scan(self) -> Iterator[Item]:
        """Every item (copies), by key: for dumps and tests, as a Scan of the table."""
        return self._memory.scan()

    def forget_job(self, job_key: str) -> None:
        """Drop every item of the job's partition. Not part of the ``Store`` port (the deployed governor
        keeps a job's items until their expiry): a replay drops a job no later event or sweep can
        change (``governor_client.replay_forget``), so that its memory does not grow with the log."""
        self._memory.drop_partition(job_pk(job_key))
