"""Reading a policy document: YAML or JSON, duplicate keys rejected, then validated against the model,
every problem reported with its key path."""

from __future__ import annotations

import json
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from tuning_governor.policy.accounts import AccountPolicy
from tuning_governor.policy.errors import PolicyError, describe, kind_of, render_value
from tuning_governor.policy.model import DEPRECATED_KEYS, Defaults, Policy, TeamPolicy
from tuning_governor.policy.shares import Share


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys: PyYAML would silently keep the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, str | int | float | bool) or key is None:
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {render_value(key)}", key_node.start_mark
                )
            seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _DuplicateJsonKey(ValueError):
    pass


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateJsonKey(f"duplicate key {render_value(key)}")
        out[key] = value
    return out


def _load_document(text: str, source: str) -> Any:
    body = text.removeprefix("\ufeff")
    if body.lstrip().startswith("{"):
        try:
            return json.loads(body, object_pairs_hook=_json_object)
        except _DuplicateJsonKey as exc:
            raise PolicyError(source, [f"JSON: {exc}"], "is not valid JSON") from None
        except json.JSONDecodeError as exc:
            json_error = exc  # it may still be a YAML flow mapping; if not, JSON was meant
        try:
            return yaml.load(body, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
        except yaml.YAMLError:
            problem = f"line {json_error.lineno}, column {json_error.colno}: {json_error.msg}"
            raise PolicyError(source, [problem], "is not valid JSON") from None
    try:
        return yaml.load(body, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = ": ".join(part for part in (exc.context, exc.problem) if part) or "syntax error"
        raise PolicyError(source, [f"{where}{what}"], "is not valid YAML") from None
    except yaml.YAMLError as exc:
        raise PolicyError(source, [str(exc)[:200]], "is not valid YAML") from None


def parse_policy(text: str, source: str) -> Policy:
    """Parse and validate a policy written in YAML or JSON (text starting with ``{`` is read as JSON).

    ``source`` names where the text came from, for messages (e.g. ``ssm:/governor/policy``).
    Raises ``PolicyError`` for an empty or non-mapping document, a syntax error (with its line), a
    duplicate key, and every invalid key, each reported with its path (``teams.vision.instances
    ["ml.p3.2xlarge"]``), what was expected and what was given.
    """
    document = _load_document(text, source)
    if document is None or document == "":
        raise PolicyError(source, [], "is empty (an empty policy must be written as {})")
    if not isinstance(document, dict):
        raise PolicyError(source, [f"the document is {kind_of(document)}, expected a mapping of keys"], "is invalid")
    try:
        return Policy.model_validate(document)
    except ValidationError as exc:
        raise PolicyError(source, [describe(err, _allowed_keys) for err in exc.errors(include_url=False)]) from None


def _model_at(parent: tuple[int | str, ...]) -> type[BaseModel] | None:
    if not parent:
        return Policy
    if parent == ("defaults",):
        return Defaults
    if len(parent) == 2 and parent[0] == "teams":
        return TeamPolicy
    if len(parent) == 2 and parent[0] == "accounts":
        return AccountPolicy
    if len(parent) == 3 and parent[0] == "teams" and parent[2] == "share":
        return Share
    return None


def _allowed_keys(parent: tuple[int | str, ...]) -> list[str]:
    model = _model_at(parent)
    # Deprecated names are still read but never suggested.
    return sorted(set(model.model_fields) - DEPRECATED_KEYS) if model is not None else []
