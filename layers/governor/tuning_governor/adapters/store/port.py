"""The item port the store logic is written over: :class:`ItemTable` (get, query, query the ``gsi1``
index, one conditional write, one transaction); changes (here) and conditions (``conditions``) are small
typed values the DynamoDB table renders to expressions and the in-memory table evaluates. What a table
gives back is as DynamoDB gives it back (:func:`stored`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, Protocol

from boto3.dynamodb.types import DYNAMODB_CONTEXT

from tuning_governor.adapters.store.conditions import Cond, Path, path_of
from tuning_governor.adapters.store.keys import plain
from tuning_governor.errors import TransientError

Item = dict[str, Any]
Key = tuple[str, str]


@dataclass(frozen=True)
class Change:
    """One action of an update: ``set`` (``if_missing``: DynamoDB's if_not_exists), ``add`` (numbers
    summed from 0, sets joined; top-level attributes) or ``remove``, at ``path``."""

    op: Literal["set", "add", "remove"]
    path: Path
    value: Any = None
    if_missing: bool = False


def assign(name: str | Path, value: Any, *, if_missing: bool = False) -> Change:
    return Change("set", path_of(name), value, if_missing)


def remove(name: str | Path) -> Change:
    return Change("remove", path_of(name))


def sets(values: dict[str, Any]) -> list[Change]:
    return [assign(name, value) for name, value in values.items()]


def adds(values: dict[str, Any]) -> list[Change]:
    return [Change("add", (name,), value) for name, value in values.items()]


def removes(*names: str) -> list[Change]:
    return [remove(name) for name in names]


@dataclass(frozen=True)
class Put:
    item: Item
    when: Cond | None = None


@dataclass(frozen=True)
class Update:
    """UpdateItem: the item is created with its key when missing."""

    key: Key
    changes: Sequence[Change]
    when: Cond | None = None


@dataclass(frozen=True)
class Check:
    key: Key
    when: Cond


@dataclass(frozen=True)
class Delete:
    key: Key


@dataclass(frozen=True)
class Outcome:
    """A write's outcome: ``item`` is the item as written (an update's) or as found (a refused write's)."""

    done: bool
    item: Item | None = None


class TransactionCanceled(Exception):
    """A transaction whose later condition failed (DynamoDB's TransactionCanceledException): nothing written."""


class WriteConflict(TransientError):
    """A transaction met another one on the same item (DynamoDB's TransactionConflict): worth retrying."""


class ItemTable(Protocol):
    """The governor's table as the store logic uses it; every read is consistent (the index's cannot be)."""

    def get(self, key: Key) -> Item | None: ...

    def query(self, pk: str, prefix: str = "") -> list[Item]:
        """The items of partition ``pk`` whose sort key starts with ``prefix``, by sort key."""

    def index(self, partition: str, *, below: str | None = None) -> list[Item]:
        """The items ``gsi1`` lists under ``partition`` (sort key below ``below``), by its sort key."""

    def write(self, op: Put | Update | Delete) -> Outcome:
        """One write; not done (nothing written) when its condition does not hold."""

    def transact(self, ops: Sequence[Put | Update | Check]) -> frozenset[int]:
        """All ``ops`` or none: the positions of the ops whose conditions failed (empty: written)."""


def stored(value: Any) -> Any:
    """``value`` as DynamoDB gives it back: floats and ints ``Decimal`` (38 digits, as boto3 serialises
    them), datetimes ISO strings, tuples lists, sets sets; a new container at every level (one pass)."""
    if value is None or isinstance(value, (str, bool)):  # tuples of types: faster than unions, per value
        return value
    if isinstance(value, (int, Decimal)):
        return DYNAMODB_CONTEXT.create_decimal(value)
    if isinstance(value, dict):
        return {str(k): stored(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [stored(v) for v in value]
    if isinstance(value, float | datetime):
        return stored(plain(value))
    if isinstance(value, set | frozenset):
        if not value:
            raise ValueError("DynamoDB stores no empty sets")
        return {stored(v) for v in value}
    raise TypeError(f"unsupported type for the store: {type(value).__name__}")
