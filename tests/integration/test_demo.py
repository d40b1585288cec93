"""`make demo` tells the story it promises, and what it prints agrees with the DynamoDB rows."""

from __future__ import annotations

import io
from typing import Any

import pytest

from governor_client.demo import run as demo

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("demo")


@pytest.fixture(scope="module")
def printed_and_data() -> tuple[str, dict[str, Any]]:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            mp.setenv(key, "testing")
        data = demo.run(out=out)
    return out.getvalue(), data


def test_the_seed_job_completes_with_its_summary(printed_and_data: tuple[str, dict[str, Any]]) -> None:
    text, data = printed_and_data
    seed = data["summaries"]["xgb-churn-hb"]
    assert seed.status == "Completed"
    assert seed.trials_total == 30
    assert f"best validation:auc: {seed.objective.value}" in text
    assert seed.best_training_job in text
    es = seed.cost.early_stopping
    assert es.trials_stopped_early > 0
    # The seed's table (tests/integration/test_demo_seed_table.py checks its figures' shape)
    assert f"~{es.billable_instance_seconds_without_early_stopping / 60:.1f}" in text
    assert f"{seed.cost.billable_instance_seconds / 60:.1f}" in text
    assert f"cost ${seed.cost.cost_usd:,.2f}" in text
    assert f"wall clock, minutes{seed.timing.wall_clock_seconds / 60:>45.1f}" in text
    assert f"~{seed.timing.estimate_without_early_stopping_seconds / 60:.1f}" in text


def test_concurrency_breach_between_two_teams_stops_the_arriving_job(
    printed_and_data: tuple[str, dict[str, Any]],
) -> None:
    text, data = printed_and_data
    assert data["summaries"]["vision-resnet-hpo"].status == "Completed"
    assert data["summaries"]["speech-asr-hpo"].status == "Stopped"
    [decision] = data["decisions"]["speech-asr-hpo"]
    assert (decision["rule"], decision["action"]) == ("concurrency", "stopped")
    row = decision["numbers"]["instance_types"]["ml.p3.2xlarge"]
    assert (row["usage"], row["demand"], row["limit"]) == (4, 6, 8)
    assert "speech-asr-hpo       >> concurrency breach: stopped (enforce)" in text


def test_budget_stop_and_monitor_mode_would_stop(printed_and_data: tuple[str, dict[str, Any]]) -> None:
    text, data = printed_and_data
    stopped = {d["sk"]: d for d in data["decisions"]["nlp-bert-hpo"]}["DECISION#budget#breach"]
    assert stopped["action"] == "stopped"
    assert data["summaries"]["nlp-bert-hpo"].status == "Stopped"
    pilot = {d["sk"]: d for d in data["decisions"]["nlp-bert-pilot"]}["DECISION#budget#breach"]
    assert (pilot["mode"], pilot["action"]) == ("monitor", "would-stop")
    assert data["summaries"]["nlp-bert-pilot"].status == "Completed"
    for name, summary in data["summaries"].items():
        assert f"{name:<20} {summary.status:<10} {summary.trials_total:>6}" in text
        assert f"${summary.cost.cost_usd:,.2f}" in text


def test_reports_went_to_sns_and_slack_once_each(printed_and_data: tuple[str, dict[str, Any]]) -> None:
    text, data = printed_and_data
    subjects = [m["Subject"] for m in data["sns"]]
    # one summary per finished job + one report per decision + queued and admitted per submission
    decisions = sum(len(d) for d in data["decisions"].values())
    assert len(subjects) == len(data["summaries"]) + decisions + 2 * len(data["queue"])
    assert len(data["slack"]) == len(subjects)
    assert any("STOPPED speech-asr-hpo" in s for s in subjects)
    assert any("WOULD STOP nlp-bert-pilot" in s for s in subjects)
    assert data["errors"] == 0
    assert "Slack (local webhook on 127.0.0.1)" in text


def test_the_organisation_act_follows_the_three_acts(printed_and_data: tuple[str, dict[str, Any]]) -> None:
    text, data = printed_and_data
    org = data["organisation"]
    assert org["stops"] == ["424242424242/eu-west-1/vision-west-hpo"] and org["team_breached"]
    assert org["statuses"]["434343434343/us-east-1/nlp-broken-hpo"] == "Completed" and org["errors"] == []
    assert text.index("=== Act 3:") < text.index("=== The seed job") < text.index("=== Act 4: an organisation")
