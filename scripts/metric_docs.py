"""docs/reference/metrics-and-alarms.md's tables: every metric the code emits and every alarm template.yaml sets.

    python scripts/metric_docs.py           # print the tables
    python scripts/metric_docs.py --write   # put them between the markers of docs/reference/metrics-and-alarms.md
    python scripts/metric_docs.py --check   # exit 1 when the page is not current

Metrics: every ``add_metric(name=...)`` and ``single_metric(name=...)`` call under the layer, read with
``ast``. A name written as a variable is followed to what it can be: a literal, both arms of a
conditional, the tuple a loop unpacks, the argument the function's callers in the module pass, or an
f-string over a ``Literal`` parameter; a name it cannot follow fails the generation. Alarms: every
``AWS::CloudWatch::Alarm`` of template.yaml (an alarm added there appears here on the next ``--write``,
and the test fails until then), with its metric, statistic, threshold and its AlarmDescription, which
says what to do. tests/unit/test_reference_docs.py keeps the page current.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docblocks import ROOT, Block, cell, main

sys.path.insert(0, str(ROOT))
from tests.template.cfn import load_template as _load
from tuning_governor.observability import NAMESPACE

PAGE = "docs/reference/metrics-and-alarms.md"
METRICS = Block(PAGE, "metrics", "scripts/metric_docs.py")
ALARMS = Block(PAGE, "alarms", "scripts/metric_docs.py")
LAYER = ROOT / "layers" / "governor"
EMITTERS = {"add_metric", "single_metric"}
COMPARISONS = {
    "GreaterThanThreshold": ">",
    "GreaterThanOrEqualToThreshold": ">=",
    "LessThanThreshold": "<",
    "LessThanOrEqualToThreshold": "<=",
}


@dataclass(frozen=True)
class Emission:
    name: str
    unit: str
    module: str
    function: str
    dimensions: tuple[str, ...]


class _Resolver:
    """What the ``name=`` of one emission can be, within its module."""

    def __init__(self, tree: ast.Module, module: str) -> None:
        self.tree, self.module = tree, module

    def names(self, node: ast.expr, scope: ast.FunctionDef) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.IfExp):
            return self.names(node.body, scope) + self.names(node.orelse, scope)
        if isinstance(node, ast.JoinedStr):
            return self._formatted(node, scope)
        if isinstance(node, ast.Name):
            return self._variable(node.id, scope)
        raise ValueError(f"{self.module}.{scope.name}: cannot follow metric name {ast.unparse(node)}")

    def _variable(self, name: str, scope: ast.FunctionDef) -> list[str]:
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return self.names(node.value, scope)
            if isinstance(node, ast.For) and isinstance(node.target, ast.Tuple) and isinstance(node.iter, ast.Tuple):
                position = [isinstance(t, ast.Name) and t.id == name for t in node.target.elts]
                if any(position):
                    index = position.index(True)
                    return [n for item in node.iter.elts for n in self.names(item.elts[index], scope)]  # type: ignore[attr-defined]
        parameters = [a.arg for a in scope.args.args]
        if name in parameters:
            return self._passed(scope.name, parameters.index(name), name)
        raise ValueError(f"{self.module}.{scope.name}: cannot follow metric name {name}")

    def _passed(self, function: str, index: int, keyword: str) -> list[str]:
        """The literal arguments the module's calls of ``function`` pass at ``index`` (or as ``keyword``)."""
        found = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function:
                passed = [k.value for k in node.keywords if k.arg == keyword] or node.args[index : index + 1]
                found += [p.value for p in passed if isinstance(p, ast.Constant)]
        if not found:
            raise ValueError(f"{self.module}.{function}: no call passes a literal metric name")
        return found

    def _formatted(self, node: ast.JoinedStr, scope: ast.FunctionDef) -> list[str]:
        """``f"Queue{event.capitalize()}"`` with ``event: Literal[...]``: one name per value."""
        (literal, value) = node.values
        call = value.value  # type: ignore[attr-defined]
        assert isinstance(literal, ast.Constant) and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
        parameter = call.func.value
        assert isinstance(parameter, ast.Name) and call.func.attr == "capitalize"
        hints = get_type_hints(getattr(importlib.import_module(self.module), scope.name))
        values = get_args(hints[parameter.id])
        assert get_origin(hints[parameter.id]) is Literal, f"{self.module}.{scope.name}: {parameter.id} is no Literal"
        return [f"{literal.value}{v.capitalize()}" for v in values]


@functools.cache
def load_template() -> dict[str, Any]:
    """template.yaml, read once per process."""
    return _load()


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            yield node


