"""Documents say what the code does, and point only inside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from governor_client.offline.environment import store_kind
from tuning_governor.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(
    [
        ROOT / "template.yaml",
        *ROOT.glob("*.md"),
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("events/**/*.md"),
        *ROOT.glob("layers/governor/tuning_governor/data/**/*.md"),
    ]
)


def test_the_template_states_the_policy_max_age_the_code_uses() -> None:
    said = re.findall(r"POLICY_MAX_AGE seconds \(default (\d+)\)", (ROOT / "template.yaml").read_text())
    default = Settings.model_fields["policy_max_age_seconds"].default
    assert said == [str(default)]


def test_no_document_points_outside_the_repository() -> None:
    outside = re.compile(r"\.\./shared|/work/|(?<![\w.])\.\./\.\./")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in DOCUMENTS
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if outside.search(line)
    ]
    assert found == []


def test_the_replay_guide_names_the_store_a_replay_uses_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TUNING_GOVERNOR_STORE", raising=False)
    default = store_kind(None)
    opening = (ROOT / "docs" / "reference" / "replay.md").read_text().split("\n## ", 1)[0]
    assert "DynamoDB is moto" not in opening
    assert {"memory": "in-memory store", "moto": "moto"}[default] in opening
