"""EventBridge events in SageMaker's real format (aws-facts §1)."""

from __future__ import annotations

import itertools
import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from governor_client.amt import TRAINING_DETAIL_TYPE, TUNING_DETAIL_TYPE, AmtStandIn, VirtualClock

from .builders import seed_job, training_job
from .conftest import T0

ENVELOPE_KEYS = {"version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"}
TIME_FORMAT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
TIMESTAMP_FIELDS = ("CreationTime", "LastModifiedTime", "TrainingStartTime", "TrainingEndTime")


def _walk(value: Any) -> Any:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


@pytest.fixture
def events(amt: AmtStandIn, sm: Any) -> list[dict[str, Any]]:
    sm.create_hyper_parameter_tuning_job(**seed_job())
    amt.run_until_idle()
    return amt.events


def test_every_event_has_the_eventbridge_envelope(events: list[dict[str, Any]]) -> None:
    assert events
    for event in events:
        assert set(event) == ENVELOPE_KEYS
        assert event["version"] == "0"
        assert uuid.UUID(event["id"]).version == 4
        assert event["source"] == "aws.sagemaker"
        assert event["detail-type"] in {TUNING_DETAIL_TYPE, TRAINING_DETAIL_TYPE}
        assert event["account"] == "123456789012"
        assert event["region"] == "us-east-1"
        assert TIME_FORMAT.match(event["time"])
        assert len(event["resources"]) == 1
        json.dumps(event)  # plain JSON all the way down
    assert len({e["id"] for e in events}) == len(events)
    assert TUNING_DETAIL_TYPE == "SageMaker HyperParameter Tuning Job State Change"
    assert TRAINING_DETAIL_TYPE == "SageMaker Training Job State Change"


def test_details_use_epoch_millis_flat_tags_and_no_nulls(events: list[dict[str, Any]]) -> None:
    for event in events:
        detail = event["detail"]
        assert None not in list(_walk(detail))
        assert detail["Tags"] == {"team": "churn", "cost-center": "ml-42"}
        for field in TIMESTAMP_FIELDS:
            if field in detail:
                assert isinstance(detail[field], int)
                assert detail[field] > 1_700_000_000_000  # milliseconds, not seconds
        assert event["resources"][0] in (detail.get("TrainingJobArn"), detail.get("HyperParameterTuningJobArn"))
    first = events[0]
    assert first["detail"]["CreationTime"] == int(T0.timestamp() * 1000)
    assert first["time"] == "2026-11-30T09:00:00Z"


def test_event_time_matches_the_state_change_and_is_ordered(events: list[dict[str, Any]]) -> None:
    times = [e["time"] for e in events]
    assert times == sorted(times)
    for event in events:
        detail = event["detail"]
        changed = datetime.fromtimestamp(detail["LastModifiedTime"] / 1000, tz=UTC)
        assert event["time"] == changed.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_one_event_per_state_change(events: list[dict[str, Any]], amt: AmtStandIn, sm: Any) -> None:
    tuning = [e["detail"]["HyperParameterTuningJobStatus"] for e in events if e["detail-type"] == TUNING_DETAIL_TYPE]
    assert tuning == ["InProgress", "Completed"]

    for name in amt.training_jobs_of("xgb-churn-hb"):
        own = [e["detail"] for e in events if e["resources"][0].endswith(f"/{name}")]
        states = [(d["TrainingJobStatus"], d["SecondaryStatus"]) for d in own]
        # No duplicates in a row, and the sequence mirrors SecondaryStatusTransitions exactly.
        assert all(a != b for a, b in itertools.pairwise(states))
        transitions = sm.describe_training_job(TrainingJobName=name)["SecondaryStatusTransitions"]
        assert [s for _, s in states] == [t["Status"] for t in transitions]
        assert states[0] == ("InProgress", "Starting")
        assert states[-1][0] in {"Completed", "Stopped"}


