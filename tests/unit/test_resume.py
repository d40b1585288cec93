"""Resume by warm start (issue 20 item 5): the resumed CreateHyperParameterTuningJob request."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuning_governor.domain.resume import (
    MAX_PARENTS,
    RESUME_N_TAG,
    RESUME_ROOT_TAG,
    RESUMED_FROM_TAG,
    TRIALS_USED_TAG,
    ResumePlan,
    ResumeRefused,
    StoppedJob,
    plan_resume,
    resume_name,
)

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,31}$")
DEFINITION: dict[str, Any] = {
    "StaticHyperParameters": {"objective": "binary:logistic"},
    "AlgorithmSpecification": {"TrainingImage": "img", "TrainingInputMode": "File"},
    "RoleArn": "arn:aws:iam::123456789012:role/Example",
    "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
}


def described(
    name: str = "xgb-churn",
    *,
    max_jobs: int = 20,
    completed: int = 7,
    stopped: int = 0,
    failed: int = 0,
    status: str = "Stopped",
    parents: list[str] | None = None,
    warm_type: str = "IdenticalDataAndAlgorithm",
) -> dict[str, Any]:
    """A DescribeHyperParameterTuningJob response (the fields the resume reads, plus noise)."""
    response: dict[str, Any] = {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/{name}",
        "HyperParameterTuningJobConfig": {
            "Strategy": "Bayesian",
            "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "validation:auc"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": max_jobs, "MaxParallelTrainingJobs": 4},
            "ParameterRanges": {"ContinuousParameterRanges": [{"Name": "eta", "MinValue": "0.01", "MaxValue": "0.5"}]},
        },
        "TrainingJobDefinition": DEFINITION,
        "HyperParameterTuningJobStatus": status,
        "TrainingJobStatusCounters": {
            "Completed": completed,
            "InProgress": 0,
            "RetryableError": 0,
            "NonRetryableError": failed,
            "Stopped": stopped,
        },
        "ObjectiveStatusCounters": {"Succeeded": completed, "Pending": 0, "Failed": failed + stopped},
        "CreationTime": "2026-11-30T09:00:00Z",
        "ResponseMetadata": {"HTTPStatusCode": 200},
    }
    if parents:
        response["WarmStartConfig"] = {
            "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": p} for p in parents],
            "WarmStartType": warm_type,
        }
    return response


def tags_of(plan: ResumePlan) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in plan.request["Tags"]}


def parents_of(plan: ResumePlan) -> list[str]:
    return [p["HyperParameterTuningJobName"] for p in plan.request["WarmStartConfig"]["ParentHyperParameterTuningJobs"]]


def test_a_job_stopped_after_7_of_20_trials_resumes_with_13_and_itself_as_parent() -> None:
    # Given a job of 20 trials stopped after 7 trials (5 completed, 2 stopped by the stop)
    stopped = StoppedJob(describe=described(completed=5, stopped=2), tags={"team": "churn", "aws:x": "y"})

    # When its resume is planned
    plan = plan_resume(stopped)

    # Then the child warm-starts from the stopped job with the 13 trials left
    assert isinstance(plan, ResumePlan)
    request = plan.request
    assert request["WarmStartConfig"]["WarmStartType"] == "IdenticalDataAndAlgorithm"
    assert parents_of(plan) == ["xgb-churn"]
    assert request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] == 13
    assert request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] == 4
    assert plan.remaining_trials == 13 and plan.trials_used == 7
    # The definition and objective are the stopped job's (IDENTICAL_DATA_AND_ALGORITHM).
    assert request["TrainingJobDefinition"] == DEFINITION
    assert (
        request["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]["MetricName"] == "validation:auc"
    )
    assert "ResponseMetadata" not in request and "TrainingJobStatusCounters" not in request
    # The chain is on the child's tags; the user's tags are kept, AWS's reserved ones are not.
    assert tags_of(plan) == {
        "team": "churn",
        RESUMED_FROM_TAG: "xgb-churn",
        RESUME_ROOT_TAG: "xgb-churn",
        RESUME_N_TAG: "1",
        TRIALS_USED_TAG: "7",
    }
    assert request["HyperParameterTuningJobName"] == plan.name
    assert NAME_PATTERN.match(plan.name) and plan.name.startswith("q-xgb-churn-r1-")


def test_max_parallel_is_lowered_to_the_remaining_budget_and_to_what_the_caller_allows() -> None:
    three_left = plan_resume(StoppedJob(describe=described(completed=17)))
    assert isinstance(three_left, ResumePlan)
    assert three_left.request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] == 3

    fitted = plan_resume(StoppedJob(describe=described(completed=7)), max_parallel=2)
    assert isinstance(fitted, ResumePlan)
    assert fitted.request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] == 2


def test_a_resumed_job_resumed_again_chains_its_budget_and_parents() -> None:
    # Given the first resume of a 20-trial job stopped after 7, itself stopped after 4 more
    first = plan_resume(StoppedJob(describe=described(completed=7)))
    assert isinstance(first, ResumePlan)
    child = described(first.name, max_jobs=13, completed=3, failed=1, parents=["xgb-churn"])

    # When it is resumed
    second = plan_resume(StoppedJob(describe=child, tags=tags_of(first)))

    # Then the grandchild has 9 trials, the latest job first among its parents, and counts 11 used
    assert isinstance(second, ResumePlan)
    assert second.request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] == 9
    assert parents_of(second) == [first.name, "xgb-churn"]
    assert tags_of(second)[RESUME_N_TAG] == "2"
    assert tags_of(second)[RESUME_ROOT_TAG] == "xgb-churn"
    assert tags_of(second)[RESUMED_FROM_TAG] == first.name
    assert tags_of(second)[TRIALS_USED_TAG] == "11"
    assert second.name.startswith("q-xgb-churn-r2-")


def test_a_sixth_resume_keeps_the_five_most_recent_parents() -> None:
    # Given the fifth resumed job, whose own parents are the root and the four resumes before it
    chain = ["xgb-churn"] + [resume_name("xgb-churn", n) for n in range(1, 5)]
    fifth = resume_name("xgb-churn", 5)
    describe = described(fifth, max_jobs=10, completed=2, parents=list(reversed(chain)))
    tags = {RESUME_ROOT_TAG: "xgb-churn", RESUME_N_TAG: "5", TRIALS_USED_TAG: "50"}

    plan = plan_resume(StoppedJob(describe=describe, tags=tags))

    assert isinstance(plan, ResumePlan)
    assert len(parents_of(plan)) == MAX_PARENTS == 5
    assert parents_of(plan) == [fifth, *reversed(chain[1:])]  # the root, the oldest, is dropped
    assert plan.name == resume_name("xgb-churn", 6)
    assert tags_of(plan)[TRIALS_USED_TAG] == "52"


def test_a_transfer_learning_parent_is_not_carried_into_an_identical_data_warm_start() -> None:
    describe = described(completed=4, parents=["other-dataset-job"], warm_type="TransferLearning")
    plan = plan_resume(StoppedJob(describe=describe))
    assert isinstance(plan, ResumePlan)
    assert parents_of(plan) == ["xgb-churn"]


def test_a_job_stopped_before_any_trial_completed_is_recreated_without_warm_start() -> None:
    # Stopped on arrival: no trial has an objective, so there is nothing to warm-start from.
    plan = plan_resume(StoppedJob(describe=described(completed=0, stopped=2)))
    assert isinstance(plan, ResumePlan)
    assert "WarmStartConfig" not in plan.request
    assert plan.request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] == 18


@pytest.mark.parametrize(
    ("describe", "reason"),
    [
        (described(completed=20), "no trial budget remains"),
        (described(completed=15, failed=5), "no trial budget remains"),
        (described(status="InProgress"), "not Stopped"),
        (described(status="Completed", completed=12), "not Stopped"),
    ],
)
def test_refusals_say_why(describe: dict[str, Any], reason: str) -> None:
    result = plan_resume(StoppedJob(describe=describe))
    assert isinstance(result, ResumeRefused)
    assert reason in result.reason


def test_the_same_stopped_job_always_gives_the_same_request() -> None:
    stopped = StoppedJob(describe=described(), tags={"team": "churn"})
    assert plan_resume(stopped) == plan_resume(stopped)


def test_long_names_are_cut_to_32_characters_and_stay_distinct() -> None:
    long_a = "a" * 30 + "-x"
    long_b = "a" * 30 + "-y"
    names = {resume_name(root, n) for root in (long_a, long_b) for n in (1, 2, 99, 1000)}
    assert len(names) == 8
    assert all(len(n) <= 32 and NAME_PATTERN.match(n) for n in names)


@given(
    root=st.from_regex(r"[a-zA-Z0-9](-?[a-zA-Z0-9]){0,31}", fullmatch=True).filter(lambda s: len(s) <= 32),
    n=st.integers(min_value=1, max_value=10_000),
)
def test_every_resume_name_is_a_valid_tuning_job_name_distinct_from_its_root(root: str, n: int) -> None:
    name = resume_name(root, n)
    assert len(name) <= 32
    assert NAME_PATTERN.match(name)
    assert name != root
    assert name != resume_name(root, n + 1)
    # Under the queue's reserved prefix, and another name under the stack's secret key
    keyed = resume_name(root, n, "k" * 64)
    assert name.startswith("q-") and keyed.startswith("q-") and len(keyed) <= 32 and NAME_PATTERN.match(keyed)
    assert keyed != name


def test_the_policy_says_whether_a_job_over_capacity_is_stopped_or_requeued() -> None:
    from pydantic import ValidationError

    from tuning_governor.policy import parse_policy

    assert parse_policy("mode: enforce\n", "test").defaults.on_over_capacity == "stop"
    assert parse_policy("defaults: {on_over_capacity: requeue}\n", "test").defaults.on_over_capacity == "requeue"
    with pytest.raises((ValidationError, ValueError), match="on_over_capacity"):
        parse_policy("defaults: {on_over_capacity: queue}\n", "test")


@given(
    budget=st.integers(min_value=1, max_value=500),
    stops=st.lists(st.tuples(st.integers(min_value=0, max_value=60), st.booleans()), min_size=1, max_size=12),
)
def test_a_chain_of_resumes_never_launches_more_than_the_first_budget(
    budget: int, stops: list[tuple[int, bool]]
) -> None:
    # Given a job of `budget` trials stopped again and again, each time after `n` more trials
    # (`any_completed`: whether one of them reported an objective)
    describe, tags = described("root", max_jobs=budget, completed=0), {"team": "t"}
    launched_by: dict[str, int] = {}
    names = {"root"}
    for n, any_completed in stops:
        limit = describe["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"]
        ran = min(n, limit)
        completed = 1 if any_completed and ran else 0
        describe["TrainingJobStatusCounters"] = {"Completed": completed, "Stopped": ran - completed}
        describe["ObjectiveStatusCounters"] = {"Succeeded": completed}
        launched_by[describe["HyperParameterTuningJobName"]] = ran
        plan = plan_resume(StoppedJob(describe=describe, tags=tags))
        if isinstance(plan, ResumeRefused):
            # Then a refusal comes only when the budget is spent
            assert sum(launched_by.values()) == budget
            return
        # Then every resumed job stays within the first budget, AWS's limits and the name rules
        parents = plan.parents
        assert len(parents) <= MAX_PARENTS and parents == list(dict.fromkeys(parents))
        assert sum(launched_by.values()) + plan.remaining_trials == budget
        assert plan.remaining_trials + sum(launched_by[p] for p in parents) <= budget
        assert plan.name not in names and len(plan.name) <= 32
        names.add(plan.name)
        describe = {**plan.request, "HyperParameterTuningJobStatus": "Stopped"}
        tags = tags_of(plan)
