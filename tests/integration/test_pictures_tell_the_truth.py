"""The demo's three pages and the replay page of ``examples/scenario.yaml`` say only what is true, read
off the data behind each chart (Plotly's traces and layout as the page embeds them) and the tables."""

from __future__ import annotations

import io
import json
import re
from datetime import datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from governor_client.__main__ import main
from governor_client.demo import run as demo
from tests.conftest import ROOT

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("pictures_tell_the_truth")

pytest.importorskip("plotly")


def charts(page: Path) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """Each Plotly chart of the page by its div id: (traces, layout), as the page hands them to Plotly."""
    text = page.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    out = {}
    for found in re.finditer(r'Plotly\.newPlot\(\s*"([^"]+)",\s*', text):
        traces, end = decoder.raw_decode(text, found.end())
        layout, _ = decoder.raw_decode(text, text.index("{", end))
        out[found.group(1)] = (traces, layout)
    return out


def table_rows(page: Path, css_class: str) -> list[dict[str, str]]:
    """The rows of ``<table class=css_class>`` as {header: cell text}."""
    text = page.read_text(encoding="utf-8")
    table = re.search(rf'<table class="{css_class}">(.*?)</table>', text, re.S)
    assert table is not None, f"no table {css_class}"
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1), re.S)
    headers = [unescape(h) for h in re.findall(r"<th>(.*?)</th>", rows[0], re.S)]
    plain = [[unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", r, re.S)] for r in rows[1:]]
    return [dict(zip(headers, cells, strict=True)) for cells in plain]


def when(text: str) -> datetime:
    return datetime.fromisoformat(text)


@pytest.fixture(scope="module")
def acts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("demo")
    with pytest.MonkeyPatch.context() as mp:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            mp.setenv(key, "testing")
        demo.run(report_dir=out, out=io.StringIO())
    return {
        name: out / folder / "index.html"
        for name, folder in (("1", "act-1-enforce"), ("2", "act-2-monitor"), ("3", "act-3-queue"))
    }


@pytest.fixture(scope="module")
def replay_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("replay")
    events = out / "events.jsonl"
    assert main(["simulate", str(ROOT / "examples" / "scenario.yaml"), "--out", str(events)]) == 0
    policy = str(ROOT / "policy.example.yaml")
    code = main(["replay", str(events), "--policy", policy, "--out", str(out / "r.json"), "--html", str(out / "html")])
    assert code == 0
    return out / "html" / "index.html"


def test_act_3_draws_the_applied_quota_of_8_from_the_start_of_the_window_with_its_source(acts: dict[str, Path]) -> None:
    # Given Act 3, where no concurrency decision was made (the queue held speech's job instead)
    traces, _ = charts(acts["3"])["account-ml-p3-2xlarge"]
    # Then its account view draws the applied limit of 8, named by its source, from the window's start
    limits = [t for t in traces if str(t.get("name", "")).startswith("applied limit")]
    assert limits, f"no applied limit drawn: {[t.get('name') for t in traces]}"
    assert set(limits[0]["y"]) == {8} and "Service Quota" in limits[0]["name"]
    stacked = [when(x) for t in traces if t.get("stackgroup") for x in t["x"]]
    assert when(limits[0]["x"][0]) <= min(stacked) and when(limits[0]["x"][-1]) >= max(stacked)
    assert "No limit recorded" not in acts["3"].read_text(encoding="utf-8")


def test_every_account_chart_of_a_page_shares_one_time_axis(acts: dict[str, Path]) -> None:
    found = {name: layout["xaxis"].get("range") for name, (_, layout) in charts(acts["1"]).items()}
    assert len(found) == 3
    assert len({json.dumps(r) for r in found.values()}) == 1 and None not in found.values(), found


def test_act_3_draws_the_queue_wait_from_queued_to_admitted_with_its_position(acts: dict[str, Path]) -> None:
    traces, _ = charts(acts["3"])["account-ml-p3-2xlarge"]
    waits = [t for t in traces if "queued" in str(t.get("name", ""))]
    assert waits, f"no queue wait drawn: {[t.get('name') for t in traces]}"
    wait = waits[0]
    assert "position 1" in wait["name"] and "speech-asr-hpo" in wait["name"]
    start, end = when(wait["x"][0]), when(wait["x"][-1])
    assert start.strftime("%H:%M:%S") == "09:10:00"
    assert timedelta(minutes=5) < end - start < timedelta(minutes=6)


def test_a_queued_job_is_named_by_its_client_token_beside_the_generated_name(acts: dict[str, Path]) -> None:
    text = acts["3"].read_text(encoding="utf-8")
    heading = re.search(r'id="job-q-[0-9a-f]+"><h\d>([^<]*)</h\d>', text)
    assert heading is not None and "speech-asr-hpo" in heading.group(1), heading and heading.group(1)
    traces, _ = charts(acts["3"])["account-ml-p3-2xlarge"]
    assert any("speech-asr-hpo" in str(t.get("name")) and t.get("stackgroup") for t in traces)


def test_a_job_stopped_on_arrival_says_it_has_no_objective(acts: dict[str, Path]) -> None:
    text = acts["1"].read_text(encoding="utf-8")
    section = text[text.index('id="job-speech-asr-hpo"') :]
    section = section[: section.index("</section>")]
    assert "= None" not in section
    assert "no objective" in section


def test_a_stopped_jobs_reservation_ends_at_its_stop_in_the_replay(replay_page: Path) -> None:
    # Given nlp-bert-hpo, stopped by the replayed budget rule at 09:48:44 (the history ran on until 10:35)
    traces, _ = charts(replay_page)["account-ml-p3-8xlarge"]
    (stack,) = [t for t in traces if t.get("stackgroup") and "nlp-bert-hpo" in t["name"]]
    # (a step series: the level at x[i] holds until x[i + 1])
    held_until = [when(stack["x"][n + 1]) for n, y in enumerate(stack["y"][:-1]) if y]
    # Then its 16 instances are drawn no later than the stop takes effect
    assert max(held_until) < when("2026-11-30T09:52:00+00:00"), f"reservation drawn until {max(held_until)}"


def test_team_spend_panels_each_have_their_own_scale_and_show_the_budget(replay_page: Path) -> None:
    traces, layout = charts(replay_page)["team-spend"]
    # vision spent $1.76 of a $20,000 month: its panel is on its own scale, the budget still said
    teams = sorted({t["name"].split(":")[0] for t in traces if t["name"].endswith(": spend")})
    axis = layout[f"yaxis{teams.index('vision') + 1}"]
    assert axis.get("range") is not None and axis["range"][1] < 10, axis
    said = [t["name"] for t in traces] + [a.get("text", "") for a in layout.get("annotations", [])]
    assert any("$20,000" in text for text in said), said


def test_the_stops_table_shows_spent_at_the_decision_in_flight_and_billed_in_the_end(replay_page: Path) -> None:
    rows = {r["job"]: r for r in table_rows(replay_page, "stops")}
    row = rows["nlp-bert-hpo"]
    assert row.get("spent at the decision") == "$46.09", row
    assert row.get("in flight") == "$3.91"
    assert row.get("billed in the end", "").startswith("$")
