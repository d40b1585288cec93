"""ListTrainingJobsForHyperParameterTuningJob, BestTrainingJob, counters and tags."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from governor_client.amt import AmtStandIn

from .builders import RANGES, definition, seed_job, tuning_config

JOB = "xgb-churn-hb"


@pytest.fixture
def finished(amt: AmtStandIn, sm: Any) -> list[dict[str, Any]]:
    """The seed job run to completion; returns every trial's DescribeTrainingJob."""
    sm.create_hyper_parameter_tuning_job(**seed_job())
    amt.run_until_idle()
    return [sm.describe_training_job(TrainingJobName=n) for n in amt.training_jobs_of(JOB)]


def _all(sm: Any, **kwargs: Any) -> list[dict[str, Any]]:
    pages = sm.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job").paginate(
        HyperParameterTuningJobName=JOB, **kwargs
    )
    return [s for page in pages for s in page["TrainingJobSummaries"]]


def test_default_page_is_ten_sorted_by_name_with_a_next_token(finished: list[dict[str, Any]], sm: Any) -> None:
    page = sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName=JOB)

    names = [s["TrainingJobName"] for s in page["TrainingJobSummaries"]]
    assert len(names) == 10
    assert names == sorted(j["TrainingJobName"] for j in finished)[:10]
    assert page["NextToken"]


def test_next_token_walks_every_trial_exactly_once(finished: list[dict[str, Any]], sm: Any) -> None:
    seen: list[str] = []
    token = None
    for _ in range(10):
        kwargs: dict[str, Any] = {"NextToken": token} if token else {}
        page = sm.list_training_jobs_for_hyper_parameter_tuning_job(
            HyperParameterTuningJobName=JOB, MaxResults=7, **kwargs
        )
        seen += [s["TrainingJobName"] for s in page["TrainingJobSummaries"]]
        token = page.get("NextToken")
        if not token:
            break
    assert sorted(seen) == sorted(j["TrainingJobName"] for j in finished)
    assert len(seen) == len(set(seen)) == 30


def test_the_boto3_paginator_works(finished: list[dict[str, Any]], sm: Any) -> None:
    items = _all(sm, PaginationConfig={"PageSize": 4})
    assert len(items) == 30
    limited = _all(sm, PaginationConfig={"MaxItems": 5, "PageSize": 3})
    assert len(limited) == 5


def test_max_results_above_100_is_rejected(finished: list[dict[str, Any]], sm: Any) -> None:
    with pytest.raises(ClientError) as excinfo:
        sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName=JOB, MaxResults=101)
    assert excinfo.value.response["Error"]["Code"] == "ValidationException"
    assert "maxResults" in excinfo.value.response["Error"]["Message"]
    page = sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName=JOB, MaxResults=100)
    assert len(page["TrainingJobSummaries"]) == 30
    assert "NextToken" not in page


def test_invalid_sort_key_and_unknown_job_are_rejected(finished: list[dict[str, Any]], sm: Any) -> None:
    with pytest.raises(ClientError) as excinfo:
        sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName=JOB, SortBy="Cost")
    assert excinfo.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError) as excinfo:
        sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName="nope")
    assert excinfo.value.response["Error"]["Code"] == "ResourceNotFound"


def test_sort_by_final_objective_descending_is_best_first(finished: list[dict[str, Any]], sm: Any) -> None:
    items = _all(sm, SortBy="FinalObjectiveMetricValue", SortOrder="Descending")

    values = [s["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for s in items]
    assert values == sorted(values, reverse=True)
    with_metric = [j for j in finished if j.get("FinalMetricDataList")]
    assert len(items) == len(with_metric)


def test_sort_by_final_objective_drops_trials_without_a_metric(amt: AmtStandIn, sm: Any) -> None:
    # Given a tuning job stopped while its trials were still starting: none has a metric yet.
    sm.create_hyper_parameter_tuning_job(**seed_job())
    sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=JOB)
    amt.advance(1)

    assert len(_all(sm)) == 4
    assert _all(sm, SortBy="FinalObjectiveMetricValue") == []


def test_status_filter_and_status_sort(finished: list[dict[str, Any]], sm: Any) -> None:
    stopped = _all(sm, StatusEquals="Stopped")
    expected = {j["TrainingJobName"] for j in finished if j["TrainingJobStatus"] == "Stopped"}
    assert {s["TrainingJobName"] for s in stopped} == expected
    assert expected

    by_status = _all(sm, SortBy="Status", SortOrder="Ascending")
    statuses = [s["TrainingJobStatus"] for s in by_status]
    assert statuses == sorted(statuses)


def test_sort_by_creation_time_descending(finished: list[dict[str, Any]], sm: Any) -> None:
    items = _all(sm, SortBy="CreationTime", SortOrder="Descending")
    times = [s["CreationTime"] for s in items]
    assert times == sorted(times, reverse=True)
    assert times[0] > times[-1]


def test_summaries_have_the_real_shape(finished: list[dict[str, Any]], sm: Any) -> None:
    tuned_names = {r["Name"] for kind in RANGES.values() for r in kind}
    for summary in _all(sm):
        assert summary["TuningJobName"] == JOB
        assert set(summary["TunedHyperParameters"]) == tuned_names  # only the tuned ones, no statics
        assert summary["ObjectiveStatus"] == "Succeeded"
        metric = summary["FinalHyperParameterTuningJobObjectiveMetric"]
        assert metric["MetricName"] == "validation:auc"
        assert metric["Type"] == "Maximize"
        assert 0.5 <= metric["Value"] <= 0.99
        assert summary["TrainingJobArn"].endswith(f":training-job/{summary['TrainingJobName']}")
        assert summary["TrainingEndTime"] > summary["TrainingStartTime"] > summary["CreationTime"]


def test_best_training_job_is_the_best_real_trial(finished: list[dict[str, Any]], sm: Any) -> None:
    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=JOB)

    values = {
        j["TrainingJobName"]: j["FinalMetricDataList"][0]["Value"] for j in finished if j.get("FinalMetricDataList")
    }
    best_name = max(values, key=lambda n: values[n])
    best = described["BestTrainingJob"]
    assert best["TrainingJobName"] == best_name
    assert best["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] == values[best_name]
    assert described["ObjectiveStatusCounters"] == {"Succeeded": len(values), "Pending": 0, "Failed": 30 - len(values)}
    assert "OverallBestTrainingJob" not in described  # only for warm-start jobs


def test_minimize_objective_picks_the_lowest_value(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="rmse-min",
        HyperParameterTuningJobConfig=tuning_config(
            max_jobs=8, parallel=4, objective={"Type": "Minimize", "MetricName": "validation:rmse"}
        ),
        TrainingJobDefinition=definition(),
    )
    amt.run_until_idle()

    values = {}
    for name in amt.training_jobs_of("rmse-min"):
        metric = sm.describe_training_job(TrainingJobName=name)["FinalMetricDataList"][0]
        assert metric["MetricName"] == "validation:rmse"
        values[name] = metric["Value"]
    best = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="rmse-min")["BestTrainingJob"]
    assert best["TrainingJobName"] == min(values, key=lambda n: values[n])
    assert best["FinalHyperParameterTuningJobObjectiveMetric"]["Type"] == "Minimize"


