"""Three of moto's DynamoDB costs made proportional to the request, with moto's behaviour kept.

Offline runs (demo, replay ``--store moto``, simulator, tests) spend most of their time in three places
of moto's DynamoDB, none of them the governor's:

* ``TransactWriteItems`` deep-copies every table the transaction names before it starts, to roll back
  on a cancellation. The governor keeps one table, so each transaction copied the whole table: the cost
  grew with everything ever written. Here only the items the transaction names are saved (deep copies
  of at most 100 items) and put back on the same failures moto rolls back on.
* Each response is walked by moto's generic serializer against the service model, with attribute
  aliasing per key. A DynamoDB result is already a plain JSON document (``DynamoResult`` turns
  ``DynamoType`` into ``{"S": ...}``); for the item operations it is pruned to the operation's output
  shape (as moto's serializer prunes it) and its JSON text written directly when it holds only JSON
  types (no bytes, no timestamps, no None); moto's serializer is used otherwise. The document is the
  same; only the order of the top-level members may differ (moto's follows the model).
* A ``Query`` of the table (no index) sorts every item of the table, then keeps the partition's. Here
  its listing is the partition's items alone, in the same (range key) order; the rest of the query is moto's.

``install()`` also installs ``governor_client.offline.moto_json`` (moto's JSON-protocol responses and
its per-request method listing, made cheap the same way), ``governor_client.offline.moto_clause_count``
(UpdateItem's clause count, linear) and ``governor_client.offline.moto_update_parse`` (each
UpdateExpression text parsed once). ``install()`` is idempotent and reversible (``uninstall()``). With
``TUNING_GOVERNOR_MOTO_SPEED_CHECK=1`` every fast response is also produced the slow way and compared
(tests/integration/test_moto_speed.py runs the contract suite's operations in that mode). When moto's
internals are not the ones this was written against (5.x), nothing is installed and moto runs unchanged.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import moto
from moto.dynamodb import models
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoResult

from governor_client.offline import moto_clause_count, moto_json, moto_update_parse

_FAST_OPERATIONS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "TransactWriteItems",
        "TransactGetItems",
        "BatchGetItem",
        "BatchWriteItem",
    }
)
_JSON_LEAVES = (str, int, float, bool)
_state = threading.local()
_installed: dict[str, Any] = {}


class MotoSpeedMismatch(AssertionError):
    """The direct JSON text of a response differs from what moto's serializer writes (check mode)."""


class _NotPlain(Exception):
    """A value the direct path does not write (bytes, a timestamp, None, or not the model's shape)."""


def _pruned(value: Any, shape: Any) -> Any:
    """``value`` as the model's ``shape`` has it: members the output does not declare are dropped (as
    moto's serializer drops them); anything but JSON types raises :class:`_NotPlain`."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            raise _NotPlain
        members = shape.members
        return {key: _pruned(item, members[key]) for key, item in value.items() if key in members}
    if kind == "list":
        if not isinstance(value, list):
            raise _NotPlain
        return [_pruned(item, shape.member) for item in value]
    if kind == "map":
        if not isinstance(value, dict):
            raise _NotPlain
        return {key: _pruned(item, shape.value) for key, item in value.items()}
    if isinstance(value, _JSON_LEAVES) and kind in ("string", "integer", "long", "double", "float", "boolean"):
        return value
    raise _NotPlain


class _CopyModule:
    """Stands in for ``copy`` inside ``moto.dynamodb.models``: while a transaction's items are saved
    item by item, the whole-table deep copy becomes the identity (the table object itself)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        if getattr(_state, "items_saved", False) and isinstance(value, Table):
            return value
        return copy.deepcopy(value, memo)


def _key_of(table: Any, op_type: str, op: dict[str, Any]) -> dict[str, Any] | None:
    if op_type == "Put":
        attrs = op.get("Item") or {}
        names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        if not all(name in attrs for name in names):
            return None
        return {name: attrs[name] for name in names}
    key = op.get("Key")
    return key if isinstance(key, dict) else None


def _save_items(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[Any, Any, Any, Any]] | None:
    """(table, hash, range, deep copy of the item or None) for every item the transaction names; None
    when one cannot be located (then moto's own whole-table copy is kept)."""
    saved = []
    for entry in transact_items:
        if not isinstance(entry, dict) or len(entry) != 1:
            return None
        op_type, op = next(iter(entry.items()))
        table = backend.tables.get(op.get("TableName")) if isinstance(op, dict) else None
        if table is None:
            return None
        key = _key_of(table, op_type, op)
        if key is None:
            return None
        try:
            hash_key, range_key = backend.get_keys_value(table, key)
            current = table.get_item(hash_key, range_key)
        except Exception:
            return None
        saved.append((table, hash_key, range_key, copy.deepcopy(current)))
    return saved


