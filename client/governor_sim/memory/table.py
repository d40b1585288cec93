"""The governor's table in memory: the plumbing every area of ``MemoryStore`` shares.

:class:`~governor_sim.memory.store.MemoryStore` (the ``Store`` port for replays, the simulator and the
demo, one mixin per area of the port over :class:`MemoryTable`) keeps the items the DynamoDB adapter
(``tuning_governor.adapters.dynamodb``) would write, with the same keys, the same shapes and the same
types (the builders are shared: ``tuning_governor.adapters.dynamodb.keys``, ``items`` and
``capacity_items``; the totals' arithmetic: ``tuning_governor.domain.totals``; values are normalised
as a DynamoDB round trip normalises them: numbers ``Decimal``, datetimes ISO strings), and it
implements each method with that method's semantics rather than by interpreting DynamoDB expressions:

* conditional writes are first-writer-wins, with the same outcomes (False, ``StaleState``,
  ``"conflict"`` / ``"decided"``);
* a method that writes several items (a DynamoDB transaction) checks every condition first and then
  writes all of them, so it writes all or nothing;
* one lock serialises the methods (each is one request, or one transaction, in DynamoDB), so
  handlers may race in threads; nothing copies the whole table: a read copies the items it returns,
  a write touches the items it names, and the ``gsi1`` index is kept up to date as items change.

tests/contract runs one suite per area against this and the DynamoDB adapter on moto; it fails if
they differ. Nothing in the Lambda layer imports this package.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import DYNAMODB_CONTEXT

from tuning_governor.adapters.dynamodb.keys import plain, trial_retention

Item = dict[str, Any]
Key = tuple[str, str]


class TransactionCanceled(Exception):
    """A transaction whose later condition failed (DynamoDB's TransactionCanceledException): nothing written."""


def stored(value: Any) -> Any:
    """``value`` as DynamoDB gives it back: floats and ints ``Decimal`` (38 digits, as boto3 serialises
    them), datetimes ISO strings, tuples lists, sets sets; a new container at every level."""
    return _dynamo(plain(value))


def _dynamo(value: Any) -> Any:
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int | Decimal):
        return DYNAMODB_CONTEXT.create_decimal(value)
    if isinstance(value, dict):
        return {str(k): _dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dynamo(v) for v in value]
    if isinstance(value, set | frozenset):
        if not value:
            raise ValueError("DynamoDB stores no empty sets")
        return {_dynamo(v) for v in value}
    raise TypeError(f"unsupported type for the store: {type(value).__name__}")


_CONTAINERS = (dict, list, set)


def copied(value: Any) -> Any:
    """A copy of a stored value the caller may change (leaves are immutable). Stored values are built by
    :func:`stored`, so containers are exactly dict, list and set; leaves are returned without a call
    (most of an item is leaves: this copy is on every read)."""
    kind = type(value)
    if kind is dict:
        return {k: copied(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    if kind is list:
        return [copied(v) if type(v) in _CONTAINERS else v for v in value]
    if kind is set:
        return set(value)
    return value


def add_to(item: Item, name: str, value: Any) -> None:
    """DynamoDB's ADD: numbers are summed (from 0), sets joined."""
    if isinstance(value, set):
        item[name] = set(item.get(name) or set()) | value
    else:
        item[name] = item.get(name, Decimal(0)) + value


class MemoryTable:
    """The items and the ``gsi1`` index, shared by every area of ``MemoryStore`` (each a mixin over this)."""

    def __init__(self, *, trial_retention_days: int = 0) -> None:
        """``trial_retention_days`` as ``GovernorStore``'s (0: trial rows keep no expiry)."""
        self._trial_retention = trial_retention(trial_retention_days)
        self._lock = threading.RLock()
        # pk -> sk -> item, in insertion order (as moto keeps them).
        self._partitions: dict[str, dict[str, Item]] = {}
        # gsi1pk -> {(pk, sk): gsi1sk}: the items the sparse index lists.
        self._gsi: dict[str, dict[Key, str]] = {}

    def _get(self, pk: str, sk: str) -> Item | None:
        return self._partitions.get(pk, {}).get(sk)

    def _read(self, pk: str, sk: str) -> Item | None:
        with self._lock:
            item = self._get(pk, sk)
            return copied(item) if item is not None else None

    def _unindex(self, item: Item) -> None:
        entry = _gsi_entry(item)
        if entry is not None:
            self._gsi.get(entry[0], {}).pop((item["pk"], item["sk"]), None)

    def _index(self, item: Item) -> None:
        entry = _gsi_entry(item)
        if entry is not None:
            self._gsi.setdefault(entry[0], {})[(item["pk"], item["sk"])] = entry[1]

    def _put(self, values: Item) -> None:
        item = stored(values)
        old = self._get(item["pk"], item["sk"])
        if old is not None:
            self._unindex(old)
        self._partitions.setdefault(item["pk"], {})[item["sk"]] = item
        self._index(item)

    def _delete(self, pk: str, sk: str) -> None:
        old = self._partitions.get(pk, {}).pop(sk, None)
        if old is not None:
            self._unindex(old)

    def _update(self, pk: str, sk: str, change: Callable[[Item], None]) -> None:
        """UpdateItem: change the item in place (created with its key when missing), index kept."""
        partition = self._partitions.setdefault(pk, {})
        item = partition.get(sk)
        if item is None:
            item = partition[sk] = {"pk": pk, "sk": sk}
        else:
            self._unindex(item)
        change(item)
        self._index(item)

    def _set(self, pk: str, sk: str, values: dict[str, Any]) -> None:
        self._update(pk, sk, lambda item: item.update(stored(values)))

    def _query(self, pk: str, prefix: str = "") -> list[Item]:
        with self._lock:
            partition = self._partitions.get(pk, {})
            return [copied(partition[sk]) for sk in sorted(partition) if sk.startswith(prefix)]

    def _by_gsi(self, partition: str, below: str | None = None) -> list[Item]:
        """Items of a gsi1 partition as DynamoDB's Query orders them (gsi1sk, then the table key)."""
        with self._lock:
            entries = self._gsi.get(partition, {})
            keys = sorted((gsi1sk, pk, sk) for (pk, sk), gsi1sk in entries.items() if below is None or gsi1sk < below)
            return [copied(self._partitions[pk][sk]) for _, pk, sk in keys]

    def scan(self) -> Iterator[Item]:
        """Every item (copies), by key: for dumps and tests, as a Scan of the table."""
        with self._lock:
            items = [copied(item) for partition in self._partitions.values() for item in partition.values()]
        yield from sorted(items, key=lambda item: (item["pk"], item["sk"]))


def _gsi_entry(item: Item) -> tuple[str, str] | None:
    """(gsi1pk, gsi1sk) when the item is in ``gsi1`` (both keys present and non-empty strings)."""
    pk, sk = item.get("gsi1pk"), item.get("gsi1sk")
    if isinstance(pk, str) and isinstance(sk, str) and pk and sk:
        return pk, sk
    return None


def fresh(meta: Item, modified: str, terminal: frozenset[str]) -> bool:
    """An upsert's condition: the stored status is not terminal and not modified after ``modified``."""
    status, last = meta.get("status"), meta.get("last_modified")
    if status is not None and status in terminal:
        return False
    return last is None or (isinstance(last, str) and last <= modified)
