"""``governor_client.offline.moto_json`` keeps moto's JSON responses byte for byte: in check mode every direct
response of a tuning job's life on the AMT stand-in is also written by moto's serializer and compared;
a result moto may read otherwise (an alias key) goes to moto's serializer; the action lookup answers as
moto's ``inspect.getmembers`` listing does."""

from __future__ import annotations

import collections
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.core.serialize import JSONSerializer, XFormedAttributePicker
from moto.core.utils import get_service_model, method_names_from_class
from moto.sagemaker.responses import SageMakerResponse
from moto.sns.responses import SNSResponse

from governor_client.amt import AmtStandIn
from governor_client.offline import moto_json

from .builders import seed_job


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """Check mode on, and how many responses of each operation were written directly."""
    monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")
    answered: collections.Counter[str] = collections.Counter()
    real = moto_json._direct

    def counted(result: Any, context: Any) -> Any:
        response = real(result, context)
        if response is not None:
            answered[context.operation_model.name] += 1
        return response

    monkeypatch.setattr(moto_json, "_direct", counted)
    return answered


def test_a_tuning_jobs_responses_are_the_ones_motos_serializer_writes(
    amt: AmtStandIn, sm: Any, direct: collections.Counter[str]
) -> None:
    # Given a tuning job run to its end on the stand-in, every response checked against moto's serializer
    request = seed_job()
    name = request["HyperParameterTuningJobName"]
    sm.create_hyper_parameter_tuning_job(**request)
    amt.run_until_idle()
    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    trials = sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    first = trials["TrainingJobSummaries"][0]["TrainingJobName"]
    trial = sm.describe_training_job(TrainingJobName=first)
    listed = sm.list_hyper_parameter_tuning_jobs()
    tags = sm.list_tags(ResourceArn=described["HyperParameterTuningJobArn"])
    # Then the answers are whole (timestamps parsed back to datetimes) and came the direct way
    assert described["HyperParameterTuningJobStatus"] == "Completed"
    assert isinstance(described["CreationTime"], datetime) and described["CreationTime"].tzinfo is not None
    assert trial["TrainingJobName"] == first and isinstance(trial["TrainingStartTime"], datetime)
    assert any(job["HyperParameterTuningJobName"] == name for job in listed["HyperParameterTuningJobSummaries"])
    assert isinstance(tags["Tags"], list)
    for operation in (
        "CreateHyperParameterTuningJob",
        "DescribeHyperParameterTuningJob",
        "ListTrainingJobsForHyperParameterTuningJob",
        "DescribeTrainingJob",
        "ListHyperParameterTuningJobs",
    ):
        assert direct[operation] >= 1, operation
    # And errors are still moto's
    with pytest.raises(ClientError):
        sm.describe_training_job(TrainingJobName="no-such-job")


def test_a_mismatch_is_reported_in_check_mode(amt: AmtStandIn, sm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A check that cannot fail proves nothing: a corrupted direct document is caught.
    monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")
    real = moto_json._structure

    def renamed(value: Any, shape: Any, timestamps: Any) -> Any:
        document = real(value, shape, timestamps)
        return (
            {**document, "HyperParameterTuningJobArn": "wrong"}
            if "HyperParameterTuningJobArn" in document
            else document
        )

    monkeypatch.setattr(moto_json, "_structure", renamed)
    with pytest.raises(moto_json.MotoJsonMismatch):
        sm.create_hyper_parameter_tuning_job(**seed_job())


def test_a_result_moto_may_read_through_an_alias_is_left_to_moto() -> None:
    # Given DescribeTrainingJob's output shape and moto's own serializer for it
    operation = get_service_model("sagemaker").operation_model("DescribeTrainingJob")
    serializer = JSONSerializer(operation, value_picker=XFormedAttributePicker())
    output, timestamps = operation.output_shape, serializer._timestamp_serializer
    when = datetime(2026, 11, 30, 9, 0, 1, 500000, tzinfo=UTC)
    result = {"TrainingJobStatus": "Completed", "TrainingJobName": "a", "CreationTime": when, "FinalMetricDataList": []}
    # Then a plain result is the document moto writes, in the same (the model's) member order
    plain = moto_json._structure(result, output, timestamps)
    assert json.dumps(plain) == serializer.serialize(result)["body"]
    assert list(plain) == [key for key in output.members if key in result] != list(result)
    # And a snake-case key (moto's picker reads it as TrainingJobName), an unknown key, an object, or a
    # None list item are not plain: moto's own serializer writes those
    for value in (
        {"training_job_name": "a"},
        {"Unknown": 1},
        {"TrainingJobName": object()},
        {"SecondaryStatusTransitions": [None]},
    ):
        with pytest.raises(moto_json._NotPlain):
            moto_json._structure(value, output, timestamps)


@pytest.mark.parametrize("response_class", [SageMakerResponse, SNSResponse])
def test_the_action_lookup_answers_as_motos_listing(response_class: type) -> None:
    listed = set(method_names_from_class(response_class))
    names = moto_json._FunctionNames(response_class)
    candidates = listed | set(dir(response_class)) | {"no_such_action", "__init__", "uri_match"}
    assert {name for name in candidates if name in names} == listed
