"""The in-memory table hands its readers the stored items themselves (a write replaces an item, never
changes it in place: ``governor_client.memory.table``), so a reader that changed what it read would
change the table behind its back. In the suite every read returns a read-only view instead: a change
raises ``ReadOnlyItemError`` where it is made, in whichever test reaches that code.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, NoReturn

from governor_client.memory import table
from tuning_governor.domain.stored_item import StoredItem


class ReadOnlyItemError(TypeError):
    """A reader changed an item the in-memory table handed it."""


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise ReadOnlyItemError("an item read from the in-memory table was changed by its reader (copy it first)")


class ReadOnlyDict(StoredItem):
    __setitem__ = __delitem__ = __ior__ = pop = popitem = setdefault = update = clear = _refuse

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class ReadOnlyList(list[Any]):
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


class ReadOnlySet(set[Any]):
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse
    add = discard = remove = pop = clear = update = _refuse
    difference_update = intersection_update = symmetric_difference_update = _refuse

    def __copy__(self) -> set[Any]:
        return set(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> set[Any]:
        return set(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (set, (set(self),))


_VIEWS: dict[int, tuple[Any, Any]] = {}


def read_only(value: Any) -> Any:
    """``value`` as a read-only view, at every level; a stored item's view is made once (the item never
    changes), so what a reader remembers of a stored item (``domain.stored_item``) is found again."""
    if type(value) is StoredItem:
        known = _VIEWS.get(id(value))
        if known is None or known[0] is not value:
            if len(_VIEWS) >= 4096:
                _VIEWS.clear()
            known = _VIEWS[id(value)] = (value, ReadOnlyDict({k: read_only(v) for k, v in value.items()}))
        return known[1]
    kind = type(value)
    if kind is dict or kind is ReadOnlyDict:
        return ReadOnlyDict({k: read_only(v) for k, v in value.items()})
    if kind is list or kind is ReadOnlyList:
        return ReadOnlyList(read_only(v) for v in value)
    if kind is set or kind is ReadOnlySet:
        return ReadOnlySet(value)
    return value


def install() -> None:
    """Every read of ``MemoryItems`` (get, query, index, a write's outcome) returns read-only views."""
    items = table.MemoryItems
    if getattr(items, "_read_only_views", False):
        return
    get, query, index, write = items.get, items.query, items.index, items.write

    def guarded_get(self: table.MemoryItems, key: Any) -> Any:
        return read_only(get(self, key))

    def guarded_query(self: table.MemoryItems, pk: str, prefix: str = "") -> Any:
        return read_only(query(self, pk, prefix))

    def guarded_index(self: table.MemoryItems, partition: str, *, below: str | None = None) -> Any:
        return read_only(index(self, partition, below=below))

    def guarded_write(self: table.MemoryItems, op: Any) -> Any:
        outcome = write(self, op)
        return replace(outcome, item=read_only(outcome.item)) if outcome.item is not None else outcome

    items.get, items.query, items.index, items.write = guarded_get, guarded_query, guarded_index, guarded_write  # type: ignore[method-assign]
    items._read_only_views = True  # type: ignore[attr-defined]
