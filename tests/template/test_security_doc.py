"""docs/explanation/security.md's tables of what the IAM documents allow are what scripts/iam_docs.py renders from
docs/iam/ today."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.template.cfn import ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("iam_docs", ROOT / "scripts" / "iam_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_security_md_shows_what_the_iam_documents_allow_today() -> None:
    script = _script()
    assert script.BLOCK.stale(script.tables()) is None


def test_every_statement_of_every_document_has_its_row() -> None:
    script = _script()
    doc = (ROOT / "docs" / "explanation" / "security.md").read_text(encoding="utf-8")
    for name, _ in script.DOCUMENTS:
        section = doc.split(f"`docs/iam/{name}`:", 1)[1].split("\n\n", 2)[1]
        for statement, parameter in script.statements(name):
            row = next(line for line in section.splitlines() if line.startswith(f"| {statement['Sid']} |"))
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert all(f"`{action}`" in row for action in actions), row
            assert (f"only when `{parameter}` is set" in row) is bool(parameter), row
