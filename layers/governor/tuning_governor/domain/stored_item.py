"""An item its store will never change (``StoredItem``), and what is worked out from one, remembered.

The in-memory table writes by copy: an update stores a changed copy, so an item it handed out stays as
it was, and its readers never change what they read (the suite hands them read-only views). Such an
item is a ``StoredItem``. What is worked out from it alone (the typed job, a running trial) can then be
remembered by the item's identity: the next read of the unchanged item gets the same answer without
working it out again. A DynamoDB read is a plain dict, new at every read: nothing is remembered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


class StoredItem(dict[str, Any]):
    """An item (or a map inside one) that nothing will change any more: see the module docstring."""

    __slots__ = ()


class Remembered[T]:
    """``derive(item)`` for stored items, remembered by identity (the item is kept with the answer, so no
    other object takes its id); worked out every time for any other mapping. At most ``size`` kept.
    ``stored``: the caller's word that ``item`` is inside a stored item (its maps are plain dicts); ``args``
    go to ``derive`` and must be the same at every read of the same item (its key in its map)."""

    def __init__(self, derive: Callable[..., T], size: int = 4096) -> None:
        self._derive, self._size = derive, size
        self._known: dict[int, tuple[Mapping[str, Any], T]] = {}

    def __call__(self, item: Mapping[str, Any], *args: Any, stored: bool = False) -> T:
        if not (stored or isinstance(item, StoredItem)):
            return self._derive(item, *args)
        known = self._known.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        if len(self._known) >= self._size:
            self._known.clear()
        answer = self._derive(item, *args)
        self._known[id(item)] = (item, answer)
        return answer
