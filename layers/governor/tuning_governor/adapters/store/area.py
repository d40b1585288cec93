"""The base of every area of the store logic: the item table it is written over, and its retention."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tuning_governor.adapters.store.conditions import Cond
from tuning_governor.adapters.store.keys import DECISION_LEASE, trial_retention
from tuning_governor.adapters.store.port import Change, ItemTable, Key, Update

META = "META"


class Area:
    """One area of the store (a mixin of :class:`~tuning_governor.adapters.store.TableStore`)."""

    def __init__(self, items: ItemTable, *, trial_retention_days: int = 0) -> None:
        self._items = items
        self._retention_days = trial_retention_days
        self._trial_retention = trial_retention(trial_retention_days)

    def area[A: Area](self, kind: type[A]) -> A:
        """Area ``kind`` over the same item table: an area no façade joins, handed to its use case."""
        return kind(self._items, trial_retention_days=self._retention_days)

    def _update(self, key: Key, changes: Sequence[Change], when: Cond | None = None) -> bool:
        return self._items.write(Update(key, changes, when)).done


def lease(token: str, now: datetime) -> dict[str, object]:
    return {"lease_token": token, "lease_until": now + DECISION_LEASE}
