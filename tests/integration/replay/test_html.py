"""``tuning-governor replay --html``: the what-if page, loaded in headless Chromium, against the JSON result."""

from __future__ import annotations

import json
import re
from datetime import datetime
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from governor_client.__main__ import main
from governor_client.replay import load_policy, replay_file
from governor_client.replay.timeline import Timeline
from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import ROOT
from tests.integration.replay.conftest import capture, savings_by_hand, write_jsonl
from tests.integration.replay.test_policies import price
from tests.integration.test_html_report import (
    assert_looks_like_reference,
    browse,
    chromium_path,
    drawn,
    inked,
    overlaps,
    page_boxes,
    region,
    screenshot,
)

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-html")

P3_2X, M5_X = "ml.p3.2xlarge", "ml.m5.xlarge"
STOP_ACTIONS = {"stopped", "would-stop"}
VISION_BUDGET = Decimal("0.6")
README = (ROOT / "docs/how-to/replay.md").read_text()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Team vision (4 x 1 p3.2xlarge, 8 trials, about $1.10), team speech arriving a minute later on 3 x 2
    p3.2xlarge, then a small speech job on ml.m5.xlarge. Nothing stopped anything."""
    captured = capture(
        [
            (
                0,
                seed_tuning_request(
                    "team-a-hpo", team="vision", instance_type=P3_2X, instance_count=1, max_parallel=4, max_jobs=8
                ),
            ),
            (
                60,
                seed_tuning_request(
                    "team-b-hpo", team="speech", instance_type=P3_2X, instance_count=2, max_parallel=3, max_jobs=3
                ),
            ),
            (
                120,
                seed_tuning_request(
                    "team-c-hpo", team="speech", instance_type=M5_X, instance_count=1, max_parallel=2, max_jobs=6
                ),
            ),
        ]
    )
    return write_jsonl(tmp_path_factory.mktemp("html") / "events.jsonl", captured.events)


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 p3.2xlarge for the account (team speech's arrival does not fit beside vision's 4); vision's month
    is capped at $0.60, speech's at $5."""
    path = tmp_path_factory.mktemp("policy") / "policy.yaml"
    path.write_text(
        f"mode: enforce\nquotas:\n  {P3_2X}: 8\nteams:\n  vision:\n    monthly_budget_usd: {VISION_BUDGET}\n"
        "  speech:\n    monthly_budget_usd: 5\n"
    )
    return path


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_path()


class _Page(HTMLParser):
    """The stop rows (their data- attributes), the savings table's cells and every plot's alt text."""

    def __init__(self) -> None:
        super().__init__()
        self.stops: list[dict[str, str]] = []
        self.plots: list[str] = []
        self.savings: list[list[str]] = []
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "tr" and values.get("class") == "stop":
            self.stops.append({k.removeprefix("data-"): v for k, v in values.items() if k.startswith("data-")})
        if tag == "img" and "plot" in values.get("class", "").split():
            self.plots.append(values.get("alt", ""))
        if tag == "table":
            self._table = values.get("class")
        if tag == "tr" and self._table == "savings":
            self.savings.append([])
        if tag == "td" and self._table == "savings":
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.savings[-1].append("".join(self._cell))
            self._cell = None
        if tag == "table":
            self._table = None


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def _stop_decisions(result: dict[str, Any]) -> list[tuple[str, str, str, datetime]]:
    found = [
        (name, d["rule"], d["action"], datetime.fromisoformat(d["at"]))
        for name, job in result["jobs"].items()
        for d in job["decisions"]
        if d["action"] in STOP_ACTIONS
    ]
    return sorted(found, key=lambda s: (s[3], s[0], s[1]))


def _costliest(result: dict[str, Any], count: int) -> list[str]:
    return sorted(result["jobs"], key=lambda n: -(result["jobs"][n]["cost_usd"] or 0))[:count]