def _restore(saved: list[tuple[Any, Any, Any, Any]]) -> None:
    for table, hash_key, range_key, item in reversed(saved):
        if range_key is not None:
            rows = table.items[hash_key]
            if item is None:
                rows.pop(range_key, None)
            else:
                rows[range_key] = item
        elif item is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = item


def _fast_transact(original: Callable[..., Any]) -> Callable[..., Any]:
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> Any:
        saved = _save_items(self, transact_items) if len(transact_items) <= 100 else None
        if saved is None:
            return original(self, transact_items)
        _state.items_saved = True
        try:
            return original(self, transact_items)
        except BaseException:
            _restore(saved)
            raise
        finally:
            _state.items_saved = False

    return transact_write_items


def _fast_query(original: Callable[..., Any]) -> Callable[..., Any]:
    """A Query of the table itself (no index) lists only its partition, not the whole table sorted."""

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name or hash_key is None or not self.range_key_attr:
            return original(self, hash_key, *args, **kwargs)
        _state.partition = hash_key
        try:
            fast = original(self, hash_key, *args, **kwargs)
        finally:
            _state.partition = None
        if os.environ.get("TUNING_GOVERNOR_MOTO_SPEED_CHECK") == "1":
            slow = original(self, hash_key, *args, **kwargs)
            if slow != fast:
                raise MotoSpeedMismatch(f"Query: {slow!r} != {fast!r}")
        return fast

    return query


def _fast_all_items(original: Callable[..., Any]) -> Callable[..., Any]:
    def all_items(self: Any) -> Any:
        partition = getattr(_state, "partition", None)
        if partition is None:
            return original(self)
        _state.partition = None  # the query's own listing only
        # moto's order (by hash, then range) within the one partition whose hash equals the query's
        return sorted(self.items.get(partition, {}).values(), key=lambda item: item.range_key)

    return all_items


def _fast_result(original: Callable[..., Any]) -> Callable[..., Any]:
    def execute_result(self: Any, context: Any) -> Any:
        operation = context.operation_model
        if operation.name not in _FAST_OPERATIONS or operation.output_shape is None:
            return original(self, context)
        try:
            document = _pruned(self.result, operation.output_shape)
        except _NotPlain:
            return original(self, context)
        fast = (200, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(document))
        if os.environ.get("TUNING_GOVERNOR_MOTO_SPEED_CHECK") == "1":
            slow = original(self, context)
            if slow[:2] != fast[:2] or json.loads(slow[2] or "{}") != document:
                raise MotoSpeedMismatch(f"{context.operation_model.name}: {slow!r} != {fast!r}")
        return fast

    return execute_result


def install() -> bool:
    """Install both shortcuts (once); False when moto is not the version they were written for."""
    if _installed:
        return True
    if not moto.__version__.startswith("5.") or getattr(models, "copy", None) is not copy:
        return False
    backend_cls = models.DynamoDBBackend
    _installed.update(
        transact=backend_cls.transact_write_items,
        execute=DynamoResult.execute_result,
        query=Table.query,
        all_items=Table.all_items,
    )
    models.copy = _CopyModule()  # type: ignore[attr-defined,assignment]
    backend_cls.transact_write_items = _fast_transact(_installed["transact"])  # type: ignore[method-assign]
    DynamoResult.execute_result = _fast_result(_installed["execute"])  # type: ignore[method-assign]
    Table.query = _fast_query(_installed["query"])  # type: ignore[method-assign]
    Table.all_items = _fast_all_items(_installed["all_items"])  # type: ignore[method-assign]
    moto_json.install()
    moto_clause_count.install()
    moto_update_parse.install()
    return True


def uninstall() -> None:
    """Put moto back as it was."""
    if not _installed:
        return
    models.copy = copy  # type: ignore[attr-defined]
    models.DynamoDBBackend.transact_write_items = _installed["transact"]  # type: ignore[method-assign]
    DynamoResult.execute_result = _installed["execute"]  # type: ignore[method-assign]
    Table.query = _installed["query"]  # type: ignore[method-assign]
    Table.all_items = _installed["all_items"]  # type: ignore[method-assign]
    moto_json.uninstall()
    moto_clause_count.uninstall()
    moto_update_parse.uninstall()
    _installed.clear()


@contextlib.contextmanager
def uninstalled() -> Iterator[None]:
    """Stock moto while inside (what the shortcuts are compared with), the shortcuts installed again after."""
    uninstall()
    try:
        yield
    finally:
        if not install():
            raise RuntimeError("moto_speed could not be installed again")
