"""The governor's table in memory (``MemoryStore``): one module per area of the store port, over the
shared items and index of ``table``. Nothing in the Lambda layer imports this package."""

from governor_sim.memory.store import MemoryStore
from governor_sim.memory.table import TransactionCanceled, stored

__all__ = ["MemoryStore", "TransactionCanceled", "stored"]
