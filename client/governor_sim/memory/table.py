"""The item table in memory: the item port evaluated on dicts, for replays, the simulator and the demo.

It keeps the items the DynamoDB table would hold, normalised as a DynamoDB round trip normalises them
(:func:`~tuning_governor.adapters.store.stored`: numbers ``Decimal``, datetimes ISO strings), and
evaluates the port's conditions and changes as DynamoDB does: a comparison with a missing attribute or
a value of another type is false; a nested SET or REMOVE below a missing map is refused (ValueError),
nothing written; an update creates its item when missing. A transaction checks every condition first,
then writes all. One lock serialises the operations (each is one request in DynamoDB), so handlers may
race in threads; a read copies the items it returns, and the ``gsi1`` index is kept as items change.
tests/contract runs one suite against this and the DynamoDB table on moto. Nothing in the Lambda layer
imports this package.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

from tuning_governor.adapters.store import stored
from tuning_governor.adapters.store.port import (
    Add,
    All,
    AnyOf,
    Change,
    Check,
    Compare,
    Cond,
    Delete,
    Exists,
    In,
    Item,
    Key,
    Missing,
    Not,
    Outcome,
    Path,
    Put,
    Remove,
    Set,
    Update,
)

_ABSENT = object()
_CONTAINERS = (dict, list, set)


def copied(value: Any) -> Any:
    """A copy of a stored value the caller may change (containers are exactly dict, list and set)."""
    kind = type(value)
    if kind is dict:
        return {k: copied(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    if kind is list:
        return [copied(v) if type(v) in _CONTAINERS else v for v in value]
    if kind is set:
        return set(value)
    return value


def _at(item: Item | None, path: Path) -> Any:
    value: Any = item if item is not None else _ABSENT
    for name in path:
        value = value.get(name, _ABSENT) if isinstance(value, dict) else _ABSENT
    return value


def _same(a: Any, b: Any) -> bool:
    numbers = isinstance(a, Decimal) and isinstance(b, Decimal)
    return (numbers or type(a) is type(b)) and a == b


def holds(cond: Cond | None, item: Item | None) -> bool:  # noqa: PLR0911 - one branch per kind of condition
    """Whether ``cond`` holds on ``item`` (None: no item), as DynamoDB evaluates it."""
    match cond:
        case None:
            return True
        case Exists(path):
            return _at(item, path) is not _ABSENT
        case Missing(path):
            return _at(item, path) is _ABSENT
        case Compare(path, op, value):
            a, b = _at(item, path), stored(value)
            if op == "=":
                return _same(a, b)
            ordered = (isinstance(a, str) and isinstance(b, str)) or (isinstance(a, Decimal) and isinstance(b, Decimal))
            return ordered and (a < b if op == "<" else a <= b)
        case In(path, values):
            return any(_same(_at(item, path), stored(v)) for v in values)
        case Not(inner):
            return not holds(inner, item)
        case All(conds):
            return all(holds(c, item) for c in conds)
        case AnyOf(conds):
            return any(holds(c, item) for c in conds)
    raise TypeError(f"not a condition: {cond!r}")


def _check_paths(item: Item | None, op: Put | Update | Check | Delete) -> None:
    """DynamoDB refuses an update whose nested path has no map above it (and writes nothing)."""
    for change in op.changes if isinstance(op, Update) else ():
        if len(change.path) > 1 and not isinstance(_at(item, change.path[:-1]), dict):
            raise ValueError("The document path provided in the update expression is invalid for update")


def _change(item: Item, changes: Sequence[Change]) -> None:
    for change in changes:
        parent, name = _at(item, change.path[:-1]), change.path[-1]
        match change:
            case Set(_, value, if_missing):
                if not (if_missing and name in parent):
                    parent[name] = stored(value)
            case Add(_, value):
                added = stored(value)
                parent[name] = (
                    (parent.get(name) or set()) | added
                    if isinstance(added, set)
                    else parent.get(name, Decimal(0)) + added
                )
            case Remove():
                parent.pop(name, None)


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
            item = self._item(key)
            return copied(item) if item is not None else None

    def query(self, pk: str, prefix: str = "") -> list[Item]:
        with self._lock:
            partition = self._partitions.get(pk, {})
            return [copied(partition[sk]) for sk in sorted(partition) if sk.startswith(prefix)]

    def index(self, partition: str, *, below: str | None = None) -> list[Item]:
        """Items of a gsi1 partition as DynamoDB's Query orders them (gsi1sk, then the table key)."""
        with self._lock:
            entries = self._gsi.get(partition, {})
            keys = sorted((gsi1sk, pk, sk) for (pk, sk), gsi1sk in entries.items() if below is None or gsi1sk < below)
            return [copied(self._partitions[pk][sk]) for _, pk, sk in keys]

    def write(self, op: Put | Update | Delete) -> Outcome:
        with self._lock:
            old = self._item(_key_of(op))
            if isinstance(op, Put | Update) and not holds(op.when, old):
                return Outcome(False, copied(old) if old is not None else None)
            _check_paths(old, op)
            new = self._apply(op, old)
            return Outcome(True, copied(new) if isinstance(op, Update) and new is not None else None)

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
        """Write ``op`` (its condition held, its paths are valid); an update changes the item in place."""
        key = _key_of(op)
        if old is not None:
            self._unindex(old)
        if isinstance(op, Update):
            new = (
                old
                if old is not None
                else self._partitions.setdefault(key[0], {}).setdefault(key[1], {"pk": key[0], "sk": key[1]})
            )
            _change(new, op.changes)
        elif isinstance(op, Put):
            new = self._partitions.setdefault(key[0], {})[key[1]] = stored(op.item)
        else:
            self._partitions.get(key[0], {}).pop(key[1], None)
            return None
        self._index(new)
        return new

    def _unindex(self, item: Item) -> None:
        entry = _gsi_entry(item)
        if entry is not None:
            self._gsi.get(entry[0], {}).pop((item["pk"], item["sk"]), None)

    def _index(self, item: Item) -> None:
        entry = _gsi_entry(item)
        if entry is not None:
            self._gsi.setdefault(entry[0], {})[(item["pk"], item["sk"])] = entry[1]

    def scan(self) -> Iterator[Item]:
        """Every item (copies), by key: for dumps and tests, as a Scan of the table."""
        with self._lock:
            items = [copied(item) for partition in self._partitions.values() for item in partition.values()]
        yield from sorted(items, key=lambda item: (item["pk"], item["sk"]))

    def drop_partition(self, pk: str) -> None:
        with self._lock:
            for item in self._partitions.pop(pk, {}).values():
                self._unindex(item)


def _key_of(op: Put | Update | Check | Delete) -> Key:
    return (op.item["pk"], op.item["sk"]) if isinstance(op, Put) else op.key


def _gsi_entry(item: Item) -> tuple[str, str] | None:
    """(gsi1pk, gsi1sk) when the item is in ``gsi1`` (both keys present and non-empty strings)."""
    pk, sk = item.get("gsi1pk"), item.get("gsi1sk")
    if isinstance(pk, str) and isinstance(sk, str) and pk and sk:
        return pk, sk
    return None
