"""docs/reference/events.md's tables: the events the governor consumes and the fields it reads of each.

    python scripts/event_docs.py           # print the tables
    python scripts/event_docs.py --write   # put them between the markers of docs/reference/events.md
    python scripts/event_docs.py --check   # exit 1 when the page is not current

The rules are template.yaml's: every ``EventBridgeRule`` and ``Schedule`` event of a function and every
``AWS::Events::Rule`` resource, with the source, detail type and detail filter of its pattern. The fields
are the pydantic models' the handlers parse those events with (``EventBridgeEvent`` and its subclasses in
``tuning_governor.models``), walked down to each leaf under its AWS name. A rule whose source and detail
type no model parses fails the generation. tests/unit/test_reference_docs.py keeps the page current.
"""

from __future__ import annotations

import functools
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docblocks import ROOT, Block, cell, main
from policy_docs import _mapping, _model_in, _plain, type_name

sys.path.insert(0, str(ROOT))
from pydantic import BaseModel

from tests.template.cfn import load_template as _load
from tuning_governor.models.events import EventBridgeEvent

PAGE = "docs/reference/events.md"
RULES = Block(PAGE, "event-rules", "scripts/event_docs.py")
FIELDS = Block(PAGE, "event-fields", "scripts/event_docs.py")
#: The modules whose ``EventBridgeEvent`` subclasses parse what the rules deliver.
MODELS = ("tuning_governor.models.events", "tuning_governor.models.tag_changes")


@functools.cache
def load_template() -> dict[str, Any]:
    """template.yaml, read once per process."""
    return _load()


def _value(value: Any) -> str:
    """A template value as written: ``!Ref X`` as ``${X}``, a list joined."""
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return f"${{{value['Ref']}}}"
    if isinstance(value, list):
        return ", ".join(map(_value, value))
    return str(value)


def rules() -> Iterator[dict[str, Any]]:
    """Every rule of template.yaml: its function (or target), name, kind, and pattern or schedule."""
    for logical_id, resource in load_template()["Resources"].items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::Events::Rule":
            targets = ", ".join(_value(t["Id"]) for t in properties.get("Targets", []))
            pattern = properties.get("EventPattern")
            yield {
                "target": targets,
                "name": logical_id,
                "pattern": pattern,
                "schedule": properties.get("ScheduleExpression"),
            }
        for name, event in (properties.get("Events") or {}).items():
            if event["Type"] == "EventBridgeRule":
                yield {"target": logical_id, "name": name, "pattern": event["Properties"]["Pattern"], "schedule": None}
            elif event["Type"] == "Schedule":
                yield {
                    "target": logical_id,
                    "name": name,
                    "pattern": None,
                    "schedule": _value(event["Properties"]["Schedule"]),
                }


def _literal(model: type[BaseModel], name: str) -> str | None:
    annotation = _plain(model.model_fields[name].annotation)
    return get_args(annotation)[0] if get_origin(annotation) is Literal else None


def models() -> dict[tuple[str, str], type[BaseModel]]:
    """The event models by (source, detail type)."""
    for module in MODELS:
        importlib.import_module(module)
    found: dict[tuple[str, str], type[BaseModel]] = {}
    for model in EventBridgeEvent.__subclasses__():
        source, detail_type = _literal(model, "source"), _literal(model, "detail_type")
        if source and detail_type:
            found[(source, detail_type)] = model
    return found


def _consumed() -> list[tuple[dict[str, Any], str, str]]:
    """(rule, source, detail type) of every pattern rule, each (source, detail type) it matches."""
    found = []
    for rule in rules():
        pattern = rule["pattern"] or {}
        found += [(rule, s, d) for s in pattern.get("source", []) for d in pattern.get("detail-type", [])]
    return found


def rules_table() -> str:
    rows = ["| rule | delivered to | source | detail-type | detail filter | parsed as |", "|---|---|---|---|---|---|"]
    known = models()
    for rule, source, detail_type in _consumed():
        model = known.get((source, detail_type))
        if model is None:
            raise ValueError(f"rule {rule['name']}: no model in {MODELS} parses {source} / {detail_type}")
        detail = rule["pattern"].get("detail")
        shown = f"`{json.dumps(detail, separators=(', ', ': '))}`" if detail else "every event"
        rows.append(
            f"| {rule['name']} | {rule['target']} | `{source}` | {detail_type} | {cell(shown)} | `{model.__module__}.{model.__name__}` |"
        )
    rows += ["", "| schedule | runs | expression |", "|---|---|---|"]
    rows += [f"| {r['name']} | {r['target']} | `{r['schedule']}` |" for r in rules() if r["schedule"]]
    return "\n".join(rows)


def fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str, bool]]:
    """(AWS path, type, required) of every leaf field of ``model`` (built first: a field annotated by a
    forward reference is only resolved when the model is, whatever was imported before)."""
    model.model_rebuild()
    for name, field in model.model_fields.items():
        path = f"{prefix}{field.alias or name}"
        inner, mapping = _model_in(field.annotation), _mapping(field.annotation)
        listed = get_args(_plain(field.annotation)) if get_origin(_plain(field.annotation)) is list else ()
        if inner is not None:
            yield from fields(inner, f"{path}.")
        elif listed and _model_in(listed[0]) is not None:
            yield from fields(_model_in(listed[0]), f"{path}[].")  # type: ignore[arg-type]
        elif mapping is not None and _model_in(mapping[1]) is not None:
            yield from fields(_model_in(mapping[1]), f"{path}.<key>.")  # type: ignore[arg-type]
        else:
            yield path, type_name(field.annotation, field.metadata), field.is_required()


def fields_tables() -> str:
    out: list[str] = []
    consumed = {(s, d) for _, s, d in _consumed()}
    for (source, detail_type), model in models().items():
        if (source, detail_type) not in consumed:
            continue
        out += [f"### {detail_type} (`{source}`)", "", f"`{model.__module__}.{model.__name__}`:", ""]
        out += ["| field | type | required |", "|---|---|---|"]
        out += [f"| `{p}` | {cell(t)} | {'yes' if r else 'no'} |" for p, t, r in fields(model)]
        out.append("")
    return "\n".join(out).rstrip("\n")


if __name__ == "__main__":
    raise SystemExit(main([(RULES, rules_table), (FIELDS, fields_tables)], __doc__.splitlines()[0]))
