"""``tuning-governor simulate``: a scenario file becomes an event log that ``replay`` accepts (issue 19)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from governor_client.__main__ import main
from tests.conftest import ROOT

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("simulate")

EXAMPLE = ROOT / "examples" / "scenario.yaml"


@pytest.fixture(scope="module")
def event_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("simulate") / "events.jsonl"
    assert main(["simulate", str(EXAMPLE), "--out", str(out)]) == 0
    return out


def test_the_example_scenario_gives_an_event_log_of_its_jobs(event_log: Path) -> None:
    events = [json.loads(line) for line in event_log.read_text().splitlines()]
    tuning = {
        e["detail"]["HyperParameterTuningJobName"]
        for e in events
        if e["detail-type"].startswith("SageMaker HyperParameter")
    }
    assert tuning == {"xgb-churn-hb", "vision-resnet-hpo", "speech-asr-hpo", "nlp-bert-hpo"}
    # the file's tags and team reach SageMaker's events as AWS sends them (a flat map)
    nlp = next(e for e in events if e["detail"].get("HyperParameterTuningJobName") == "nlp-bert-hpo")
    assert nlp["detail"]["Tags"]["governance:budget-usd"] == "50"
    assert nlp["detail"]["Tags"]["team"] == "nlp"


def test_replay_accepts_every_line_and_the_policy_acts_on_it(
    event_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("mode: enforce\nquotas: {ml.p3.2xlarge: 8}\n")
    result = tmp_path / "result.json"
    assert main(["replay", str(event_log), "--policy", str(policy), "--out", str(result)]) == 0
    replayed = json.loads(result.read_text())
    assert replayed["rejected_events"] == []
    # speech asks for 3 x 2 = 6 while vision holds 4 of the 8: the concurrency stop the demo shows
    assert ("speech-asr-hpo", "concurrency") in {(a["job"], a["rule"]) for a in replayed["actions"]}
    assert ("nlp-bert-hpo", "budget") in {(a["job"], a["rule"]) for a in replayed["actions"]}


def test_the_same_file_and_seed_give_the_same_log(event_log: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    assert main(["simulate", str(EXAMPLE), "--out", str(again)]) == 0
    assert again.read_bytes() == event_log.read_bytes()
    other = tmp_path / "other.jsonl"
    assert main(["simulate", str(EXAMPLE), "--out", str(other), "--seed", "8"]) == 0
    assert other.read_bytes() != event_log.read_bytes()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("jobs: []\n", "jobs: List should have at least 1 item"),
        ("jobs:\n  - {name: a, max_paralel: 2}\n", "jobs.0.max_paralel: Extra inputs are not permitted"),
        ("jobs:\n  - {name: a, at: soon}\n", "jobs.0.at"),
        ("jobs:\n  - {name: a}\n  - {name: a}\n", "two jobs have the same name"),
        ("jobs: [\n", "not valid YAML/JSON"),
    ],
)
def test_an_unusable_scenario_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    assert main(["simulate", str(scenario), "--out", str(tmp_path / "e.jsonl")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert says in line and line.startswith("tuning-governor simulate: ")