def test_warm_start_reports_the_overall_best_across_parents(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="parent",
        HyperParameterTuningJobConfig=tuning_config(max_jobs=6, parallel=3),
        TrainingJobDefinition=definition(),
    )
    amt.run_until_idle()
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="child",
        HyperParameterTuningJobConfig=tuning_config(max_jobs=3, parallel=3),
        TrainingJobDefinition=definition(),
        WarmStartConfig={
            "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": "parent"}],
            "WarmStartType": "IdenticalDataAndAlgorithm",
        },
    )
    amt.run_until_idle()

    every = {
        name: sm.describe_training_job(TrainingJobName=name)["FinalMetricDataList"][0]["Value"]
        for job in ("parent", "child")
        for name in amt.training_jobs_of(job)
    }
    child = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="child")
    assert child["OverallBestTrainingJob"]["TrainingJobName"] == max(every, key=lambda n: every[n])
    assert child["BestTrainingJob"]["TrainingJobName"] in amt.training_jobs_of("child")


def test_tags_are_listed_and_carried_to_trials(finished: list[dict[str, Any]], sm: Any) -> None:
    arn = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=JOB)["HyperParameterTuningJobArn"]
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [
        {"Key": "team", "Value": "churn"},
        {"Key": "cost-center", "Value": "ml-42"},
    ]
    trial_tags = sm.list_tags(ResourceArn=finished[0]["TrainingJobArn"])["Tags"]
    assert {"Key": "team", "Value": "churn"} in trial_tags


def test_tags_work_for_a_tuning_job_created_without_tags(amt: AmtStandIn, sm: Any) -> None:
    request = seed_job("untagged")
    del request["Tags"]
    arn = sm.create_hyper_parameter_tuning_job(**request)["HyperParameterTuningJobArn"]

    assert sm.list_tags(ResourceArn=arn)["Tags"] == []
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": "owner", "Value": "ds"}])
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "owner", "Value": "ds"}]


def test_list_tuning_jobs_reflects_live_statuses(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job("job-a"))
    sm.create_hyper_parameter_tuning_job(**seed_job("job-b"))
    sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="job-b")
    amt.advance(1)

    listed = {
        j["HyperParameterTuningJobName"]: j
        for j in sm.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]
    }
    assert listed["job-a"]["HyperParameterTuningJobStatus"] == "InProgress"
    assert listed["job-b"]["HyperParameterTuningJobStatus"] == "Stopped"
    assert listed["job-a"]["TrainingJobStatusCounters"]["InProgress"] == 4
    assert listed["job-a"]["ResourceLimits"]["MaxParallelTrainingJobs"] == 4
    in_progress = sm.list_hyper_parameter_tuning_jobs(StatusEquals="InProgress")["HyperParameterTuningJobSummaries"]
    assert [j["HyperParameterTuningJobName"] for j in in_progress] == ["job-a"]


def test_describe_unknown_jobs_keeps_moto_errors(amt: AmtStandIn, sm: Any) -> None:
    with pytest.raises(ClientError) as excinfo:
        sm.describe_training_job(TrainingJobName="missing")
    assert excinfo.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError) as excinfo:
        sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="missing")
    assert excinfo.value.response["Error"]["Code"] == "ResourceNotFound"
