"""Hostile input through the real handlers on moto: rejected cleanly, never retried, never poisoning.

Issue 8, point 7. Before the limits in ``models/limits.py`` an InstanceCount of 10^40 escaped as
``decimal.Rounded`` (EventBridge retried it until the dead-letter queue), and an empty tag key was
written to the job's item, after which the item could not be read back.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from botocore.exceptions import ClientError

from governor_client.offline.environment import OfflineEnvironment, build_environment
from governor_client.simulator.runner import deliver_event
from tests.conftest import load_event
from tuning_governor.adapters.sagemaker import SageMakerGateway

HUGE = 10**40


@pytest.fixture
def env(mocked_aws: None) -> OfflineEnvironment:
    return build_environment(sns=False, quotas=False)


class _Pages:
    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self._pages = pages

    def paginate(self, **_: Any) -> list[dict[str, Any]]:
        return self._pages


class ScriptedSageMaker:
    """A SageMaker client answering Describe/List with given responses (what a hostile service would say)."""

    def __init__(self, training: dict[str, Any] | None = None, tuning: dict[str, Any] | None = None) -> None:
        self.training = training
        self.tuning = tuning
        self.trials: list[dict[str, Any]] = []

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        return copy.deepcopy(self.training or {})

    def describe_hyper_parameter_tuning_job(self, HyperParameterTuningJobName: str) -> dict[str, Any]:
        return copy.deepcopy(self.tuning or {})

    def get_paginator(self, name: str) -> _Pages:
        if name == "list_tags":
            # What AWS answers for a resource it does not know (aws/amazon-sagemaker-feedback#108).
            error = {"Error": {"Code": "ValidationException", "Message": "Could not find resource"}}
            raise ClientError(error, "ListTags")  # type: ignore[arg-type]
        assert name == "list_training_jobs_for_hyper_parameter_tuning_job"
        return _Pages([{"TrainingJobSummaries": copy.deepcopy(self.trials)}])


def _event(name: str, event_id: str, **detail: Any) -> dict[str, Any]:
    event = copy.deepcopy(load_event(name))
    event["id"] = event_id
    event["detail"].update(detail)
    return event


def test_an_instance_count_too_large_for_dynamodb_is_rejected_and_valid_arrivals_go_on(env: OfflineEnvironment) -> None:
    # Given a tuning event whose InstanceCount has 41 digits
    hostile = _event("tuning-inprogress", "hostile")
    hostile["detail"]["TrainingJobDefinition"]["ResourceConfig"]["InstanceCount"] = HUGE
    # When it reaches the handler
    outcome = deliver_event(hostile, env.services).outcome
    # Then it is rejected with a reason, not raised for a retry
    assert outcome["outcome"] == "rejected"
    assert "InstanceCount" in outcome["reason"]
    # And the same job's valid event is recorded and readable afterwards
    assert deliver_event(_event("tuning-inprogress", "valid"), env.services).outcome["outcome"] == "recorded"
    job = load_event("tuning-inprogress")["detail"]["HyperParameterTuningJobName"].lower()
    assert env.services.store.get_job(job) is not None


def test_an_empty_tag_key_is_dropped_and_the_job_stays_readable(env: OfflineEnvironment) -> None:
    # Given a tuning event with an empty tag key next to a valid team tag
    first = _event("tuning-inprogress", "first", Tags={"": "junk", "team": "vision"})
    # When it and a later event of the same job arrive
    assert deliver_event(first, env.services).outcome["outcome"] == "recorded"
    later = _event("tuning-inprogress", "later", Tags={"team": "vision"})
    later["detail"]["LastModifiedTime"] = later["detail"]["LastModifiedTime"] + 1000
    # Then both are recorded, the junk tag is not stored, and the team tag still names the team
    assert deliver_event(later, env.services).outcome["outcome"] == "recorded"
    job = env.services.store.get_job(first["detail"]["HyperParameterTuningJobName"].lower())
    assert job is not None
    assert job["tags"] == {"team": "vision"}
    assert job["team"] == "vision"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("BillableTimeInSeconds", HUGE),
        ("TrainingTimeInSeconds", -1),
        ("FinalMetricDataList", [{"MetricName": "validation:auc", "Value": float("nan")}]),
        ("FinalMetricDataList", [{"MetricName": "validation:auc", "Value": 1e308}]),
    ],
)
def test_a_describe_with_hostile_numbers_rejects_the_event_and_a_sane_one_is_recorded(
    env: OfflineEnvironment, field: str, value: Any
) -> None:
    # Given a valid trial event, and DescribeTrainingJob answering with a number DynamoDB cannot hold
    event = _event("training-completed", "trial")
    describe = copy.deepcopy(event["detail"])
    describe.pop("Tags", None)
    client = ScriptedSageMaker(training=describe | {field: value})
    env.services.sagemaker = SageMakerGateway(client)  # type: ignore[arg-type]
    # When the event is delivered
    outcome = deliver_event(event, env.services).outcome
    # Then it is rejected with the Describe named in the reason (not an error EventBridge would retry)
    assert outcome["outcome"] == "rejected"
    assert "DescribeTrainingJob" in outcome["reason"]
    # And once SageMaker answers sanely, the same trial is recorded exactly once
    client.training = describe
    assert deliver_event(event, env.services).outcome["outcome"] == "recorded"
    assert deliver_event(event, env.services).outcome["outcome"] == "duplicate"


def test_a_trial_list_with_a_hostile_objective_rejects_the_terminal_event(env: OfflineEnvironment) -> None:
    # Given a tuning job's terminal event, and a trial listed with an objective of 1e308
    event = _event("tuning-completed", "done")
    describe = copy.deepcopy(event["detail"])
    describe.pop("Tags", None)
    client = ScriptedSageMaker(tuning=describe)
    client.trials = [
        {
            "TrainingJobName": "xgb-churn-hb-20261130-001-0a1b2c3d",
            "TrainingJobArn": "arn:aws:sagemaker:us-east-1:123456789012:training-job/xgb-churn-hb-20261130-001-0a1b2c3d",
            "CreationTime": 1764493200000,
            "TrainingJobStatus": "Completed",
            "TunedHyperParameters": {"eta": "0.1"},
            "FinalHyperParameterTuningJobObjectiveMetric": {"MetricName": "validation:auc", "Value": 1e308},
        }
    ]
    env.services.sagemaker = SageMakerGateway(client)  # type: ignore[arg-type]
    # When it is delivered, then it is rejected (the List named), not retried
    outcome = deliver_event(event, env.services).outcome
    assert outcome["outcome"] == "rejected"
    assert "ListTrainingJobsForHyperParameterTuningJob" in outcome["reason"]


def test_tags_of_a_job_sagemaker_no_longer_knows_drop_the_event_instead_of_retrying(env: OfflineEnvironment) -> None:
    # Given an arrival without Tags (so the governor asks ListTags) for a job that has been deleted
    event = _event("tuning-inprogress", "no-tags")
    event["detail"].pop("Tags", None)
    env.services.sagemaker = SageMakerGateway(ScriptedSageMaker())  # type: ignore[arg-type]
    # When it is delivered, then it is dropped (JobNotFound), not raised for EventBridge to retry
    outcome = deliver_event(event, env.services).outcome
    assert outcome["outcome"] == "dropped"
