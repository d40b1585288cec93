"""The figures README.md and docs/cli.md give a user to check are the ones a script measured: each
sits between ``<!-- claim:NAME -->`` markers and equals what scripts/measure_claims.py renders from
benchmarks/claims.json (or benchmarks/RESULTS.md), and no other timing or size figure is left in them."""

from __future__ import annotations

import importlib.util
import json
import re
from types import ModuleType

import pytest

from tests.conftest import ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("measure_claims", ROOT / "scripts" / "measure_claims.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLAIMS = _script()
DOCUMENTS = {path.name: path for path in CLAIMS.DOCUMENTS}

# A figure a user could time or weigh: seconds, minutes, hours, bytes.
FIGURE = re.compile(r"(?<![\w.])\d[\d,.]*(?:-\d[\d,.]*)? ?(?:ms|s|sec|seconds?|min|minutes?|h|hours?|[KMG]i?B)\b")
# What is a setting or a rule, not a measurement: the template's and policy's values, SageMaker's limits,
# the simulated clock's times. Each entry is a phrase of the document, so a new figure must be judged.
SETTINGS = (
    "rate(5 minutes)",
    "`SweepSchedule`, 5 minutes",
    "re-read every 5 minutes",
    "cached 15 min",
    "120 s of the running trials' burn",
    "7 hours (the",
    "accepts, 6 hours",
    "within 30 minutes",
    "unread for 30 minutes",
    "at most 20 MB unzipped",
    "about a minute, a full one about 3 minutes",
    "within 5 s, read within 30 s",
    "under 10 s when the endpoint",
    "~1-3 minute trials",
    "`90s`, `15m`, `2h`, `1h30m`",
    "ended in the 3 minutes before",
    "billed in 5 KB increments",
)


def _claims() -> dict[str, object]:
    claims: dict[str, object] = json.loads(CLAIMS.CLAIMS.read_text())
    claims["cli"] = json.loads(CLAIMS.CLI_TIMINGS.read_text())
    return claims


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_every_claim_is_what_the_measurement_renders(name: str) -> None:
    text = DOCUMENTS[name].read_text(encoding="utf-8")
    found = list(CLAIMS.CLAIM.finditer(text))
    assert found, f"{name} holds no claim"
    for match in found:
        assert match["text"] == CLAIMS.render(match["name"], _claims()), (
            f"{name}: claim {match['name']} is stale: run python scripts/measure_claims.py --write"
        )


def test_the_readme_names_the_demo_and_cli_figures_from_the_results_files() -> None:
    claims = _claims()
    readme = DOCUMENTS["README.md"].read_text(encoding="utf-8")
    assert "claim:demo" in readme and "claim:replay" in readme
    demo = claims["demo"]
    assert isinstance(demo, dict) and demo["wall_s"] > 0


def _unmeasured(text: str) -> list[str]:
    """Figures outside claims, generated tables and code, not covered by a setting's phrase."""
    text = CLAIMS.CLAIM.sub("", text)
    text = re.sub(r"<!-- cli-error-table: start.*?<!-- cli-error-table: end -->", "", text, flags=re.DOTALL)
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    for phrase in SETTINGS:
        text = text.replace(phrase, "")
    return [m.group(0) + " in: " + text[max(0, m.start() - 60) : m.end() + 20] for m in FIGURE.finditer(text)]


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_no_timing_or_size_is_left_that_no_script_measured(name: str) -> None:
    assert _unmeasured(DOCUMENTS[name].read_text(encoding="utf-8")) == []


def test_the_check_catches_an_unmeasured_figure() -> None:
    assert _unmeasured("`make demo` (under a minute: 37 s measured; the demo itself 5.6 s) runs")
    assert _unmeasured("the SageMaker Python SDK (about 1 GB)")
    assert not _unmeasured("the sweep runs every rate(5 minutes)")
