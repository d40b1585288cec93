"""The store logic, written once over a small item port, and the item shapes both tables hold.

:class:`TableStore` implements every area port (``tuning_governor.ports``), one module per area, over an
:class:`ItemTable` (``port``; conditions in ``conditions``), which DynamoDB's table
(``tuning_governor.adapters.dynamodb``) renders to expressions and ``governor_client.memory``'s evaluates.
Each area's module builds its items; keys are built in ``keys`` (docs/reference/table-items.md).
"""

from tuning_governor.adapters.store.capacity import Capacity
from tuning_governor.adapters.store.decisions import Decisions
from tuning_governor.adapters.store.jobs import Jobs
from tuning_governor.adapters.store.keys import EXPIRY_ATTRIBUTE, MIN_TRIAL_RETENTION_DAYS, job_partition
from tuning_governor.adapters.store.port import ItemTable, TransactionCanceled, WriteConflict, stored
from tuning_governor.adapters.store.prices import Prices
from tuning_governor.adapters.store.queue import Queue
from tuning_governor.adapters.store.team_months import TeamMonths
from tuning_governor.adapters.store.trials import Trials
from tuning_governor.ports import Store

__all__ = ["EXPIRY_ATTRIBUTE", "MIN_TRIAL_RETENTION_DAYS", "ItemTable", "TableStore", "TransactionCanceled"]
__all__ += ["WriteConflict", "job_partition", "stored"]


class TableStore(Jobs, Trials, Decisions, TeamMonths, Capacity, Prices, Queue):
    """The governor's table over an item table (DynamoDB's, or the in-memory one): every area port of
    the store, one mixin per area sharing the one item table and retention (``area.Area``)."""


# mypy checks that the façade implements the whole port.
_PORT: type[Store] = TableStore
