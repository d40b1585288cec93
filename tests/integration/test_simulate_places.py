"""``tuning-governor simulate`` with jobs in several accounts and regions (issue 29, offline): each
job's events carry its own account and region, as a member's forwarded events reach the hub's bus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from governor_client.__main__ import main

SCENARIO = """\
seed: 7
jobs:
  - {name: churn-a, max_jobs: 3}
  - {name: churn-a, account: "515151515151", region: eu-west-1, max_jobs: 3}
  - {name: vision-b, account: "525252525252", max_jobs: 3, at: 600}
  - {name: vision-b, account: "525252525252", region: eu-west-1, max_jobs: 2, at: 900}
"""
PLACES = {
    ("123456789012", "us-east-1", "churn-a"),
    ("515151515151", "eu-west-1", "churn-a"),
    ("525252525252", "us-east-1", "vision-b"),
    ("525252525252", "eu-west-1", "vision-b"),
}


def _tuning_job(event: dict[str, object]) -> str:
    detail = event["detail"]
    assert isinstance(detail, dict)
    name = detail.get("HyperParameterTuningJobName") or str(detail["TuningJobArn"]).rsplit("/", 1)[-1]
    return str(name)


def test_each_jobs_events_carry_its_own_account_and_region(tmp_path: Path) -> None:
    scenario, out = tmp_path / "s.yaml", tmp_path / "events.jsonl"
    scenario.write_text(SCENARIO)
    assert main(["simulate", str(scenario), "--out", str(out)]) == 0
    events = [json.loads(line) for line in out.read_text().splitlines()]
    # Every job is seen in its own place, and nothing in any other
    seen = {(e["account"], e["region"], _tuning_job(e)) for e in events}
    assert seen == PLACES
    # The ARNs SageMaker gives name the same account and region as the envelope
    for event in events:
        arn = event["detail"].get("HyperParameterTuningJobArn") or event["detail"].get("TrainingJobArn")
        assert arn.split(":")[3:5] == [event["region"], event["account"]]


@pytest.mark.parametrize(
    ("job", "says"),
    [
        ('{name: a, account: "12345"}', "jobs.0.account"),
        ("{name: a, region: Mars}", "jobs.0.region"),
    ],
)
def test_a_malformed_place_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], job: str, says: str) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"jobs:\n  - {job}\n")
    assert main(["simulate", str(scenario), "--out", str(tmp_path / "e.jsonl")]) == 2
    assert says in capsys.readouterr().err


def test_the_same_name_twice_in_one_place_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text('jobs:\n  - {name: a, account: "515151515151"}\n  - {name: a, account: "515151515151"}\n')
    assert main(["simulate", str(scenario), "--out", str(tmp_path / "e.jsonl")]) == 2
    assert "same name in one account and region" in capsys.readouterr().err
