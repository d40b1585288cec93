"""Every function holds the permissions of every path of the calls it makes (issue 18, finding 5): a
refused stop is explained by a Describe, so a function that stops is granted DescribeHyperParameterTuningJob."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.app.permissions import FUNCTIONS, required_actions

STOPPING = sorted(f for f, needs in FUNCTIONS.items() if "stop_tuning_job" in needs.sagemaker)


def _called_on_a_refused_stop() -> set[str]:
    """The IAM actions of every SageMaker call the gateway makes to stop a job that has already ended."""
    client = boto3.client("sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    called: set[str] = set()
    client.meta.events.register(
        "provide-client-params.sagemaker.*", lambda model, **_: called.add(f"sagemaker:{model.name}")
    )
    with Stubber(client) as stub:
        stub.add_client_error("stop_hyper_parameter_tuning_job", "ValidationException", "job is not running")
        stub.add_response("describe_hyper_parameter_tuning_job", _completed())
        assert SageMakerGateway(client, sleep=lambda _: None).stop_tuning_job("done-job") == "already-ended"
    return called


def _completed() -> dict[str, Any]:
    from datetime import UTC, datetime

    return {
        "HyperParameterTuningJobName": "done-job",
        "HyperParameterTuningJobArn": "arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/done-job",
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 1, "MaxParallelTrainingJobs": 1},
        },
        "HyperParameterTuningJobStatus": "Completed",
        "CreationTime": datetime(2026, 11, 30, tzinfo=UTC),
        "TrainingJobStatusCounters": {},
        "ObjectiveStatusCounters": {},
    }


@pytest.mark.parametrize("function_id", STOPPING)
def test_a_function_that_stops_may_make_every_call_of_a_refused_stop(function_id: str) -> None:
    assert "BudgetCheckFunction" in STOPPING
    assert _called_on_a_refused_stop() <= required_actions(function_id)
