"""``MemoryStore``: the ``Store`` port in memory, one mixin per area over :class:`MemoryTable`.

Mixins, as the DynamoDB adapter's façade: every area shares the one lock, the items and the index that
:class:`MemoryTable` holds, so the façade is its base list and no method is written twice.
"""

from __future__ import annotations

from governor_sim.memory.capacity import CapacityItems
from governor_sim.memory.decisions import DecisionItems
from governor_sim.memory.jobs import JobItems
from governor_sim.memory.prices import PriceItems
from governor_sim.memory.queue import QueueItems
from governor_sim.memory.team_months import TeamMonthItems
from governor_sim.memory.trials import TrialItems
from tuning_governor.ports import Store

__all__ = ["MemoryStore"]


class MemoryStore(JobItems, TrialItems, DecisionItems, TeamMonthItems, CapacityItems, PriceItems, QueueItems):
    """The ``Store`` port in memory; see :mod:`governor_sim.memory.table` for what it keeps identical."""


# mypy checks that the façade implements the whole port.
_PORT: type[Store] = MemoryStore
