"""Two more of moto's per-request costs made cheap, with moto's responses kept byte for byte.

* Every JSON-protocol response (SageMaker, the AMT stand-in's, Service Quotas, Secrets Manager, ...) is
  walked by moto's generic serializer, which looks each member of the output shape up through six alias
  providers, with a context object per member. When the result is plain (dicts whose keys are all
  members of their shape and none of the other members' aliases, strings, integers, floats, booleans,
  datetimes), every lookup finds the member's own key, so :func:`plain_document` writes the same
  document in the same member order directly and moto's own response builder turns it into the body.
  Anything else (objects, enums, None in a list, blobs, documents, response transformers, errors,
  paginated results) goes through moto's serializer as before.
* Every request lists the response class's methods (``inspect.getmembers``) to ask whether one is named
  after the action; :class:`_FunctionNames` answers that question for the one name asked.

With ``TUNING_GOVERNOR_MOTO_SPEED_CHECK=1`` each direct response is also serialized by moto and the two
compared (tests/integration/test_moto_speed.py).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from botocore import xform_name
from moto import settings
from moto.core import responses
from moto.core.responses import ActionResult
from moto.core.serialize import JSONSerializer, XFormedAttributePicker

_installed: dict[str, Any] = {}
_aliases: dict[int, tuple[Any, frozenset[str]]] = {}


class MotoJsonMismatch(AssertionError):
    """The direct response differs from the one moto's serializer writes (check mode)."""


class _NotPlain(Exception):
    """A value moto's serializer may treat otherwise than :func:`plain_document` (then it is used)."""


def _member_aliases(shape: Any) -> frozenset[str]:
    """Every name, other than a member's own key, that moto's attribute picker may look a member up by
    (shape name, snake case, prefixes, serialization name): a dict holding one of them is not plain."""
    names: set[str] = set()
    for key, member in shape.members.items():
        candidates = {xform_name(key), member.serialization.get("name", key)}
        if member.type_name in ("list", "structure") and member.name not in shape.members:
            candidates.update((member.name, xform_name(member.name)))
        if key.lower().startswith(shape.name.lower()):
            candidates.add(key[len(shape.name) :])
        if key.lower().startswith("dict"):
            candidates.add(key[4:])
        names.update({*candidates, *map(xform_name, candidates)} - {key})
    return frozenset(names)


def member_named(shape: Any, key: str) -> bool:
    """True when ``key`` is a member whose serialized name is its own (the plain case)."""
    return key in shape.members and shape.members[key].serialization.get("name", key) == key


def _aliases_of(shape: Any) -> frozenset[str]:
    cached = _aliases.get(id(shape))
    if cached is None or cached[0] is not shape:
        cached = (shape, _member_aliases(shape))
        _aliases[id(shape)] = cached
    return cached[1]


def _structure(value: Any, shape: Any, timestamps: Any) -> dict[str, Any]:
    if type(value) is not dict or shape.is_document_type:
        raise _NotPlain
    members = shape.members
    if any(not member_named(shape, key) for key in value) or not _aliases_of(shape).isdisjoint(value):
        raise _NotPlain
    return {
        key: plain_document(value[key], member, timestamps)
        for key, member in members.items()
        if value.get(key) is not None
    }


def plain_document(value: Any, shape: Any, timestamps: Any) -> Any:
    """``value`` as moto's JSON serializer writes it for ``shape``; :class:`_NotPlain` when unsure."""
    kind = shape.type_name
    if kind == "structure":
        return _structure(value, shape, timestamps)
    if kind == "list":
        if type(value) is not list or shape.member.serialization.get("name", shape.member.name) != shape.member.name:
            raise _NotPlain
        if any(item is None for item in value):
            raise _NotPlain
        return [plain_document(item, shape.member, timestamps) for item in value]
    if kind == "map":
        if type(value) is not dict or "name" in shape.value.serialization:
            raise _NotPlain
        if any(type(key) is not str or not key or item is None for key, item in value.items()):
            raise _NotPlain
        return {key: plain_document(item, shape.value, timestamps) for key, item in value.items()}
    return _scalar(value, kind, shape, timestamps)


def _scalar(value: Any, kind: str, shape: Any, timestamps: Any) -> Any:
    kinds = type(value)
    if kind == "string" and kinds is str:
        return value
    if kind in ("integer", "long") and kinds is int:
        return value
    if kind in ("float", "double") and kinds in (int, float):
        return float(value)
    if kind == "boolean" and kinds is bool:
        return value
    if kind == "timestamp" and isinstance(value, datetime):
        wrapper: dict[str, Any] = {}
        timestamps.serialize(wrapper, value, shape, "timestamp")
        return wrapper["timestamp"]
    raise _NotPlain


def _direct(result: Any, context: Any) -> tuple[Any, Any, Any] | None:
    """moto's response for a plain result of a JSON-protocol operation, written directly; None otherwise."""
    serializer_cls = context.serializer_class
    operation = context.operation_model
    if (
        serializer_cls is not JSONSerializer
        or getattr(context.response, "RESPONSE_KEY_PATH_TO_TRANSFORMER", None)
        or isinstance(result, Exception)
        or operation.has_event_stream_output
        or operation.output_shape is None
    ):
        return None
    serializer = serializer_cls(
        operation_model=operation,
        pretty_print=settings.PRETTIFY_RESPONSES,
        value_picker=XFormedAttributePicker(response_transformers=None),
    )
    try:
        document = _structure(result, operation.output_shape, serializer._timestamp_serializer)
    except _NotPlain:
        return None
    response = serializer._serialized_result_to_response(
        serializer._create_default_response(), result, operation.output_shape, document
    )
    return response["status_code"], response["headers"], response["body"]


def _fast_result(original: Callable[..., Any]) -> Callable[..., Any]:
    def execute_result(self: Any, context: Any) -> Any:
        fast = _direct(self.result, context) if type(self) is ActionResult else None
        if fast is None:
            return original(self, context)
        if os.environ.get("TUNING_GOVERNOR_MOTO_SPEED_CHECK") == "1":
            slow = original(self, context)
            if tuple(slow) != fast:
                raise MotoJsonMismatch(f"{context.operation_model.name}: {slow!r} != {fast!r}")
        return fast

    return execute_result


class _FunctionNames:
    """``name in method_names_from_class(clazz)`` (the names ``inspect.getmembers`` finds with
    ``inspect.isfunction``), answered for the one name asked instead of listing them all."""

    def __init__(self, clazz: Any) -> None:
        self._clazz = clazz

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str) or not any(name in vars(c) for c in inspect.getmro(self._clazz)):
            return False
        try:
            return inspect.isfunction(getattr(self._clazz, name))
        except AttributeError:
            return False


def install() -> None:
    """Install both (once)."""
    if _installed:
        return
    _installed.update(execute=ActionResult.execute_result, names=vars(responses)["method_names_from_class"])
    ActionResult.execute_result = _fast_result(_installed["execute"])  # type: ignore[method-assign]
    vars(responses)["method_names_from_class"] = _FunctionNames  # moto's module does not export the name


def uninstall() -> None:
    """Put moto back as it was."""
    if not _installed:
        return
    ActionResult.execute_result = _installed["execute"]  # type: ignore[method-assign]
    vars(responses)["method_names_from_class"] = _installed["names"]
    _installed.clear()
