"""The SageMaker models accept what AWS really sends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tuning_governor.models.sagemaker import parse_aws_time
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TuningJob

MILLIS = 1764500000123
EXPECTED = datetime(2025, 11, 30, 10, 53, 20, 123000, tzinfo=UTC)


@pytest.mark.parametrize(
    "raw",
    [MILLIS, float(MILLIS), str(MILLIS), f"{MILLIS}.0", "2025-11-30T10:53:20.123Z", "2025-11-30T10:53:20.123+00:00"],
)
def test_timestamps_in_every_encoding_aws_uses(raw: object) -> None:
    assert parse_aws_time(raw) == EXPECTED


def test_boto3_datetimes_are_kept_and_naive_ones_become_utc() -> None:
    assert parse_aws_time(datetime(2025, 1, 1, 12, 0)) == datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("raw", [True, "yesterday", [1]])
def test_nonsense_timestamps_are_rejected(raw: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        parse_aws_time(raw)


@given(st.integers(min_value=0, max_value=4_102_444_800_000))
def test_epoch_millis_round_trip_for_any_int(millis: int) -> None:
    parsed = parse_aws_time(millis)
    assert round(parsed.timestamp() * 1000) == millis
    assert parse_aws_time(str(millis)) == parsed


def _training(**extra: object) -> dict[str, object]:
    return {"TrainingJobName": "xgb-churn-001-0a1b2c3d", "TrainingJobStatus": "Completed", **extra}


def test_tags_as_flat_map_or_key_value_list() -> None:
    flat = TrainingJob.model_validate(_training(Tags={"team": "vision"}))
    listed = TrainingJob.model_validate(_training(Tags=[{"Key": "team", "Value": "vision"}]))
    nulled = TrainingJob.model_validate(_training(Tags=None))
    assert flat.tags == listed.tags == {"team": "vision"}
    assert nulled.tags == {}


def test_unknown_status_is_kept_verbatim() -> None:
    job = TrainingJob.model_validate(_training(TrainingJobStatus="Hibernating"))
    assert job.status == "Hibernating"


def test_null_and_absent_fields() -> None:
    job = TrainingJob.model_validate(
        _training(TrainingEndTime=None, FailureReason=None, FinalMetricDataList=None, HyperParameters=None)
    )
    assert job.training_end_time is None
    assert job.final_metric_data_list == []
    assert job.hyper_parameters == {}


def test_trial_links_to_tuning_job_by_arn_then_by_name_convention() -> None:
    by_arn = TrainingJob.model_validate(
        _training(TuningJobArn="arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/xgb-churn")
    )
    by_name = TrainingJob.model_validate(_training(TrainingJobName="XGB-Churn-017-89abcdef"))
    standalone = TrainingJob.model_validate(_training(TrainingJobName="nightly-retrain"))
    assert by_arn.tuning_job_key == "xgb-churn"
    assert by_name.tuning_job_key == "xgb-churn"
    assert standalone.tuning_job_key is None


def test_instance_groups_sum_per_type() -> None:
    job = TrainingJob.model_validate(
        _training(
            ResourceConfig={
                "InstanceGroups": [
                    {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 2, "InstanceGroupName": "data"},
                    {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "InstanceGroupName": "gpu"},
                    {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1, "InstanceGroupName": "more"},
                ],
                "VolumeSizeInGB": 30,
            }
        )
    )
    assert job.instances() == {"ml.c5.2xlarge": 3, "ml.g5.xlarge": 1}


def test_metric_lookup_by_name() -> None:
    job = TrainingJob.model_validate(
        _training(FinalMetricDataList=[{"MetricName": "validation:auc", "Value": 0.91, "Timestamp": MILLIS}])
    )
    assert job.metric("validation:auc") == pytest.approx(0.91)
    assert job.metric("train:auc") is None


def _tuning(**extra: object) -> dict[str, object]:
    return {
        "HyperParameterTuningJobName": "Vision-HPO",
        "HyperParameterTuningJobStatus": "InProgress",
        "HyperParameterTuningJobConfig": {
            "Strategy": "Bayesian",
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 20, "MaxParallelTrainingJobs": 3},
            "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "validation:loss"},
        },
        **extra,
    }


def test_demand_single_definition() -> None:
    job = TuningJob.model_validate(
        _tuning(TrainingJobDefinition={"ResourceConfig": {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 2}})
    )
    assert job.demand() == {"ml.p3.2xlarge": 6}
    assert job.key == "vision-hpo"


def test_demand_covers_every_definition_and_instance_config_worst_case() -> None:
    job = TuningJob.model_validate(
        _tuning(
            TrainingJobDefinition=None,
            TrainingJobDefinitions=[
                {"DefinitionName": "a", "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1}},
                {
                    "DefinitionName": "b",
                    "HyperParameterTuningResourceConfig": {
                        "AllocationStrategy": "Prioritized",
                        "InstanceConfigs": [
                            {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
                            {"InstanceType": "ml.g4dn.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
                        ],
                    },
                },
            ],
        )
    )
    assert job.demand() == {"ml.g4dn.xlarge": 3, "ml.g5.xlarge": 6}


def test_empty_objects_aws_renders_for_absent_structures() -> None:
    job = TuningJob.model_validate(
        _tuning(TrainingJobDefinition={}, BestTrainingJob={}, TrainingJobStatusCounters=None)
    )
    assert job.definitions() == []
    assert job.best_training_job is None
    assert job.demand() == {}


def test_missing_name_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="HyperParameterTuningJobName"):
        TuningJob.model_validate({"HyperParameterTuningJobStatus": "InProgress"})
