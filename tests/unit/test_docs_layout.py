"""The docs for their readers: README is a short front door that links every how-to guide, and the user
documents carry no issue numbers, branch names or review logs (those live in git and in the design records)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

README = ROOT / "README.md"
USER_DOCS = [README, *(p for p in (ROOT / "docs").rglob("*.md") if "decisions" not in p.parts)]


def test_the_readme_is_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md is {len(lines)} lines: move detail to docs/how-to, reference or explanation"


def test_the_readme_keeps_the_two_fresh_machine_commands() -> None:
    readme = README.read_text(encoding="utf-8")
    assert "| `make demo` |" in readme and "| `make test` |" in readme
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, re.MULTILINE) and re.search(r"^test:", makefile, re.MULTILINE)


def test_the_readme_links_every_guide_and_every_folder_has_pages() -> None:
    readme = README.read_text(encoding="utf-8")
    for folder in ("how-to", "reference", "explanation"):
        pages = sorted((ROOT / "docs" / folder).glob("*.md"))
        assert pages, f"docs/{folder} is empty"
    missing = [p.name for p in (ROOT / "docs" / "how-to").glob("*.md") if f"docs/how-to/{p.name}" not in readme]
    assert missing == [], f"README does not link {missing}"


def test_no_user_document_names_an_issue_a_branch_or_a_review() -> None:
    marks = re.compile(r"\bissue[- ]?#?\d+|\bi\d{2}-[a-z]+\b|Review before merge|\bMust-show\b", re.IGNORECASE)
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in USER_DOCS for m in marks.finditer(p.read_text())]
    assert found == []
