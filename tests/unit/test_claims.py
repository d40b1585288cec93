"""The figures the user documents (README.md, docs/**/*.md; not docs/decisions/) give a user to check are the
ones a script measured: each sits between ``<!-- claim:NAME -->`` markers and equals what
scripts/measure_claims.py renders from benchmarks/claims.json (or benchmarks/RESULTS.md), and no other
timing or size figure is left in them."""

from __future__ import annotations

import importlib.util
import inspect
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
DOCUMENTS = {path.relative_to(ROOT).as_posix(): path for path in CLAIMS.DOCUMENTS}

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
    # docs/reference/policy.md: SageMaker's and SSM's limits, the rules' and loader's settings, the message cap
    "StopTrainingJob's 120 s SIGTERM grace",
    "default 120 s, 0 = stop",
    "ended for 70 minutes (the rules' 3,600 s",
    "the sweep (every 5 minutes)",
    "Messages stay under 1 KB",
    "A Standard parameter holds 4 KB, an Advanced one 8 KB",
    # docs/how-to/roll-out-organisation.md: EventBridge's documented cap on a bus policy
    "A bus policy is capped at 10 KB",
    "the loader's own default is 300 s",
    # docs/explanation/queue.md: the lease, alarms, timeouts and schedules the template sets; the seed's request
    "30 trials x 1 hour x 3 instances",
    "leased 5 minutes",
    "older than 30 minutes",
    "oldest submission ≥ 30 min",
    "expired and reported after 31 min",
    "the sweep every 5 minutes as template.yaml's",
    "(16 \u00d7 24 h)",
    "the sweep every 15 minutes (a `SweepSchedule`",
    "a 60 s function",
    "the 60 s timeout",
    # docs/reference/rules.md: the team check's horizon (the sweep's default period, TeamBudgetRule.CHECK_HORIZON)
    "when that comes within 5 minutes, before the next sweep",
    # docs/reference/replay.md: the option's syntax, DynamoDB's read unit, the sweep's default, the rules' window
    "`90s`, `15m`, `1h` or a",
    "an item up to 4 KB",
    "every 5 minutes by default",
    "3 minutes before its end",
    "09:05, ... for 5 minutes)",
    # docs/reference/pictures.md and docs/explanation/security.md: the scenarios' simulated clocks
    "position 1, about 5 minutes",
    "nlp's month $100, 30 min",
    "($100000 a job), 40 min",
    "retagged `team: cv` after 3 min",
    "cv's month $100, 40 min",
    # docs/explanation/reliability.md: the input limits, alarms, timeouts, leases and back-offs the code and template set;
    # the tests' scenario parameters (their simulated clocks, delays and budgets)
    "0 .. 10^10 s",
    "(10^30 ms, NaN)",
    "10^30 ms times",
    "(max over 5 min)",
    ">= 5 in 5 minutes",
    "`STEP_TIMEOUT` = 5 minutes",
    "`STEP_TIMEOUT` (5 min)",
    "a sweep 6 minutes later",
    "delays of 0/5/60/600 s",
    "held up to 2 h until it fills",
    "0.05 s doubling",
    "(60 s in the simulator)",
    "30 minutes after the job ended",
    "after 30 min naming",
    "two sweeps 31 min apart",
    "a 15 s read timeout",
    "about 50 s of the function's 300 s",
    "fires 2 h after",
    "lead 0-3600 s",
    "`DECISION_LEASE` = 5 min, longer than the longest function timeout, 300 s",
    "for up to 5 minutes",
    "a 10 s reserve",
    "timeout is 60 s",
    "runtime cap 1.5 h",
    "projected over at 30 min",
    "for 100 minutes, sweep every 5 min",
    "0 stops in 100 min",
    "at the cap (90-95 min)",
    "scaled to Retry-After 4 against 8 s",
    "its 30 s wait",
    "(60 s function, 10 s reserve, 10 s request timeout",
    "Slack answering 2 s after each post lands, client timeout 1 s",
    "(default 5 minutes;",
    "30 minutes of grace",
    "five jobs created 20 s apart",
    "`ENDED_RETENTION` = 3,600 s",
    "which runs every 5 minutes",
    "the 400 KB ledger item",
    "in the last 70 minutes",
    "A stopped 19 s later, so it ends 19 s after",
    "in the last 7 hours",
    "lapses after 5 minutes",
)

