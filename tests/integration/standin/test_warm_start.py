"""WarmStartConfig on the stand-in, and a stopped job resumed by warm start (issue 20 item 5)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from governor_client.amt import AmtStandIn
from tuning_governor.domain.resume import RESUMED_FROM_TAG, ResumePlan, StoppedJob, plan_resume

from .builders import seed_job, tuning_config


def job(name: str, *, max_jobs: int = 20, parallel: int = 3, **overrides: Any) -> dict[str, Any]:
    config = overrides.pop("HyperParameterTuningJobConfig", None) or tuning_config(max_jobs=max_jobs, parallel=parallel)
    return seed_job(name, HyperParameterTuningJobConfig=config, **overrides)


def warm(*parents: str) -> dict[str, Any]:
    return {
        "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": p} for p in parents],
        "WarmStartType": "IdenticalDataAndAlgorithm",
    }


def launched(sm: Any, name: str) -> int:
    counters = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)["TrainingJobStatusCounters"]
    return sum(counters.values())


def finished_jobs(amt: AmtStandIn, sm: Any, *names: str) -> None:
    for name in names:
        sm.create_hyper_parameter_tuning_job(**job(name, max_jobs=2, parallel=2))
    amt.run_until_idle()


def refusal(sm: Any, request: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        sm.create_hyper_parameter_tuning_job(**request)
    error = caught.value.response["Error"]
    names = [
        j["HyperParameterTuningJobName"]
        for j in sm.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]
    ]
    assert request["HyperParameterTuningJobName"] not in names  # refused: no job was created
    return str(error["Code"]), str(error["Message"])


def test_a_warm_start_with_six_parents_is_refused(amt: AmtStandIn, sm: Any) -> None:
    parents = [f"p{i}" for i in range(6)]
    finished_jobs(amt, sm, *parents)
    code, message = refusal(sm, job("child", WarmStartConfig=warm(*parents)))
    assert code == "ValidationException"
    assert "less than or equal to 5" in message


def test_a_warm_start_from_a_running_parent_is_refused(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**job("running"))
    code, message = refusal(sm, job("child", WarmStartConfig=warm("running")))
    assert code == "ValidationException"
    assert "running" in message and "terminal" in message


def test_a_warm_start_from_an_unknown_parent_is_refused(amt: AmtStandIn, sm: Any) -> None:
    code, _ = refusal(sm, job("child", WarmStartConfig=warm("never-created")))
    assert code == "ResourceNotFound"


def test_a_warm_start_with_another_objective_is_refused(amt: AmtStandIn, sm: Any) -> None:
    finished_jobs(amt, sm, "parent")
    other = tuning_config(objective={"Type": "Minimize", "MetricName": "validation:logloss"})
    code, message = refusal(sm, job("child", HyperParameterTuningJobConfig=other, WarmStartConfig=warm("parent")))
    assert code == "ValidationException"
    assert "objective" in message


def test_the_parents_training_jobs_count_against_the_500_trials_of_a_tuning_job(amt: AmtStandIn, sm: Any) -> None:
    # Given a parent that launched 2 training jobs
    finished_jobs(amt, sm, "parent")
    # Then a Random child of 499 is refused (2 + 499 > 500, the Random strategy's maximum), one of 498 is not
    too_many = tuning_config(strategy="Random", max_jobs=499)
    code, message = refusal(sm, job("too-many", HyperParameterTuningJobConfig=too_many, WarmStartConfig=warm("parent")))
    assert code == "ValidationException"
    assert "500" in message
    fits = tuning_config(strategy="Random", max_jobs=498)
    sm.create_hyper_parameter_tuning_job(
        **job("fits", HyperParameterTuningJobConfig=fits, WarmStartConfig=warm("parent"))
    )
    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="fits")
    assert described["WarmStartConfig"] == warm("parent")


def test_a_stopped_job_resumed_by_warm_start_runs_only_its_remaining_budget(amt: AmtStandIn, sm: Any) -> None:
    # Given a 20-trial job stopped after some trials completed
    sm.create_hyper_parameter_tuning_job(**job("churn-hpo", max_jobs=20, parallel=3))
    amt.advance(1800)
    sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="churn-hpo")
    amt.advance(1)
    stopped = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="churn-hpo")
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=stopped["HyperParameterTuningJobArn"])["Tags"]}
    used = launched(sm, "churn-hpo")
    assert stopped["ObjectiveStatusCounters"]["Succeeded"] > 0 and 0 < used < 20

    # When its resume is planned and created (twice: a retry creates nothing more)
    plan = plan_resume(StoppedJob(describe=stopped, tags=tags))
    assert isinstance(plan, ResumePlan)
    sm.create_hyper_parameter_tuning_job(**plan.request)
    with pytest.raises(ClientError):
        sm.create_hyper_parameter_tuning_job(**plan_resume(StoppedJob(describe=stopped, tags=tags)).request)  # type: ignore[union-attr]
    amt.run_until_idle()

    # Then the child ran the rest of the budget, warm-started from the stopped job, and the chain is traceable
    child = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=plan.name)
    assert child["HyperParameterTuningJobStatus"] == "Completed"
    assert launched(sm, plan.name) == 20 - used
    assert launched(sm, plan.name) + launched(sm, "churn-hpo") <= 20
    assert child["WarmStartConfig"]["ParentHyperParameterTuningJobs"] == [{"HyperParameterTuningJobName": "churn-hpo"}]
    assert "OverallBestTrainingJob" in child
    child_tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=child["HyperParameterTuningJobArn"])["Tags"]}
    assert child_tags[RESUMED_FROM_TAG] == "churn-hpo" and child_tags["team"] == "churn"


def test_a_job_stopped_seven_times_finishes_its_budget_across_its_resumes(amt: AmtStandIn, sm: Any) -> None:
    # Given a 24-trial job (2 at a time) that is stopped a little after each start, seven times over
    sm.create_hyper_parameter_tuning_job(**job("chain", max_jobs=24, parallel=2))
    current, chain = "chain", ["chain"]
    for _ in range(7):
        amt.advance(700)
        sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=current)
        amt.advance(1)
        stopped = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=current)
        tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=stopped["HyperParameterTuningJobArn"])["Tags"]}
        plan = plan_resume(StoppedJob(describe=stopped, tags=tags))
        assert isinstance(plan, ResumePlan)
        # When each resume is created (the stand-in refuses what AWS would)
        sm.create_hyper_parameter_tuning_job(**plan.request)
        current = plan.name
        chain.append(current)
    amt.run_until_idle()

    # Then the last job lists the 5 most recent jobs of the chain, and the chain ran exactly 24 trials
    last = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=current)
    parents = [p["HyperParameterTuningJobName"] for p in last["WarmStartConfig"]["ParentHyperParameterTuningJobs"]]
    assert parents == list(reversed(chain[-6:-1]))
    assert last["HyperParameterTuningJobStatus"] == "Completed"
    assert sum(launched(sm, name) for name in chain) == 24
