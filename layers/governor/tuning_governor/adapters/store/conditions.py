"""The conditions of the item port's writes, as values: the DynamoDB table renders them to condition
expressions, the in-memory table evaluates them (a comparison with a missing attribute is false)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

Path = tuple[str, ...]


def path_of(name: str | Path) -> Path:
    return (name,) if isinstance(name, str) else name


@dataclass(frozen=True)
class Cond:
    """``op`` on the attribute at ``path`` (``value``: the operand; for ``in``, a tuple of them), or on
    ``parts`` (``not``, ``and``, ``or``)."""

    op: Literal["exists", "missing", "=", "<", "<=", "in", "not", "and", "or"]
    path: Path = ()
    value: Any = None
    parts: tuple[Cond, ...] = ()


def exists(name: str | Path) -> Cond:
    return Cond("exists", path_of(name))


def missing(name: str | Path) -> Cond:
    return Cond("missing", path_of(name))


def eq(name: str | Path, value: Any) -> Cond:
    return Cond("=", path_of(name), value)


def lt(name: str | Path, value: Any) -> Cond:
    return Cond("<", path_of(name), value)


def one_of(name: str, values: Iterable[Any]) -> Cond:
    return Cond("in", path_of(name), tuple(sorted(values)))


def all_of(*parts: Cond) -> Cond:
    return Cond("and", parts=parts)


def any_of(*parts: Cond) -> Cond:
    return Cond("or", parts=parts)


def not_in(name: str, values: Iterable[Any]) -> Cond:
    return Cond("not", parts=(one_of(name, values),))


def fresh(terminal: frozenset[str], modified: str) -> Cond:
    """An upsert's condition: the stored status is not terminal and not modified after ``modified``."""
    at_most = Cond("<=", ("last_modified",), modified)
    return all_of(any_of(missing("status"), not_in("status", terminal)), any_of(missing("last_modified"), at_most))


def leasable(token: str, now: datetime) -> Cond:
    """A pending item whose lease is free, held by ``token``, or run out before ``now``."""
    return all_of(
        eq("state", "pending"), any_of(missing("lease_token"), eq("lease_token", token), lt("lease_until", now))
    )