#: Documents whose figures are not all measured yet (each: what is left). A strict xfail: once a document
#: is clean, its entry must go.
PENDING: dict[str, str] = {}


def _claims() -> dict[str, object]:
    claims: dict[str, object] = json.loads(CLAIMS.CLAIMS.read_text())
    claims["cli"] = json.loads(CLAIMS.CLI_TIMINGS.read_text())
    return claims


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_every_claim_is_what_the_measurement_renders(name: str) -> None:
    text = DOCUMENTS[name].read_text(encoding="utf-8")
    found = list(CLAIMS.CLAIM.finditer(text))
    if name in {"README.md", "docs/reference/cli.md"}:
        assert found, f"{name} holds no claim"
    for match in found:
        assert match["text"] == CLAIMS.render(match["name"], _claims()), (
            f"{name}: claim {match['name']} is stale: run python scripts/measure_claims.py --write"
        )


def test_every_user_document_is_checked() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md") if "decisions" not in p.parts}
    names |= {"README.md"}
    assert set(DOCUMENTS) == names
    assert not any("decisions" in str(path) for path in DOCUMENTS.values())


def test_the_readme_names_the_demo_and_cli_figures_from_the_results_files() -> None:
    claims = _claims()
    readme = DOCUMENTS["README.md"].read_text(encoding="utf-8")
    assert "claim:demo" in readme and "claim:replay" in readme
    demo = claims["demo"]
    assert isinstance(demo, dict) and demo["wall_s"] > 0


def test_a_timing_says_how_loaded_the_machine_was() -> None:
    # Given a run on a 2-core machine at load 7.6 (other work on it) and one on an idle machine
    busy = {"wall_s": 122.6, "load_before": 6.9, "load": 7.6, "cores": 2}
    idle = {"wall_s": 49.0, "load": 0.4, "cores": 2}
    assert CLAIMS.render("demo", {"demo": busy}) == (
        "the demo itself 2 min 3 s on a 2-core machine, shared with other work, load average 6.9-7.6"
    )
    assert CLAIMS.render("demo", {"demo": idle}) == "the demo itself 49 s on a 2-core machine, load average 0.4"
    # and both measurements record the load before and after, and the cores, beside the timing
    for measure in (CLAIMS.measure_demo, CLAIMS.measure_fresh_clone):
        source = inspect.getsource(measure)
        assert '"load_before": before' in source and '"load": _load()' in source and '"cores": _cores()' in source


def _unmeasured(text: str) -> list[str]:
    """Figures outside claims, generated blocks and code, not covered by a setting's phrase."""
    text = CLAIMS.CLAIM.sub("", text)
    # A block a script generates from the code (scripts/docblocks.py) holds settings, never a measurement.
    text = re.sub(r"<!-- ([\w-]+): start \(scripts/.*?<!-- \1: end -->", "", text, flags=re.DOTALL)
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    text = " ".join(text.split())  # a phrase may be wrapped across lines
    for phrase in SETTINGS:
        text = text.replace(phrase, "")
    return [m.group(0) + " in: " + text[max(0, m.start() - 60) : m.end() + 20] for m in FIGURE.finditer(text)]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=PENDING[name])) if name in PENDING else name
        for name in sorted(DOCUMENTS)
    ],
)
def test_no_timing_or_size_is_left_that_no_script_measured(name: str) -> None:
    assert _unmeasured(DOCUMENTS[name].read_text(encoding="utf-8")) == []


def test_the_check_catches_an_unmeasured_figure() -> None:
    assert _unmeasured("`make demo` (under a minute: 37 s measured; the demo itself 5.6 s) runs")
    assert _unmeasured("the SageMaker Python SDK (about 1 GB)")
    assert not _unmeasured("the sweep runs every rate(5 minutes)")