def emissions() -> list[Emission]:
    """Every metric emission under the layer, by metric name then module."""
    found: set[Emission] = set()
    for path in sorted((LAYER / "tuning_governor").rglob("*.py")):
        module = ".".join(path.relative_to(LAYER).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        resolver = _Resolver(tree, module)
        for function in _functions(tree):
            for call in ast.walk(function):
                called = getattr(call, "func", None)
                name = getattr(called, "attr", getattr(called, "id", None))
                if not isinstance(call, ast.Call) or name not in EMITTERS or _keyword(call, "name") is None:
                    continue
                unit = _keyword(call, "unit")
                dimensions = (
                    "service",
                    *tuple(
                        ast.literal_eval(k)
                        for sub in ast.walk(function)
                        if isinstance(sub, ast.Call)
                        and getattr(sub.func, "attr", "") == "add_dimension"
                        and (k := _keyword(sub, "name")) is not None
                    ),
                )
                for metric in resolver.names(_keyword(call, "name"), function):  # type: ignore[arg-type]
                    found.add(Emission(metric, getattr(unit, "attr", "Count"), module, function.name, dimensions))
    return sorted(found, key=lambda e: (e.name, e.module, e.function))


def _metrics_of(alarm: dict[str, Any]) -> set[str]:
    """The governor's metrics an alarm watches: its ``MetricName`` in the governor's namespace, or each
    metric a metric-math query names (``SUM(MembersUnreachable)``) or its ``MetricStat`` does."""
    if alarm.get("Namespace") == NAMESPACE:
        return {alarm["MetricName"]}
    found = set()
    for query in alarm.get("Metrics", []):
        metric = query.get("MetricStat", {}).get("Metric", {})
        if metric.get("Namespace") == NAMESPACE:
            found.add(metric["MetricName"])
        if NAMESPACE in query.get("Expression", ""):
            found |= set(re.findall(r"\b[A-Z][A-Za-z]+\b", query["Expression"].split(" FROM ")[0]))
    return found - {"SELECT", "SUM", "AVG", "MAX", "MIN", "COUNT"}


def metrics_table() -> str:
    alarmed = defaultdict(list)
    for logical_id, alarm in _alarms():
        for metric in _metrics_of(alarm):
            alarmed[metric].append(logical_id)
    by_name: dict[str, list[Emission]] = defaultdict(list)
    for emission in emissions():
        by_name[emission.name].append(emission)
    rows = ["| metric | unit | dimensions | emitted by | alarm |", "|---|---|---|---|---|"]
    for name, where in by_name.items():
        emitted = "<br>".join(sorted({f"`{e.module}.{e.function}`" for e in where}))
        units = ", ".join(sorted({e.unit for e in where}))
        dims = ", ".join(sorted({d for e in where for d in e.dimensions}))
        alarms = ", ".join(alarmed.get(name, [])) or "-"
        rows.append(f"| `{name}` | {units} | {dims} | {emitted} | {alarms} |")
    return "\n".join(rows)


def _alarms() -> list[tuple[str, dict[str, Any]]]:
    resources = load_template()["Resources"]
    alarms = [(k, v) for k, v in resources.items() if v["Type"] == "AWS::CloudWatch::Alarm"]
    return [(k, {**v["Properties"], **({"Condition": v["Condition"]} if "Condition" in v else {})}) for k, v in alarms]


def _show(value: Any) -> str:
    """A template value: ``!Ref X`` / ``!GetAtt X.Y`` by the resource they name, a plain value as is."""
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    if isinstance(value, dict) and "Fn::Sub" in value:
        return str(value["Fn::Sub"])
    return str(value)


def _watched(alarm: dict[str, Any]) -> tuple[str, str, str]:
    """(metric, statistic, period) of an alarm on one metric or on metric-math queries."""
    if "MetricName" in alarm:
        return f"`{alarm['Namespace']}` `{alarm['MetricName']}`", alarm["Statistic"], str(alarm["Period"])
    returned = [q for q in alarm["Metrics"] if q.get("ReturnData", True)]
    shown = "; ".join(
        f"`{q['Expression']}`" if "Expression" in q else f"`{q['MetricStat']['Metric']['MetricName']}`"
        for q in returned
    )
    statistic = " ".join({q["MetricStat"]["Stat"] for q in returned if "MetricStat" in q}) or "the query's value"
    period = ", ".join(sorted({str(q.get("Period", q.get("MetricStat", {}).get("Period"))) for q in returned}))
    return shown, statistic, period


def alarms_table() -> str:
    rows = ["| alarm | metric | on | fires when | what to do |", "|---|---|---|---|---|"]
    for logical_id, alarm in _alarms():
        dims = [f"{d['Name']} {_show(d['Value'])}" for d in alarm.get("Dimensions", [])]
        if alarm.get("Condition"):
            dims.append(f"only when {alarm['Condition']}")
        metric, statistic, period = _watched(alarm)
        window = f"{alarm.get('DatapointsToAlarm', alarm['EvaluationPeriods'])} of {alarm['EvaluationPeriods']}"
        when = (
            f"{statistic} {COMPARISONS[alarm['ComparisonOperator']]} {alarm['Threshold']}"
            f" in {window} periods of {period} s"
        )
        rows.append(
            f"| {logical_id} | {cell(metric)} | {cell(', '.join(dims))} | {when} |"
            f" {cell(_show(alarm.get('AlarmDescription', '')))} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    raise SystemExit(main([(METRICS, metrics_table), (ALARMS, alarms_table)], __doc__.splitlines()[0]))