def test_the_what_if_page_shows_every_plot_and_every_stop_in_a_browser(
    history: Path, policy: Path, chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # When the history is replayed under the policy with the README's --html command (2 jobs drawn)
    out, folder = tmp_path / "result.json", tmp_path / "what-if"
    [command] = re.findall(r"^\.venv/bin/tuning-governor (replay .* --html \S+)$", README, flags=re.MULTILINE)
    places = {"EVENTS.jsonl": str(history), "POLICY.yaml": str(policy), "RESULT.json": str(out)}
    args = [places.get(word, word) for word in command.split()]
    assert args[-2:] == ["--html", "what-if"]
    status = main([*args[:-1], str(folder), "--html-jobs", "2"])
    assert status == 0
    assert f"HTML report: {folder / 'index.html'}" in capsys.readouterr().out
    result = json.loads(out.read_text())
    page_path = folder / "index.html"
    text = page_path.read_text()
    page = _parse(text)
    # Then the page lists exactly the result's stop decisions (two rules here: the arrival that did not
    # fit, and vision's month over its budget) ...
    decisions = _stop_decisions(result)
    assert {rule for _, rule, _, _ in decisions} == {"concurrency", "team-budget"}
    shown = [(r["job"], r["rule"], r["action"], datetime.fromisoformat(r["at"])) for r in page.stops]
    assert shown == decisions
    # ... with each stopped job's savings as the result has them, and its cost as it ran on
    savings_rows = {row[0]: row for row in page.savings if row}
    assert set(savings_rows) == set(result["savings"]["by_job"])
    for job, saved in result["savings"]["by_job"].items():
        cost = result["jobs"][job]["cost_usd"]
        assert savings_rows[job][4] == f"${cost:,.2f}"
        assert savings_rows[job][6] == f"${saved:,.2f}"
        with_stop = Decimal(str(cost)) - Decimal(str(saved))
        assert savings_rows[job][5] == f"${with_stop:,.2f}"
    # ... states its inputs ...
    assert str(history) in text and str(policy) in text and "every 5 min" in text
    # ... and draws team spend, the savings, and the 2 costliest jobs' plots, one PNG beside it for each
    drawn = _costliest(result, 2)
    assert len(result["jobs"]) == 3
    # (team spend and the account's instances against the quota as interactive charts, PNGs beside for chat)
    assert {alt.rsplit(" ", 1)[0] for alt in page.plots} == {"savings", *drawn}
    assert 'id="team-spend"' in text and 'id="account-ml-p3-2xlarge"' in text
    charts = ["team-spend.png", "account-ml.m5.xlarge.png", "account-ml.p3.2xlarge.png"]
    assert len(page.plots) + len(charts) == len(list(folder.glob("*.png")))
    assert all((folder / name).exists() for name in charts)
    # self-contained: every image a data URI, plotly.js inline, no external script, style or link
    assert re.findall(r'src="([^"]*)"', text) and all(
        src.startswith("data:image/png;base64,") for src in re.findall(r"<img [^>]*src=['\"]([^'\"]*)", text)
    )
    assert "<link" not in text and not re.search(r"<script[^>]* src=", text)
    # And Chromium loads it with no script error and decodes every plot (natural width > 0)
    dom = browse(chromium, page_path, tmp_path / "profile", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    expected = re.search(r'data-plots-expected="(\d+)"', dom.stdout)
    loaded = re.search(r'data-plots-loaded="(\d+)"', dom.stdout)
    assert expected is not None and loaded is not None
    assert int(expected.group(1)) == len(page.plots)
    assert loaded.group(1) == expected.group(1), "the browser did not decode every plot"
    assert "Uncaught" not in dom.stderr and "ERROR:CONSOLE" not in dom.stderr
    shot = tmp_path / "what-if.png"
    browse(chromium, page_path, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1400,2400")
    assert shot.exists() and shot.stat().st_size > 10_000
    print(f"screenshot of the what-if page: {shot}")


def test_monitor_mode_shows_would_stop_decisions_and_what_enforcing_them_would_have_avoided(
    history: Path, policy: Path, tmp_path: Path
) -> None:
    # When the same history is replayed in monitor mode
    out, folder = tmp_path / "result.json", tmp_path / "what-if"
    status = main(
        ["replay", str(history), "--policy", str(policy), "--mode", "monitor", "--out", str(out), "--html", str(folder)]
    )
    assert status == 0
    result = json.loads(out.read_text())
    page = _parse((folder / "index.html").read_text())
    # Then nothing was stopped and saved, but every would-stop decision is listed ...
    assert result["actions"] == [] and result["savings"]["by_job"] == {}
    decisions = _stop_decisions(result)
    assert decisions and {action for _, _, action, _ in decisions} == {"would-stop"}
    assert [(r["job"], r["rule"], r["action"], datetime.fromisoformat(r["at"])) for r in page.stops] == decisions
    # ... with what a stop at the first would-stop decision would have avoided: docs/reference/replay.md's
    # formula, computed here by hand from the raw events
    events = [json.loads(line) for line in history.read_text().splitlines()]
    rows = {row[0]: row for row in page.savings if row}
    first: dict[str, datetime] = {}
    for job, _, _, at in decisions:
        first.setdefault(job, at)
    assert set(rows) == set(first)
    for job, at in first.items():
        assert rows[job][2] == "if enforced"
        by_hand = savings_by_hand(events, job, at, price(P3_2X))
        assert rows[job][6] == f"${by_hand:,.2f}"


def test_team_spend_ends_at_the_teams_cost_in_the_history(history: Path, policy: Path) -> None:
    # When the history is replayed in monitor mode (the history is what happened: no stop) with a Timeline
    timeline = Timeline()
    loaded = load_policy(policy).model_copy(update={"mode": "monitor"})
    result = replay_file(history, loaded, probe=timeline)
    # Then each team's line is in time order and ends, every trial finished, at its jobs' cost
    assert set(timeline.spend) == {"vision", "speech"}
    assert timeline.job_teams == {"team-a-hpo": "vision", "team-b-hpo": "speech", "team-c-hpo": "speech"}
    for team, points in timeline.spend.items():
        assert [p.at for p in points] == sorted(p.at for p in points)
        assert points[-1].at == result.events.last_at
        assert points[-1].accrued_usd == 0
        cost = sum(Decimal(str(result.jobs[j].cost_usd)) for j, t in timeline.job_teams.items() if t == team)
        assert points[-1].spent_usd == cost
    # and vision's line crosses its budget, where the governor decided
    [(at, _)] = {
        (d.at, d.rule) for d in result.jobs["team-a-hpo"].decisions if d.rule == "team-budget" and d.verdict == "breach"
    }
    # (judged at the latest moment the team's state reflected, which may be after the event's own time:
    # never before the line crossed, and at a point the line already shows over)
    first_over = next(p for p in timeline.spend["vision"] if p.spent_usd >= VISION_BUDGET)
    assert first_over.at <= at
    assert all(p.spent_usd < VISION_BUDGET for p in timeline.spend["vision"] if p.at < first_over.at)
    print(f"line crossed at {first_over.at}, decided at {at}")


def test_the_what_if_page_in_a_browser_shows_each_team_on_its_own_scale_and_the_breach_against_the_quota(
    history: Path, policy: Path, chromium: str, tmp_path: Path
) -> None:
    # Given a history where speech's arrival does not fit beside vision's 4 ml.p3.2xlarge, and vision
    # spends past its $0.60 month while speech stays under its $5, replayed with --html
    folder = tmp_path / "what-if"
    assert main(["replay", str(history), "--policy", str(policy), "--html", str(folder), "--html-jobs", "2"]) == 0
    page = folder / "index.html"
    # When Chromium lays the page out and draws it
    boxes = page_boxes(chromium, page, tmp_path / "profile")
    shot = screenshot(chromium, page, tmp_path / "what-if-page.png", 3200)
    charts = {b["name"]: b for b in boxes if b["kind"] == "chart"}
    # Then team spend is one panel per team (each on its own dollar scale), legends off every plot area
    assert len([b for b in boxes if b["kind"] == "plotarea" and b["name"] == "team-spend"]) == 2
    assert "account-ml-p3-2xlarge" in charts
    for name in charts:
        legends = [b for b in boxes if b["kind"] == "legend" and b["name"] == name]
        areas = [b for b in boxes if b["kind"] == "plotarea" and b["name"] == name]
        assert not any(overlaps(legend, area) for legend in legends for area in areas), f"{name}: legend over the data"
    # ... nothing on the page is blank ...
    for box in (b for b in boxes if b["kind"] in {"img", "plotarea"} and b["y"] + b["h"] <= shot.height):
        if box["kind"] == "img":
            assert inked(region(shot, box)) > 0.03, f"{box['name']} is blank"
        else:
            assert drawn(region(shot, box)) > 0.004, f"a plot area of {box['name']} is blank"
    # ... and both views look like their references
    assert_looks_like_reference(region(shot, charts["team-spend"]), "replay-team-spend")
    assert_looks_like_reference(region(shot, charts["account-ml-p3-2xlarge"]), "replay-account-ml-p3-2xlarge")
