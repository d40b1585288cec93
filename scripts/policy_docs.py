"""docs/reference/policy.md's table of keys, generated from the policy's pydantic model.

    python scripts/policy_docs.py           # print the table
    python scripts/policy_docs.py --write   # put it between the markers of docs/reference/policy.md
    python scripts/policy_docs.py --check   # exit 1 when the page is not current

One row per key of ``tuning_governor.policy.model.Policy``, walked down every section: ``defaults``
(``SharedDefaults`` and each rule's own settings, composed from ``policy.rules``), ``teams.<team>`` and
its ``share``, ``large_batch``, and any section added later (a mixin's keys too). Each row gives the key's
type (with the bounds the model enforces), its default and its description: the attribute docstring
written under the field in the code (or, for a section, its model's docstring). A key with no docstring
fails the generation, so the table cannot fall behind the model. tests/unit/test_reference_docs.py keeps
the page current.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docblocks import ROOT, Block, cell, main

sys.path.insert(0, str(ROOT / "layers" / "governor"))
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from tuning_governor.policy.model import Policy

BLOCK = Block("docs/reference/policy.md", "policy-keys", "scripts/policy_docs.py")
#: What a mapping's key stands for, by the mapping's key in the policy (``quotas.<type>``).
PLACEHOLDERS = {
    "quotas": "type",
    "spot_quotas": "type",
    "instances": "type",
    "capacity_limits": "type",
    "teams": "team",
    "team_names": "team",
    "accounts": "id",
    "grace_minutes": "rule",
    "slack_users": "owner",
    "channels": "kind",
    "literature_limits": "optimizer",
    "names": "hyperparameter",
    "prices": "type",
}


#: The keys of ``Policy`` itself that carry no attribute docstring (policy/model.py is at the size limit):
#: described here; any other key without a docstring fails the generation.
UNDOCUMENTED = {
    "mode": "`monitor` evaluates and reports every decision but never stops a job; `enforce` stops the jobs a"
    " rule decides to stop (see Why monitor is the default)",
    "exempt_tag": "A job tagged with this key and the value `true` (any case, spaces trimmed) is never stopped; its"
    " decisions are still reported (any other value, or the key in another case, is a `tags` warning)",
    "team_tag": "The tag whose value names the job's team (trimmed; a listed team's name matched ignoring case);"
    " overruled by `teams.<team>.execution_roles` (see Team identity)",
    "budget_tag": "The tag with which a job sets its own budget in USD (spellings: see Precedence)",
    "quotas": "The account's limit of concurrent on-demand training instances per type (the lower of it and"
    " the applied Service Quota applies)",
}
#: A mapping whose values are a mapping again (``prices.<region>.<type>``): what the outer key stands for.
NESTED = {"prices": "region"}


@dataclass(frozen=True)
class Key:
    path: str
    type: str
    default: str
    description: str


def _docstrings(model: type) -> dict[str, str]:
    """The attribute docstrings of ``model`` and its bases (the string under each field), by field name."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if cls in {object, BaseModel} or not issubclass(cls, BaseModel):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(cls))
        except (OSError, TypeError):
            continue  # a model made by create_model: its fields' docstrings are its bases'
        body = ast.parse(source).body[0]
        assert isinstance(body, ast.ClassDef)
        for field, after in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                found[field.target.id] = inspect.cleandoc(after.value.value)
    return found


def _first_paragraph(text: str) -> str:
    return " ".join(text.split("\n\n", maxsplit=1)[0].split())


def _bounds(metadata: list[Any]) -> str:
    """The numeric or length bounds in a field's metadata: ``0-1,000,000``, ``> 1``, ``1-256 characters``."""
    got = {
        name: getattr(m, name)
        for m in metadata
        for name in ("ge", "le", "gt", "lt", "min_length", "max_length")
        if getattr(m, name, None) is not None
    }
    parts = []
    if "ge" in got and "le" in got:
        parts.append(f"{got['ge']:,}-{got['le']:,}")
    else:
        parts += [
            f"{sign} {got[name]:,}"
            for name, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
            if name in got
        ]
    if "gt" in got and "le" in got:
        parts = [f"> {got['gt']:,}, <= {got['le']:,}"]
    if "min_length" in got or "max_length" in got:
        low, high = got.get("min_length", 0), got.get("max_length")
        parts.append(f"length {low}-{high}" if high is not None else f"length >= {low}")
    return ", ".join(parts)


#: A default that is a section, an empty mapping or list, or None.
_EMPTY = {"NoneType": "null", "dict": "none", "list": "none"}
_SCALARS = {int: "integer", float: "number", Decimal: "decimal", bool: "true | false", str: "string"}


def _words(metadata: list[Any]) -> str:
    """What a validator checks, from its function's name (``_instance_type``: an instance type)."""
    names = [getattr(getattr(m, "func", None), "__name__", "") for m in metadata]
    return " ".join(n.strip("_").replace("_", " ") for n in names if n and n not in {"none_to_empty", "empty_to_none"})


