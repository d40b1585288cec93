"""An item its store will never change (``StoredItem``), and what is worked out from one, remembered.

The in-memory table writes by copy: an update stores a changed copy, so an item it handed out stays as
it was, and its readers never change what they read (the suite hands them read-only views). Such an
item is a ``StoredItem``. What is worked out from it alone (the typed job, a running trial) can then be
remembered with it: the next read of the unchanged item (the same object) gets the same answer without
working it out again; one answer is kept per item key, so what is kept does not grow with the writes. A DynamoDB read is a plain dict, new at every read: nothing is remembered.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any


class StoredItem(dict[str, Any]):
    """An item (or a map inside one) that nothing will change any more: see the module docstring."""

    __slots__ = ("__weakref__",)


class Remembered[T]:
    """``derive(item, *args)`` for stored items, remembered: one answer per ``slot`` (what the item is:
    its key, its trial), kept with (a reference to) the item it was worked out from and given again only
    for that very item (a changed item is a new object: worked out again, and it takes the slot). Any other mapping is
    worked out every time. At most ``size`` slots. ``stored``: the caller's word that ``item`` is inside
    a stored item (its maps are plain dicts); ``args`` are the same at every read of the same item."""

    def __init__(self, derive: Callable[..., T], slot: Callable[..., Hashable], size: int = 4096) -> None:
        self._derive, self._slot, self._size = derive, slot, size
        self._known: dict[Hashable, tuple[Callable[[], object], T]] = {}

    def __call__(self, item: object, *args: Any, stored: bool = False) -> T:
        if not (stored or isinstance(item, StoredItem)):
            return self._derive(item, *args)
        slot = self._slot(item, *args)
        known = self._known.get(slot)
        if known is not None and known[0]() is item:
            return known[1]
        if len(self._known) >= self._size:
            self._known.clear()
        answer = self._derive(item, *args)
        self._known[slot] = (self._held(item, slot), answer)
        return answer

    def _held(self, item: object, slot: Hashable) -> Callable[[], object]:
        """The item, held weakly when it is a stored item (its slot goes with it: a replay that forgets a
        job keeps nothing of it here), strongly when it is a map inside one (kept until replaced)."""
        if not isinstance(item, StoredItem):
            return lambda: item

        def gone(ref: weakref.ref[StoredItem]) -> None:
            known = self._known.get(slot)
            if known is not None and known[0] is ref:
                del self._known[slot]

        return weakref.ref(item, gone)
