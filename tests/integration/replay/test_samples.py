"""Replaying the sample events of events/, mixed with lines that are not events."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from governor_client.replay import replay_file
from tests.conftest import EVENTS_DIR
from tests.integration.replay.conftest import (
    billable_seconds,
    event_time,
    finished_trials,
    schema_validator,
    write_jsonl,
)
from tuning_governor.policy import Policy

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-samples")

M5_XLARGE = Decimal("0.23")

# (line content, what the reason must say): inserted among the sample events at these 1-based lines.
MALFORMED: dict[int, tuple[str, str]] = {
    2: ('{"version": "0", "id": ', "not valid JSON"),
    5: ("[1, 2, 3]", "an array, not an event object"),
    8: (
        json.dumps({"source": "aws.ec2", "detail-type": "EC2 Instance State-change Notification", "detail": {}}),
        "aws.ec2",
    ),
    11: (
        json.dumps({"source": "aws.sagemaker", "detail-type": "SageMaker Endpoint State Change", "detail": {}}),
        "detail-type",
    ),
    14: (
        json.dumps(
            {
                "version": "0",
                "id": "x",
                "detail-type": "SageMaker Training Job State Change",
                "source": "aws.sagemaker",
                "account": "123456789012",
                "time": "2026-11-30T09:30:00Z",
                "region": "us-east-1",
                "resources": [],
                "detail": {"TrainingJobStatus": "Completed"},
            }
        ),
        "detail.TrainingJobName",
    ),
    17: ('"just a string"', "a string, not an event object"),
}


def samples() -> list[dict[str, Any]]:
    events = [json.loads(path.read_text()) for path in sorted(EVENTS_DIR.glob("*.json"))]
    return sorted(events, key=event_time)  # a captured log is in time order


def mixed_lines() -> list[str]:
    lines = [json.dumps(event) for event in samples()]
    for number in sorted(MALFORMED):
        lines.insert(number - 1, MALFORMED[number][0])
    lines.insert(20, "   ")  # a blank line is skipped, not rejected
    return lines


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = write_jsonl(tmp_path_factory.mktemp("samples") / "events.jsonl", mixed_lines())
    result = replay_file(path, Policy(), policy_source="default")
    data: dict[str, Any] = json.loads(result.model_dump_json())
    return data


def test_lines_that_are_not_events_are_rejected_with_their_line_and_reason(replayed: dict[str, Any]) -> None:
    rejected = {item["line"]: item["reason"] for item in replayed["rejected_events"]}
    assert set(rejected) == set(MALFORMED)
    for number, (_, needle) in MALFORMED.items():
        assert needle in rejected[number], (number, rejected[number])


def test_every_sample_event_is_processed_and_none_fails(replayed: dict[str, Any]) -> None:
    events = replayed["events"]
    assert events["processed"] == len(samples()) == 23
    assert events["rejected"] == len(MALFORMED)
    assert events["lines"] == events["processed"] + events["rejected"]  # the blank line is not counted
    assert replayed["failed_events"] == []
    assert events["first_at"] == "2026-11-30T06:00:01Z"
    assert events["last_at"] == "2026-12-07T16:03:22Z"


def test_the_seed_job_is_summarised_from_its_trials_counting_the_duplicate_once(replayed: dict[str, Any]) -> None:
    job = replayed["jobs"]["xgb-churn-hb-20261130"]
    assert (job["status"], job["summary"]) == ("Completed", "final")
    assert job["best_training_job"] == "xgb-churn-hb-20261130-017-0753ec82"
    assert job["objective"] == {"name": "validation:auc", "type": "Maximize", "value": 0.934712}
    # training-completed and training-string-times-completed are one state change delivered twice;
    # training-failed has no BillableTimeInSeconds: TrainingEndTime - TrainingStartTime is billed.
    trials = finished_trials(samples(), "xgb-churn-hb-20261130")
    assert len(trials) == 3
    seconds = sum(billable_seconds(d) * d["ResourceConfig"]["InstanceCount"] for d in trials.values())
    assert job["billable_instance_seconds"] == seconds
    assert job["cost_usd"] == pytest.approx(float(Decimal(seconds) * M5_XLARGE / 3600), abs=2e-6)
    assert job["decisions"] == []


def test_jobs_whose_history_ends_early_get_provisional_figures(replayed: dict[str, Any]) -> None:
    spot = replayed["jobs"]["xgb-churn-spot-20261130"]
    assert (spot["status"], spot["summary"]) == ("InProgress", "provisional")
    assert spot["trials_by_status"] == {"Completed": 1}
    assert spot["cost_usd"] == pytest.approx(0.072169)  # 353 s x 1 x ml.g4dn.xlarge @ 0.736 (events/README.md)
    # A job known only from a trial: status unknown, and unpriced (ml.c5.2xlarge has no price), never $0.
    hetero = replayed["jobs"]["pt-churn-hetero-20261130"]
    assert hetero["status"] == "Unknown"
    assert hetero["cost_usd"] is None
    assert hetero["cost_status"] == "unpriced"
    assert hetero["spot_savings_usd"] is None
    # The standalone training jobs are not tuning jobs
    assert set(replayed["jobs"]) == {
        "xgb-churn-bayes-20261130",
        "xgb-churn-hb-20261130",
        "Churn-MultiDef-20261130",
        "xgb-churn-spot-20261130",
        "pt-churn-hetero-20261130",
    }


def test_reports_are_recorded_once_per_channel_and_nothing_is_stopped(replayed: dict[str, Any]) -> None:
    sent = [(n["channel"], n["kind"]) for n in replayed["notifications"]]
    assert len(sent) == len(set(sent))
    assert {channel for channel, _ in sent} == {"sns", "slack"}
    # The seed job's summary; and the hetero job's ml.c5.2xlarge, priced nowhere, is reported as a
    # pricing warning (issue 7.3: an unpriced type never turns a guard off silently), once per channel.
    assert {n["job"] for n in replayed["notifications"]} == {"xgb-churn-hb-20261130", "pt-churn-hetero-20261130"}
    assert {n["kind"] for n in replayed["notifications"] if n["job"] == "pt-churn-hetero-20261130"} == {
        "decision-pricing-warning"
    }
    assert replayed["actions"] == []
    assert replayed["savings"]["usd"] == 0
    assert replayed["savings"]["by_job"] == {}


def test_the_result_validates_against_the_checked_in_schema(replayed: dict[str, Any]) -> None:
    schema_validator().validate(replayed)


def test_an_events_file_that_is_not_utf8_rejects_only_that_line(tmp_path: Path) -> None:
    good = json.dumps(samples()[0])
    path = tmp_path / "events.jsonl"
    path.write_bytes(good.encode() + b"\n\xff\xfe{}\n" + good.encode() + b"\n")
    result = replay_file(path, Policy())
    assert [(p.line, p.reason) for p in result.rejected_events] == [(2, "not UTF-8 text")]
    assert result.events.processed == 2
