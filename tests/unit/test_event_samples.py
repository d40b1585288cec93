"""Every sample in events/ parses with the handlers' models; malformed events are rejected with a reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import EVENTS_DIR, load_event
from tuning_governor.app.envelope import handle_errors, parse_event
from tuning_governor.errors import RejectedEvent
from tuning_governor.models.events import (
    TRAINING_DETAIL_TYPE,
    TUNING_DETAIL_TYPE,
    TrainingJobStateChange,
    TuningJobStateChange,
)

SAMPLES = sorted(p.name for p in EVENTS_DIR.glob("*.json"))
MODELS: dict[str, Any] = {TUNING_DETAIL_TYPE: TuningJobStateChange, TRAINING_DETAIL_TYPE: TrainingJobStateChange}


def test_there_are_samples_for_every_status_of_both_event_types() -> None:
    statuses: dict[str, set[str]] = {TUNING_DETAIL_TYPE: set(), TRAINING_DETAIL_TYPE: set()}
    for name in SAMPLES:
        event = load_event(name)
        detail = event["detail"]
        statuses[event["detail-type"]].add(detail.get("HyperParameterTuningJobStatus") or detail["TrainingJobStatus"])
    assert statuses[TUNING_DETAIL_TYPE] >= {
        "InProgress", "Completed", "Failed", "Stopped", "Stopping", "Deleting", "DeleteFailed"
    }  # fmt: skip
    assert statuses[TRAINING_DETAIL_TYPE] >= {"InProgress", "Completed", "Failed", "Stopping", "Stopped", "Deleting"}


@pytest.mark.parametrize("name", SAMPLES)
def test_every_sample_parses(name: str) -> None:
    event = load_event(name)
    parsed = parse_event(event, MODELS[event["detail-type"]])
    assert parsed.detail.name
    assert parsed.detail.creation_time is not None
    assert parsed.source == "aws.sagemaker"


def test_multi_definition_job_demand_covers_each_definition() -> None:
    job = parse_event(load_event("tuning-multi-definition-inprogress"), TuningJobStateChange).detail
    assert len(job.definitions()) == 2
    assert len(job.demand()) >= 2


def test_instance_configs_job_demand_covers_every_config() -> None:
    job = parse_event(load_event("tuning-instance-configs-inprogress"), TuningJobStateChange).detail
    configs = job.definitions()[0].hyper_parameter_tuning_resource_config
    assert configs is not None and len(configs.instance_configs) >= 2
    assert set(job.demand()) == {c.instance_type for c in configs.instance_configs}
    for config in configs.instance_configs:
        assert job.demand()[config.instance_type] >= config.instance_count * job.max_parallel


def test_seed_job_demand_is_parallel_times_instance_count() -> None:
    job = parse_event(load_event("tuning-inprogress"), TuningJobStateChange).detail
    assert job.demand() == {"ml.m5.xlarge": 4 * 3}
    assert job.config is not None and job.config.strategy == "Hyperband"


def test_spot_trial_and_tuning_arn() -> None:
    trial = parse_event(load_event("training-spot-completed"), TrainingJobStateChange).detail
    assert trial.enable_managed_spot_training
    assert trial.billable_time_in_seconds is not None and trial.training_time_in_seconds is not None
    assert trial.billable_time_in_seconds < trial.training_time_in_seconds
    assert trial.tuning_job_arn and ":hyper-parameter-tuning-job/" in trial.tuning_job_arn


def test_string_and_int_timestamps_mean_the_same_instant() -> None:
    ints = parse_event(load_event("training-completed"), TrainingJobStateChange).detail
    strings = parse_event(load_event("training-string-times-completed"), TrainingJobStateChange).detail
    assert strings.training_end_time is not None and ints.training_end_time is not None
    assert strings.training_end_time.tzinfo is not None


def test_tags_list_variant_becomes_a_map() -> None:
    job = parse_event(load_event("tuning-tags-list-inprogress"), TuningJobStateChange).detail
    assert isinstance(job.tags, dict) and job.tags


def _mutated(name: str, path: list[str], value: Any) -> dict[str, Any]:
    event = json.loads(json.dumps(load_event(name)))
    target = event
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return event


@pytest.mark.parametrize(
    ("event", "model", "expected"),
    [
        ("not json object", TuningJobStateChange, "not a JSON object"),
        (_mutated("tuning-inprogress", ["detail", "HyperParameterTuningJobName"], KeyError), TuningJobStateChange,
         "HyperParameterTuningJobName"),
        (_mutated("training-completed", ["detail", "CreationTime"], "last tuesday"), TrainingJobStateChange,
         "CreationTime"),
        (load_event("training-completed"), TuningJobStateChange, "detail-type"),
        (_mutated("tuning-inprogress", ["source"], "aws.ec2"), TuningJobStateChange, "source"),
        (_mutated("tuning-inprogress", ["detail"], None), TuningJobStateChange, "detail"),
    ],
)  # fmt: skip
def test_malformed_events_are_rejected_with_a_reason(event: Any, model: Any, expected: str) -> None:
    with pytest.raises(RejectedEvent) as info:
        parse_event(event, model)
    assert expected in info.value.reason


def test_an_event_parsed_already_is_returned_unchanged_and_only_by_its_own_model() -> None:
    # Given an event the caller has parsed (the replay hands its model to process_*_event)
    event = load_event("training-completed.json")
    parsed = parse_event(event, TrainingJobStateChange)
    # Then parsing the model returns that very model, not a new validation
    assert parse_event(parsed, TrainingJobStateChange) is parsed
    # An equal event as a dict is validated as usual
    again = parse_event(json.loads(json.dumps(event)), TrainingJobStateChange)
    assert again is not parsed
    assert again == parsed
    # A model of another kind is not an event of this one
    with pytest.raises(RejectedEvent) as info:
        parse_event(parsed, TuningJobStateChange)
    assert info.value.reason == "event is a TrainingJobStateChange, not a JSON object"


@pytest.mark.parametrize("as_model", [False, True])
def test_a_dropped_event_is_logged_with_its_id_whether_a_dict_or_a_model(
    as_model: bool, caplog: pytest.LogCaptureFixture
) -> None:
    event = load_event("training-completed.json")
    given = parse_event(event, TrainingJobStateChange) if as_model else event

    def run() -> dict[str, Any]:
        raise RejectedEvent("no good")

    assert handle_errors("training", given, run) == {"outcome": "rejected", "reason": "no good"}
    assert [getattr(r, "event_id", None) for r in caplog.records if r.getMessage() == "training event rejected"] == [
        event["id"]
    ]
