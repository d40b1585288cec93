"""The store logic, written once over a small item port, and the item shapes both tables hold.

:class:`TableStore` implements every area port of the store (``tuning_governor.ports``), one module per
area (``jobs``, ``trials``, ``decisions``, ``team_months``, ``capacity``, ``prices``, ``queue``), over an
:class:`ItemTable` (``port``: get, query, query the index, one conditional write, one transaction;
conditions and changes are small typed values). The DynamoDB table
(``tuning_governor.adapters.dynamodb``) renders them to expressions; the in-memory table
(``governor_sim.memory``) evaluates them. Keys and item shapes are built in ``keys``, ``items``,
``capacity_items`` and ``queue_items``; the key design is in ``docs/reference/table-items.md``.
"""

from tuning_governor.adapters.store.keys import EXPIRY_ATTRIBUTE, MIN_TRIAL_RETENTION_DAYS, job_partition
from tuning_governor.adapters.store.port import ItemTable, TransactionCanceled, WriteConflict, stored
from tuning_governor.adapters.store.store import TableStore

__all__ = [
    "EXPIRY_ATTRIBUTE",
    "MIN_TRIAL_RETENTION_DAYS",
    "ItemTable",
    "TableStore",
    "TransactionCanceled",
    "WriteConflict",
    "job_partition",
    "stored",
]