def test_training_detail_is_the_describe_response(events: list[dict[str, Any]], sm: Any) -> None:
    last = [e for e in events if e["detail-type"] == TRAINING_DETAIL_TYPE][-1]
    detail = last["detail"]
    described = sm.describe_training_job(TrainingJobName=detail["TrainingJobName"])
    for key in ("TrainingJobStatus", "SecondaryStatus", "HyperParameters", "ResourceConfig", "TuningJobArn"):
        assert detail[key] == described[key]
    assert detail["TrainingEndTime"] == int(described["TrainingEndTime"].timestamp() * 1000)
    assert detail["FinalMetricDataList"][0]["Timestamp"] == detail["TrainingEndTime"]
    assert isinstance(detail["SecondaryStatusTransitions"][0]["StartTime"], int)


def test_tuning_detail_carries_counters_and_best_job(events: list[dict[str, Any]], sm: Any) -> None:
    final = events[-1]
    assert final["detail-type"] == TUNING_DETAIL_TYPE
    detail = final["detail"]
    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-churn-hb")
    assert detail["HyperParameterTuningJobStatus"] == "Completed"
    assert detail["TrainingJobStatusCounters"] == described["TrainingJobStatusCounters"]
    assert detail["BestTrainingJob"]["TrainingJobName"] == described["BestTrainingJob"]["TrainingJobName"]
    assert detail["HyperParameterTuningJobConfig"]["ResourceLimits"] == {
        "MaxNumberOfTrainingJobs": 30,
        "MaxParallelTrainingJobs": 4,
    }
    assert detail["TrainingJobDefinition"]["ResourceConfig"]["InstanceType"] == "ml.m5.xlarge"
    assert isinstance(detail["HyperParameterTuningEndTime"], int)


def test_stop_emits_stopping_then_stopped(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("to-stop", keep_alive=0))
    amt.drain_events()
    amt.advance(200)
    amt.drain_events()
    sm.stop_training_job(TrainingJobName="to-stop")
    amt.advance(1)

    statuses = [e["detail"]["TrainingJobStatus"] for e in amt.drain_events()]
    assert statuses == ["Stopping", "Stopped"]
    assert amt.events == []


def test_drain_events_returns_then_clears(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("drained"))
    drained = amt.drain_events()
    assert [e["detail"]["SecondaryStatus"] for e in drained] == ["Starting"]
    assert amt.drain_events() == []
    amt.run_until_idle()
    assert [e["detail"]["SecondaryStatus"] for e in amt.events][-1] == "Completed"


def test_forwarded_events_reach_an_sqs_target_through_a_rule(mocked_aws: None, sm: Any) -> None:
    events_client = boto3.client("events", region_name="us-east-1")
    sqs = boto3.client("sqs", region_name="us-east-1")
    queue_url = sqs.create_queue(QueueName="tuning-events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events_client.put_rule(
        Name="tuning-state",
        EventPattern=json.dumps(
            {"source": ["aws.sagemaker"], "detail-type": ["SageMaker HyperParameter Tuning Job State Change"]}
        ),
    )
    events_client.put_targets(Rule="tuning-state", Targets=[{"Id": "q", "Arn": queue_arn}])

    with AmtStandIn(clock=VirtualClock(T0), seed=7, forward_to_eventbridge=True) as amt:
        sm.create_hyper_parameter_tuning_job(**seed_job())
        amt.run_until_idle()

    bodies = []
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            break
        bodies += [json.loads(m["Body"]) for m in messages]
        for message in messages:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    assert [b["detail"]["HyperParameterTuningJobStatus"] for b in bodies] == ["InProgress", "Completed"]
    assert all(b["source"] == "aws.sagemaker" for b in bodies)
    assert bodies[0]["time"] == "2026-11-30T09:00:00Z"
    assert bodies[0]["detail"]["Tags"] == {"team": "churn", "cost-center": "ml-42"}
