"""The reference pages are the code's: each generated block is what its script renders today
(scripts/docblocks.py), and docs/reference/table-items.md names every key the layer writes and no other.

A stale page fails with the command that makes it current (``python scripts/X.py --write``)."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel

from tests.conftest import ROOT

SCRIPTS = ROOT / "scripts"
LAYER = ROOT / "layers" / "governor" / "tuning_governor"
#: (script, block, what renders it) for every generated block of the reference pages.
BLOCKS = (
    ("policy_docs", "BLOCK", "table"),
    ("cli_docs", "BLOCK", "tables"),
    ("event_docs", "RULES", "rules_table"),
    ("event_docs", "FIELDS", "fields_tables"),
    ("metric_docs", "METRICS", "metrics_table"),
    ("metric_docs", "ALARMS", "alarms_table"),
)


def _script(name: str) -> ModuleType:
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    return importlib.import_module(name)


def _page(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


@pytest.mark.parametrize(("script", "block", "render"), BLOCKS)
def test_the_generated_block_is_current(script: str, block: str, render: str) -> None:
    module = _script(script)
    assert getattr(module, block).stale(getattr(module, render)()) is None


def test_a_block_is_stale_once_the_page_differs_and_a_page_without_markers_is_an_error(tmp_path: Path) -> None:
    blocks = _script("docblocks")
    page = tmp_path / "page.md"
    block = blocks.Block(str(page), "things", "scripts/x.py")
    page.write_text(f"before\n{block.start}\nold\n{block.end}\nafter\n", encoding="utf-8")
    assert block.stale("new") == f"{page} is stale (things): run python scripts/x.py --write"
    assert block.write("new") and block.stale("new") is None
    assert page.read_text(encoding="utf-8") == f"before\n{block.start}\nnew\n{block.end}\nafter\n"
    page.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no <!-- things: start"):
        block.stale("new")


# -- policy ---------------------------------------------------------------------------------------------
def test_every_key_of_the_policy_and_of_each_rules_settings_has_its_row() -> None:
    from tuning_governor.policy.model import Defaults, Policy, TeamPolicy
    from tuning_governor.policy.rules import specs

    page = _page("docs/reference/policy.md")
    rows = set(re.findall(r"^\| `([^`]+)` \|", page, re.MULTILINE))

    def has(key: str) -> bool:
        return key in rows or any(row.startswith(f"{key}.") for row in rows)

    assert all(has(name) for name in Policy.model_fields)
    assert all(has(f"defaults.{name}") for name in Defaults.model_fields)
    assert {f"defaults.{key}" for spec in specs for key in spec.own_keys} <= rows  # the rules' own settings
    assert all(has(f"teams.<team>.{name}") for name in TeamPolicy.model_fields)


def test_a_policy_key_without_a_description_fails_the_generation() -> None:
    policy_docs = _script("policy_docs")

    class Undocumented(BaseModel):
        documented: int = 0
        """Has its docstring."""
        silent: int = 0

    with pytest.raises(ValueError, match="policy key silent has no description"):
        list(policy_docs.keys(Undocumented))


# -- CLI ------------------------------------------------------------------------------------------------
def test_every_subcommand_and_option_of_the_cli_is_on_the_page() -> None:
    import argparse

    from governor_client.__main__ import SUBCOMMANDS, build_parser

    page = _page("docs/reference/cli.md")
    cli_docs = _script("cli_docs")
    for spec in SUBCOMMANDS:
        assert f"### `tuning-governor {spec.name}`" in page
    for name, _, sub in cli_docs._subparsers(build_parser()):
        for action in sub._actions:
            shown = [flag for flag in action.option_strings if flag not in cli_docs.COMMON]
            if action.help != argparse.SUPPRESS:
                assert all(f"`{flag}" in page for flag in shown), (name, shown)


# -- events ---------------------------------------------------------------------------------------------
def test_every_rule_of_the_template_is_on_the_page_with_the_model_that_parses_it() -> None:
    event_docs = _script("event_docs")
    page = _page("docs/reference/events.md")
    rules = list(event_docs.rules())
    assert len([r for r in rules if r["pattern"]]) >= 6 and any(r["schedule"] for r in rules)
    for rule in rules:
        assert f"| {rule['name']} | {rule['target']} |" in page
    assert "`detail.TrainingJobDefinition.ResourceConfig.InstanceType`" in page  # a field the arrival reads


# -- metrics and alarms -----------------------------------------------------------------------------------
def test_every_metric_the_layer_names_literally_is_found_and_every_alarm_says_what_to_do() -> None:
    metric_docs = _script("metric_docs")
    literal = re.compile(r'(?:add_metric|single_metric)\(\s*name="([A-Za-z]+)"')
    written = {name for path in LAYER.rglob("*.py") for name in literal.findall(path.read_text(encoding="utf-8"))}
    found = {emission.name for emission in metric_docs.emissions()}
    assert written <= found
    assert found - written >= {"TrialsRecoveredAtFinalise", "QueueAdmitted", "PriceRegionsStored", "InvalidTags"}
    page = _page("docs/reference/metrics-and-alarms.md")
    for logical_id, alarm in metric_docs._alarms():
        assert alarm.get("AlarmDescription"), f"{logical_id} does not say what to do"
        assert f"| {logical_id} |" in page


def test_a_metric_math_alarm_is_shown_with_its_query_and_linked_to_the_metric_it_sums() -> None:
    metric_docs = _script("metric_docs")
    query = "SELECT SUM(MembersUnreachable) FROM SCHEMA(TuningGovernor, account, service) GROUP BY account"
    alarm = {"Metrics": [{"Id": "q", "Expression": query, "Period": 300, "ReturnData": True}]}
    assert metric_docs._watched(alarm) == (f"`{query}`", "the query's value", "300")
    assert metric_docs._metrics_of(alarm) == {"MembersUnreachable"}


def test_a_metric_name_the_generator_cannot_follow_fails_it() -> None:
    metric_docs = _script("metric_docs")
    tree = ast.parse(
        "def emit(suffix):\n    metrics.add_metric(name=prefix() + suffix, unit=MetricUnit.Count, value=1)\n"
    )
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    call = function.body[0].value  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="cannot follow metric name"):
        metric_docs._Resolver(tree, "somewhere").names(metric_docs._keyword(call, "name"), function)


# -- table items ----------------------------------------------------------------------------------------
_PREFIX = re.compile(r"^[A-Z][A-Z_]+#")
_FIXED = re.compile(r"^[A-Z][A-Z_]+$")


def _keys_written() -> set[str]:
    """Each key prefix (``JOB#``) the layer writes, and each fixed pk, sk or gsi1pk (``META``, ``GAPS``)."""
    found: set[str] = set()
    for path in LAYER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            head = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
            if isinstance(head, ast.Constant) and isinstance(head.value, str) and _PREFIX.match(head.value):
                found.add(head.value.split("#")[0] + "#")
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    named = isinstance(key, ast.Constant) and key.value in {"pk", "sk", "gsi1pk"}
                    if named and isinstance(value, ast.Constant) and _FIXED.match(str(value.value)):
                        found.add(str(value.value))
            # The item port's keys are (pk, sk) pairs: ``(team_pk(team), "RUNNING")``.
            if isinstance(node, ast.Tuple) and len(node.elts) == 2:
                sk = node.elts[1]
                if isinstance(sk, ast.Constant) and isinstance(sk.value, str) and _FIXED.match(sk.value):
                    found.add(sk.value)
    return found


def _keys_named() -> set[str]:
    """The same, as docs/reference/table-items.md names them: in its table's pk and sk columns, in a
    ``gsi1pk = ...`` and in its paragraph on the secondary index (not in prose on items no longer read)."""
    page = _page("docs/reference/table-items.md")
    cells = [" ".join(line.split("|")[2:4]) for line in page.splitlines() if line.startswith("| ")]
    index = page.partition("Secondary index")[2].split("\n\n", 1)[0]
    texts = [*cells, *re.findall(r"gsi1pk = [^`]+", page), index]
    found: set[str] = set()
    for code in re.findall(r"`([^`]+)`", " ".join(f"`{t}`" if t.startswith("gsi1pk") else t for t in texts)):
        for key in re.findall(r"(?:^|= )([A-Z][A-Z_]+#?)", code):
            found.add(key)
    return found


def test_the_table_items_page_names_every_key_the_layer_writes_and_no_other() -> None:
    written, named = _keys_written(), _keys_named()
    assert {"JOB#", "TEAM#", "TRIAL#", "QUEUE#", "META", "LEDGER"} <= written  # the scan sees the keys
    assert written - named == set(), "docs/reference/table-items.md lacks these keys"
    assert named - written == set(), "docs/reference/table-items.md names keys the code does not write"
