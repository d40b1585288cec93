"""The item table in memory, for replays, the simulator and the demo: the items the DynamoDB table would
hold, normalised as a round trip normalises them (:func:`~tuning_governor.adapters.store.stored`), and the
port's conditions and changes evaluated as DynamoDB does (a comparison with a missing attribute or another
type is false; a nested path below a missing map is refused, nothing written; an update creates its item;
a transaction checks every condition, then writes all). One lock serialises the operations (each is one
request in DynamoDB); a read returns the stored item itself, a ``StoredItem`` no write changes (an update
stores a changed copy) and no reader may change (tests/memory_guard.py); the ``gsi1`` index follows items.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

from tuning_governor.adapters.store import stored
from tuning_governor.adapters.store.conditions import Cond, Path
from tuning_governor.adapters.store.port import Change, Check, Delete, Item, Key, Outcome, Put, Update
from tuning_governor.domain.stored_item import StoredItem

_ABSENT = object()


def _at(item: Item | None, path: Path) -> Any:
    value: Any = item if item is not None else _ABSENT
    for name in path:
        value = value.get(name, _ABSENT) if isinstance(value, dict) else _ABSENT
    return value


def _same(a: Any, b: Any) -> bool:
    numbers = isinstance(a, Decimal) and isinstance(b, Decimal)
    return (numbers or type(a) is type(b)) and a == b


def holds(cond: Cond | None, item: Item | None) -> bool:
    """Whether ``cond`` holds on ``item`` (None: no item), as DynamoDB evaluates it."""
    if cond is None:
        return True
    if cond.op in {"and", "or", "not"}:
        results = (holds(part, item) for part in cond.parts)
        return all(results) if cond.op == "and" else any(results) if cond.op == "or" else not next(results)
    value = _at(item, cond.path)
    if cond.op in {"exists", "missing"}:
        return (value is _ABSENT) == (cond.op == "missing")
    if cond.op == "in":
        return any(_same(value, stored(v)) for v in cond.value)
    other = stored(cond.value)
    if cond.op == "=":
        return _same(value, other)
    ordered = isinstance(value, str | Decimal) and type(value) is type(other)
    return ordered and (value < other if cond.op == "<" else value <= other)


def _check_paths(item: Item | None, op: Put | Update | Check | Delete) -> None:
    """DynamoDB refuses an update whose nested path has no map above it (and writes nothing)."""
    for change in op.changes if isinstance(op, Update) else ():
        if len(change.path) > 1 and not isinstance(_at(item, change.path[:-1]), dict):
            raise ValueError("The document path provided in the update expression is invalid for update")


def _own(item: Item, path: Path) -> Any:
    """The map at ``path`` in ``item`` (a new item), each map on the way copied: a stored one never changes."""
    parent = item
    for name in path:
        parent[name] = parent = dict(parent[name])
    return parent


def _change(item: Item, changes: Sequence[Change]) -> None:
    for change in changes:
        parent, name, value = _own(item, change.path[:-1]), change.path[-1], stored(change.value)
        if change.op == "remove":
            parent.pop(name, None)
        elif change.op == "add":
            parent[name] = (
                (parent.get(name) or set()) | value if isinstance(value, set) else parent.get(name, Decimal(0)) + value
            )
        elif not (change.if_missing and name in parent):
            parent[name] = value


class MemoryItems:
    """The item port (:class:`~tuning_governor.adapters.store.ItemTable`) in memory."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        # pk -> sk -> item, in insertion order (as moto keeps them).
        self._partitions: dict[str, dict[str, Item]] = {}
        # gsi1pk -> {(pk, sk): gsi1sk}: the items the sparse index lists.
        self._gsi: dict[str, dict[Key, str]] = {}

    def _item(self, key: Key) -> Item | None:
        return self._partitions.get(key[0], {}).get(key[1])

    def get(self, key: Key) -> Item | None:
        with self._lock:
            return self._item(key)

    def query(self, pk: str, prefix: str = "") -> list[Item]:
        with self._lock:
            partition = self._partitions.get(pk, {})
            return [partition[sk] for sk in sorted(partition) if sk.startswith(prefix)]

    def index(self, partition: str, *, below: str | None = None) -> list[Item]:
        """Items of a gsi1 partition as DynamoDB's Query orders them (gsi1sk, then the table key)."""
        with self._lock:
            entries = self._gsi.get(partition, {})
            keys = sorted((gsi1sk, pk, sk) for (pk, sk), gsi1sk in entries.items() if below is None or gsi1sk < below)
            return [self._partitions[pk][sk] for _, pk, sk in keys]

    def write(self, op: Put | Update | Delete) -> Outcome:
        with self._lock:
            old = self._item(_key_of(op))
            if isinstance(op, Put | Update) and not holds(op.when, old):
                return Outcome(False, old)
            _check_paths(old, op)
            new = self._apply(op, old)
            return Outcome(True, new if isinstance(op, Update) else None)

    def transact(self, ops: Sequence[Put | Update | Check]) -> frozenset[int]:
        with self._lock:
            olds = [self._item(_key_of(op)) for op in ops]
            failed = frozenset(i for i, (op, old) in enumerate(zip(ops, olds, strict=True)) if not holds(op.when, old))
            if not failed:
                for op, old in zip(ops, olds, strict=True):
                    _check_paths(old, op)
                for op, old in zip(ops, olds, strict=True):
                    if not isinstance(op, Check):
                        self._apply(op, old)
            return failed

    def _apply(self, op: Put | Update | Delete, old: Item | None) -> Item | None:
        """Write ``op`` (its condition held, its paths are valid); an update stores a changed copy."""
        pk, sk = _key_of(op)
        self._reindex(old, keep=False)
        if isinstance(op, Delete):
            self._partitions.get(pk, {}).pop(sk, None)
            return None
        partition = self._partitions.setdefault(pk, {})
        new = partition[sk] = StoredItem(stored(op.item) if isinstance(op, Put) else old or {"pk": pk, "sk": sk})
        if isinstance(op, Update):
            _change(new, op.changes)
        self._reindex(new, keep=True)
        return new

    def _reindex(self, item: Item | None, *, keep: bool) -> None:
        """List ``item`` in the sparse index (``keep``), or take it out."""
        pk, sk = (item or {}).get("gsi1pk"), (item or {}).get("gsi1sk")
        if item is not None and isinstance(pk, str) and isinstance(sk, str) and pk and sk:
            entries = self._gsi.setdefault(pk, {})
            if keep:
                entries[(item["pk"], item["sk"])] = sk
            else:
                entries.pop((item["pk"], item["sk"]), None)

    def scan(self) -> Iterator[Item]:
        """Every item (copies), by key: for dumps and tests, as a Scan of the table."""
        with self._lock:
            items = [
                copy.deepcopy(dict(item)) for partition in self._partitions.values() for item in partition.values()
            ]
        yield from sorted(items, key=lambda item: (item["pk"], item["sk"]))

    def drop_partition(self, pk: str) -> None:
        with self._lock:
            for item in self._partitions.pop(pk, {}).values():
                self._reindex(item, keep=False)


def _key_of(op: Put | Update | Check | Delete) -> Key:
    return (op.item["pk"], op.item["sk"]) if isinstance(op, Put) else op.key
