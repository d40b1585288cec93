"""The governor's table in memory (``MemoryStore``): the shared store logic over the in-memory item
table of ``table``. Nothing in the Lambda layer imports this package."""

from governor_sim.memory.store import MemoryStore
from tuning_governor.adapters.store import TransactionCanceled, stored

__all__ = ["MemoryStore", "TransactionCanceled", "stored"]
