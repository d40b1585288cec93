"""docs/explanation/security.md's tables of what the IAM documents allow, generated from the documents themselves.

    python scripts/iam_docs.py           # print the tables
    python scripts/iam_docs.py --write   # put them between the markers of docs/explanation/security.md
    python scripts/iam_docs.py --check   # exit 1 when the page is not current (scripts/docblocks.py)

One table per document of docs/iam/: the permissions boundary (a CloudFormation template: resources are
shown as written, ``${SlackSecretPrefix}`` for a stack parameter, and a statement that exists only when a
parameter is set says so), the deployer policy and the service control policy. One row per statement:
what it allows or denies, on what, under which condition. tests/template/test_security_doc.py keeps the
page current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docblocks import ROOT, Block, main

BLOCK = Block("docs/explanation/security.md", "iam-documents", "scripts/iam_docs.py")
IAM = ROOT / "docs" / "iam"
DOCUMENTS = (
    ("permissions-boundary.yaml", "The permissions boundary (every role of the stack)"),
    ("deployer-policy.json", "The deployer policy (whoever runs `sam deploy`)"),
    ("scp-protect-governance-tags.json", "The service control policy (every principal of the account)"),
)


class _Loader(yaml.SafeLoader):
    """Reads CloudFormation's short-form tags as plain values: ``!Sub x`` is x, ``!Ref P`` is ``${P}``."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]  # a MappingNode
    if suffix == "Ref":
        return None if value == "AWS::NoValue" else f"${{{value}}}"
    if suffix == "Sub":
        return value
    return {f"Fn::{suffix}": value}


_Loader.add_multi_constructor("!", _tag)


def _parameter_of(condition: Any) -> str:
    """The parameter a ``HasX: !Not [!Equals [!Ref P, ""]]`` (or its ``!Join`` of a list) condition tests."""
    tested = condition["Fn::Not"][0]["Fn::Equals"][0]
    if isinstance(tested, dict):
        tested = tested["Fn::Join"][1]
    return str(tested).strip("${}")


def statements(name: str) -> list[tuple[dict[str, Any], str]]:
    """The statements of one document of docs/iam/, each with the parameter it exists for ("" if always)."""
    path = IAM / name
    if path.suffix == ".json":
        return [(statement, "") for statement in json.loads(path.read_text(encoding="utf-8"))["Statement"]]
    template = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    conditions = {key: _parameter_of(value) for key, value in template.get("Conditions", {}).items()}
    (policy,) = template["Resources"].values()
    found = []
    for item in policy["Properties"]["PolicyDocument"]["Statement"]:
        if "Fn::If" in item:
            condition, statement, _ = item["Fn::If"]
            found.append((statement, conditions[condition]))
        else:
            found.append((item, ""))
    return found


def _listed(value: Any) -> str:
    values = value if isinstance(value, list) else [value]
    return "<br>".join(f"`{v}`" for v in values)


def _conditions(statement: dict[str, Any], parameter: str) -> str:
    parts = [
        f"`{key}` {operator} {_listed(values)}"
        for operator, keys in statement.get("Condition", {}).items()
        for key, values in keys.items()
    ]
    if parameter:
        parts.insert(0, f"only when `{parameter}` is set")
    return "; ".join(parts) or "-"


def table(name: str, title: str) -> str:
    rows = [
        f"**{title}**, `docs/iam/{name}`:",
        "",
        "| statement | effect | actions | on | when |",
        "|---|---|---|---|---|",
    ]
    for statement, parameter in statements(name):
        on = statement.get("Resource", statement.get("NotResource"))
        rows.append(
            f"| {statement.get('Sid', '')} | {statement['Effect']} | {_listed(statement['Action'])} | "
            f"{_listed(on)} | {_conditions(statement, parameter)} |"
        )
    return "\n".join(rows)


def tables() -> str:
    return "\n\n".join(table(name, title) for name, title in DOCUMENTS)


if __name__ == "__main__":
    raise SystemExit(main([(BLOCK, tables)], __doc__.splitlines()[0]))
