"""``TableStore``: every area port of the store over one :class:`~tuning_governor.adapters.store.ItemTable`.

Mixins rather than a class holding area objects: every area shares the one item table and retention
(:class:`~tuning_governor.adapters.store.area.Area`), so the façade is its base list.
"""

from __future__ import annotations

from tuning_governor.adapters.store.capacity import Capacity
from tuning_governor.adapters.store.decisions import Decisions
from tuning_governor.adapters.store.jobs import Jobs
from tuning_governor.adapters.store.prices import Prices
from tuning_governor.adapters.store.queue import Queue
from tuning_governor.adapters.store.team_months import TeamMonths
from tuning_governor.adapters.store.trials import Trials
from tuning_governor.ports import Store

__all__ = ["TableStore"]


class TableStore(Jobs, Trials, Decisions, TeamMonths, Capacity, Prices, Queue):
    """The governor's table over an item table (DynamoDB's, or the in-memory one)."""


# mypy checks that the façade implements the whole port.
_PORT: type[Store] = TableStore
