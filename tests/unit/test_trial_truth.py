"""Which running jobs the trial reconciliation asks SageMaker about, and when it lists their trials."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tuning_governor.domain.job import JobState
from tuning_governor.governance.trial_truth import counts_differ, running_from_listing, trial_rules
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TrialSummary, TuningJob
from tuning_governor.policy import Defaults, Policy, TeamPolicy

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC).isoformat()


def job(*, recorded: int = 0, running: int = 0, tags: dict[str, str] | None = None) -> JobState:
    entries = {
        f"j-{i:03d}": {"job_key": "j", "trial": f"j-{i:03d}", "start": START, "instances": {"ml.m5.xlarge": 1}}
        for i in range(running)
    }
    item: dict[str, Any] = {"pk": "JOB#j", "status": "InProgress", "trials_recorded": recorded, "running": entries}
    return JobState.from_item(item | {"tags": tags or {}})


def described(**counters: int) -> TuningJob:
    return TuningJob.model_validate(
        {
            "HyperParameterTuningJobName": "j",
            "HyperParameterTuningJobStatus": "InProgress",
            "TrainingJobStatusCounters": {
                "Completed": 0,
                "InProgress": 0,
                "RetryableError": 0,
                "NonRetryableError": 0,
                "Stopped": 0,
            }
            | counters,
        }
    )


@pytest.mark.parametrize(
    ("state", "counters", "differ"),
    [
        (job(recorded=5, running=2), {"Completed": 3, "NonRetryableError": 1, "Stopped": 1, "InProgress": 2}, False),
        # a trial ended whose event was lost: still running on the item, not recorded
        (job(recorded=4, running=3), {"Completed": 3, "NonRetryableError": 1, "Stopped": 1, "InProgress": 2}, True),
        # recorded, but a running entry SageMaker no longer runs (a phantom)
        (job(recorded=5, running=3), {"Completed": 4, "RetryableError": 1, "InProgress": 2}, True),
        # fewer running entries than SageMaker runs: progress events late (or a trial still Starting,
        # which the listing shows without a TrainingStartTime): listed, so running spend is SageMaker's
        (job(recorded=2, running=1), {"Completed": 2, "InProgress": 3}, True),
        # as many running entries as SageMaker runs, every end recorded: nothing to ask
        (job(recorded=2, running=3), {"Completed": 2, "InProgress": 3}, False),
    ],
)
def test_the_trials_are_listed_only_when_the_table_disagrees_with_the_status_counters(
    state: JobState, counters: dict[str, int], differ: bool
) -> None:
    assert counts_differ(state, described(**counters)) is differ


def test_the_rules_that_read_a_jobs_trials_are_named() -> None:
    assert trial_rules(Policy(), job()) == []
    policy = Policy(
        defaults=Defaults(stagnation_minutes=30, max_failed_trials=3),
        teams={"nlp": TeamPolicy(monthly_budget_usd=100)},
    )
    assert trial_rules(policy, job(tags={"team": "nlp", "governance:budget-usd": "50"})) == [
        "budget",
        "team-budget",
        "stagnation",
        "failed-trials",
    ]
    assert trial_rules(policy, job(tags={"team": "cv"})) == ["stagnation", "failed-trials"]


class _Described:
    """A SageMaker port that answers DescribeTrainingJob with one trial, counting the calls."""

    def __init__(self, trial: dict[str, Any]) -> None:
        self.trial, self.calls = trial, 0

    def describe_training_job(self, name: str) -> TrainingJob:
        self.calls += 1
        return TrainingJob.model_validate(self.trial)


class _Services:
    def __init__(self, sagemaker: _Described) -> None:
        self.sagemaker = sagemaker

    def sagemaker_for(self, place: object) -> _Described:
        assert place is None  # a home job is described at home
        return self.sagemaker


def _tuning_job(resources: dict[str, Any]) -> TuningJob:
    return TuningJob.model_validate(
        {
            "HyperParameterTuningJobName": "j",
            "HyperParameterTuningJobStatus": "InProgress",
            "TrainingJobDefinition": resources
            | {"StoppingCondition": {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}},
        }
    )


def _listed(**extra: Any) -> TrialSummary:
    return TrialSummary.model_validate(
        {"TrainingJobName": "j-007", "TrainingJobStatus": "InProgress", "TrainingStartTime": START} | extra
    )


def test_a_running_trial_is_tracked_from_the_listing_and_its_definition_without_a_call() -> None:
    # Given a trial listed running since 09:00 of a one-shape spot definition (2 x ml.p3.2xlarge)
    described = _tuning_job(
        {"ResourceConfig": {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 2}, "EnableManagedSpotTraining": True}
    )
    sagemaker = _Described({})
    trial, calls = running_from_listing(described, _listed(), "us-east-1", _Services(sagemaker))  # type: ignore[arg-type]
    # Then its entry is SageMaker's start with the definition's instances, spot flag and wait limit, unasked
    assert trial is not None and (calls, sagemaker.calls) == (0, 0)
    assert (trial.trial, trial.start.isoformat(), trial.instances) == ("j-007", START, {"ml.p3.2xlarge": 2})
    assert (trial.spot, trial.max_seconds, trial.job_key) == (True, 7200, "j")


def test_a_trial_of_a_several_shape_definition_is_described_once_for_its_instances() -> None:
    # Given a definition of two prioritized InstanceConfigs: which one a trial got only Describe says
    described = _tuning_job(
        {
            "HyperParameterTuningResourceConfig": {
                "InstanceConfigs": [
                    {"InstanceType": "ml.p3.8xlarge", "InstanceCount": 1},
                    {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 1},
                ]
            }
        }
    )
    arn = "arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/j"
    sagemaker = _Described(
        {
            "TrainingJobName": "j-007",
            "TrainingJobStatus": "InProgress",
            "TuningJobArn": arn,
            "TrainingStartTime": START,
            "ResourceConfig": {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 1},
        }
    )
    trial, calls = running_from_listing(described, _listed(), "us-east-1", _Services(sagemaker))  # type: ignore[arg-type]
    assert trial is not None and (calls, sagemaker.calls) == (1, 1)
    assert trial.instances == {"ml.g5.12xlarge": 1}
    # And a trial Describe shows ended (or of another job) is not tracked
    sagemaker.trial = sagemaker.trial | {"TrainingJobStatus": "Completed"}
    assert running_from_listing(described, _listed(), "us-east-1", _Services(sagemaker))[0] is None  # type: ignore[arg-type]