def type_name(annotation: Any, metadata: list[Any] | None = None) -> str:
    """A reader's name for ``annotation``: its scalar, literal values, list or mapping, with its bounds."""
    metadata = list(metadata or [])
    while get_origin(annotation) is Annotated:
        annotation, *extra = get_args(annotation)
        metadata += [m for e in extra for m in (e.metadata if isinstance(e, FieldInfo) else [e])]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in {Union, types.UnionType}:
        kept = [a for a in args if a is not type(None)]
        text = " or ".join(type_name(a) for a in kept)
        named = f"{text} ({_words(metadata)})" if _words(metadata) else text
        return f"{named} or null" if len(kept) < len(args) else named
    if origin is Literal:
        return " | ".join(f"`{a}`" for a in args)
    if origin is list:
        count = _bounds(metadata).replace("length ", "")
        return f"list of {type_name(args[0])}" + (f" ({count} items)" if count else "")
    if origin is dict:
        return f"mapping of {type_name(args[0])} to {type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    base = _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))
    details = ", ".join(d for d in (_words(metadata), _bounds(metadata)) if d)
    return f"{base} ({details})" if details else base


def _default(field: FieldInfo) -> str:
    value = None if field.is_required() else field.get_default(call_default_factory=True)
    if field.is_required() or isinstance(value, BaseModel) or value in ({}, [], None):
        return "required" if field.is_required() else _EMPTY.get(type(value).__name__, "see its keys")
    if isinstance(value, dict):
        return ", ".join(f"`{k}: {v}`" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(f"`{v}`" for v in value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{str(value).lower() if isinstance(value, bool) else value}`"


def _plain(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model ``annotation`` holds, unwrapping Annotated and Optional."""
    annotation = _plain(annotation)
    if get_origin(annotation) in {Union, types.UnionType}:
        models = [m for m in map(_model_in, get_args(annotation)) if m is not None]
        return models[0] if models else None
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _mapping(annotation: Any) -> tuple[Any, Any] | None:
    """A mapping's key and value types, else None."""
    annotation = _plain(annotation)
    return get_args(annotation) if get_origin(annotation) is dict else None


def _markdown(text: str) -> str:
    return _first_paragraph(text).replace("``", "`")


def _describe(model: type[BaseModel], name: str, docs: dict[str, str], path: str) -> str:
    field = model.model_fields[name]
    inner = _model_in(field.annotation) or _model_in((_mapping(field.annotation) or (None, None))[1])
    text = docs.get(name) or field.description or UNDOCUMENTED.get(path)
    text = text or (inner.__doc__ if inner is not None else None)
    if not text:
        raise ValueError(f"policy key {path} has no description: write a docstring under the field")
    return _markdown(text)


def _mapping_rows(path: str, key: str, mapping: tuple[Any, Any], field: FieldInfo, text: str) -> Iterator[Key]:
    """``path.<key>`` rows: one per kind of value (``prices.<type>`` and ``prices.<region>.<type>``)."""
    key_type, value_type = mapping
    placeholder = PLACEHOLDERS.get(key, "key")
    values = (
        list(get_args(_plain(value_type)))
        if get_origin(_plain(value_type)) in {Union, types.UnionType}
        else [value_type]
    )
    for value in values:
        nested = _mapping(value)
        if nested is not None and key in NESTED:
            shown, leaf = f"{path}.<{NESTED[key]}>.<{placeholder}>", nested[1]
        else:
            shown, leaf = f"{path}.<{placeholder}>", value
        keyed = f"; `<{placeholder}>`: {type_name(key_type)}"
        yield Key(shown, type_name(leaf) + keyed, _default(field), text)


def keys(model: type[BaseModel] = Policy, prefix: str = "") -> Iterator[Key]:
    """Every key of ``model``, depth first, in the model's field order."""
    docs = _docstrings(model)
    for name, field in model.model_fields.items():
        key = field.alias or name
        path = f"{prefix}{key}"
        text = _describe(model, name, docs, path)
        section, mapping = _model_in(field.annotation), _mapping(field.annotation)
        if section is not None:
            yield Key(path, "section", _default(field), text)
            yield from keys(section, f"{path}.")
        elif mapping is not None and (values := _model_in(mapping[1])) is not None:
            placeholder = PLACEHOLDERS.get(key, "key")
            yield Key(f"{path}.<{placeholder}>", f"section per {type_name(mapping[0])}", _default(field), text)
            yield from keys(values, f"{path}.<{placeholder}>.")
        elif mapping is not None:
            yield from _mapping_rows(path, key, mapping, field, text)
        else:
            yield Key(path, type_name(field.annotation, field.metadata), _default(field), text)


def table() -> str:
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    rows += [f"| `{k.path}` | {cell(k.type)} | {cell(k.default)} | {cell(k.description)} |" for k in keys()]
    return "\n".join(rows)


if __name__ == "__main__":
    raise SystemExit(main([(BLOCK, table)], __doc__.splitlines()[0]))
