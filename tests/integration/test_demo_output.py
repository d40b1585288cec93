"""`make demo` reads well to an engineer: a progress display that reaches its end, a short ending that
summarises each job (decision, stop, cost) and the reports sent, and the raw data in a file (issue 19)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from governor_client.demo import run as demo

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("demo_output")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], Path]:
    raw = tmp_path_factory.mktemp("demo") / "demo-data.json"
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            mp.setenv(key, "testing")
        data = demo.run(out=out, raw_json=raw)
    return out.getvalue(), data, raw


def test_each_acts_progress_reaches_its_end(run: tuple[str, dict[str, Any], Path]) -> None:
    text, _, _ = run
    done = re.findall(r"(\d+) of (\d+) trials done or cancelled, (\d+) of (\d+) tuning jobs ended", text)
    # one closing progress line per act, each at its total (Act 1: 30 + 12 + 12 + 50 trials; Act 2: 50;
    # Act 3: 12 + the submitted job's 12)
    assert done == [("104", "104", "4", "4"), ("50", "50", "1", "1"), ("24", "24", "2", "2")]
    assert "#####" not in text


def test_the_ending_is_short_and_has_no_internals(run: tuple[str, dict[str, Any], Path]) -> None:
    text, _, _ = run
    for internal in ("ledger_version", "approximate", '{"pk"', '"job_key"', "limit_source"):
        assert internal not in text
    assert not re.search(r"\b1 trials", text)
    assert len(text.splitlines()) < 105  # three acts (issue 20 added the queue's)


def test_each_job_is_summarised_with_its_decisions_stop_and_cost(run: tuple[str, dict[str, Any], Path]) -> None:
    text, data, _ = run
    for name, summary in data["summaries"].items():
        [line] = [line for line in text.splitlines() if re.match(rf"\s+{name}\s+{summary.status}\s", line)]
        assert summary.status in line and f"${summary.cost.cost_usd:,.2f}" in line
    assert re.search(r"09:10:00 +concurrency breach: stopped .*ml\.p3\.2xlarge: usage 4 \+ demand 6 > limit 8", text)
    assert re.search(r"09:48:44 +budget breach: stopped .*>= budget \$50\.00", text)
    assert re.search(r"budget breach: would stop \(monitor\)", text)
    assert "STOPPED speech-asr-hpo: concurrency" in text  # the reports sent, one line each


def test_the_raw_data_is_in_the_file(run: tuple[str, dict[str, Any], Path]) -> None:
    text, data, raw = run
    written = json.loads(raw.read_text())
    assert "Raw data" in text and str(raw) in text
    assert written["summaries"]["xgb-churn-hb"]["trials_total"] == 30
    assert {d["sk"] for d in written["decisions"]["speech-asr-hpo"]} == {"DECISION#concurrency#breach"}
    assert len(written["sns"]) == len(data["sns"]) and len(written["slack"]) == len(data["slack"])
