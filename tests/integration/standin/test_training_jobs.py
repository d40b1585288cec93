"""Training-job fields a governor reads: resources, spot, warm pools, billing, multi-definition tuning."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import timedelta
from typing import Any

from governor_client.amt import AmtStandIn, TrialPlan

from .builders import OBJECTIVE, RANGES, definition, training_job, tuning_config


def test_standalone_training_job_runs_through_the_real_secondary_statuses(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("solo"))
    assert sm.describe_training_job(TrainingJobName="solo")["TrainingJobStatus"] == "InProgress"

    amt.run_until_idle()

    job = sm.describe_training_job(TrainingJobName="solo")
    assert job["TrainingJobStatus"] == "Completed"
    transitions = job["SecondaryStatusTransitions"]
    assert [t["Status"] for t in transitions] == ["Starting", "Downloading", "Training", "Uploading", "Completed"]
    for earlier, later in itertools.pairwise(transitions):
        assert earlier["EndTime"] == later["StartTime"]
    assert job["TrainingStartTime"] == transitions[1]["StartTime"]
    assert job["TrainingEndTime"] == transitions[-1]["StartTime"]
    span = (job["TrainingEndTime"] - job["TrainingStartTime"]).total_seconds()
    assert job["TrainingTimeInSeconds"] == job["BillableTimeInSeconds"]
    assert abs(job["TrainingTimeInSeconds"] - span) <= 1
    assert "TuningJobArn" not in job
    assert job["FinalMetricDataList"][0]["MetricName"] == "validation:auc"
    assert job["ModelArtifacts"]["S3ModelArtifacts"].endswith("/solo/output/model.tar.gz")
    summary = sm.list_training_jobs()["TrainingJobSummaries"][0]
    assert summary["TrainingJobStatus"] == "Completed"
    assert summary["SecondaryStatus"] == "Completed"


def test_duplicate_training_job_name_is_rejected(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("twice"))
    try:
        sm.create_training_job(**training_job("twice"))
    except sm.exceptions.ResourceInUse:
        pass
    else:
        raise AssertionError("a second job with the same name was accepted")


def test_spot_training_bills_less_than_it_trains(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("spot-job", spot=True))
    sm.create_training_job(**training_job("on-demand-job"))
    amt.run_until_idle()

    spot = sm.describe_training_job(TrainingJobName="spot-job")
    on_demand = sm.describe_training_job(TrainingJobName="on-demand-job")
    assert spot["EnableManagedSpotTraining"] is True
    assert spot["BillableTimeInSeconds"] < spot["TrainingTimeInSeconds"]
    assert on_demand["EnableManagedSpotTraining"] is False
    assert on_demand["BillableTimeInSeconds"] == on_demand["TrainingTimeInSeconds"]


def test_spot_interruptions_show_up_and_are_not_billed(mocked_aws: None, sm: Any) -> None:
    class AlwaysInterrupted:
        def plan(self, tuning_job_config: Any, definition: Any, hyperparameters: Any, rng: Any) -> TrialPlan:
            return TrialPlan(600.0, 0.8, "Completed", None, 300.0, None)

    with AmtStandIn(seed=3, behaviour=AlwaysInterrupted()) as amt:
        sm.create_training_job(**training_job("bumpy", spot=True))
        amt.run_until_idle()
        job = sm.describe_training_job(TrainingJobName="bumpy")

    statuses = [t["Status"] for t in job["SecondaryStatusTransitions"]]
    assert "Interrupted" in statuses
    assert statuses.count("Training") == 2
    assert job["TrainingTimeInSeconds"] - job["BillableTimeInSeconds"] >= 300


def test_instance_groups_are_echoed_on_the_trials(amt: AmtStandIn, sm: Any) -> None:
    groups = [
        {"InstanceType": "ml.m5.xlarge", "InstanceCount": 2, "InstanceGroupName": "cpu"},
        {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "InstanceGroupName": "gpu"},
    ]
    spec = definition()
    spec["ResourceConfig"] = {"InstanceGroups": groups, "VolumeSizeInGB": 30}
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="hetero",
        HyperParameterTuningJobConfig=tuning_config(max_jobs=2, parallel=2),
        TrainingJobDefinition=spec,
    )
    amt.run_until_idle()

    for name in amt.training_jobs_of("hetero"):
        resource = sm.describe_training_job(TrainingJobName=name)["ResourceConfig"]
        assert resource["InstanceGroups"] == groups
        assert "InstanceType" not in resource


def test_instance_configs_use_the_first_prioritised_type(amt: AmtStandIn, sm: Any) -> None:
    spec = definition()
    del spec["ResourceConfig"]
    spec["HyperParameterTuningResourceConfig"] = {
        "AllocationStrategy": "Prioritized",
        "InstanceConfigs": [
            {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 2, "VolumeSizeInGB": 50},
            {"InstanceType": "ml.m5.4xlarge", "InstanceCount": 1, "VolumeSizeInGB": 50},
        ],
    }
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="flex",
        HyperParameterTuningJobConfig=tuning_config(max_jobs=3, parallel=3),
        TrainingJobDefinition=spec,
    )
    amt.run_until_idle()

    for trial in amt.trials_of("flex"):
        assert (trial.instance_type, trial.instance_count) == ("ml.g5.2xlarge", 2)
        resource = sm.describe_training_job(TrainingJobName=trial.name)["ResourceConfig"]
        assert resource == {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 2, "VolumeSizeInGB": 50}
    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="flex")
    assert described["TrainingJobDefinition"]["HyperParameterTuningResourceConfig"]["InstanceConfigs"][1] == {
        "InstanceType": "ml.m5.4xlarge",
        "InstanceCount": 1,
        "VolumeSizeInGB": 50,
    }


def test_multi_definition_jobs_spread_trials_and_name_the_definition(amt: AmtStandIn, sm: Any) -> None:
    definitions = []
    for name, instance in (("xgb-cpu", "ml.m5.xlarge"), ("xgb-gpu", "ml.g4dn.xlarge")):
        spec = definition(instance_type=instance, instance_count=1)
        spec["DefinitionName"] = name
        spec["TuningObjective"] = dict(OBJECTIVE)
        spec["HyperParameterRanges"] = RANGES
        definitions.append(spec)
    config = tuning_config(max_jobs=6, parallel=2)
    del config["ParameterRanges"]
    del config["HyperParameterTuningJobObjective"]
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="multi", HyperParameterTuningJobConfig=config, TrainingJobDefinitions=definitions
    )
    amt.run_until_idle()

    summaries = sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName="multi")[
        "TrainingJobSummaries"
    ]
    assert Counter(s["TrainingJobDefinitionName"] for s in summaries) == {"xgb-cpu": 3, "xgb-gpu": 3}
    for summary in summaries:
        job = sm.describe_training_job(TrainingJobName=summary["TrainingJobName"])
        expected = "ml.m5.xlarge" if summary["TrainingJobDefinitionName"] == "xgb-cpu" else "ml.g4dn.xlarge"
        assert job["ResourceConfig"]["InstanceType"] == expected
    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="multi")
    assert len(described["TrainingJobDefinitions"]) == 2
    assert described["BestTrainingJob"]["TrainingJobDefinitionName"] in {"xgb-cpu", "xgb-gpu"}


def test_warm_pool_is_available_then_terminated_after_the_keep_alive(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("warm", keep_alive=1800))
    amt.run_until_idle()

    job = sm.describe_training_job(TrainingJobName="warm")
    assert job["TrainingJobStatus"] == "Completed"
    assert job["WarmPoolStatus"] == {"Status": "Available"}
    assert job["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 1800

    amt.advance(1799)
    assert sm.describe_training_job(TrainingJobName="warm")["WarmPoolStatus"]["Status"] == "Available"
    amt.advance(1)
    warm = sm.describe_training_job(TrainingJobName="warm")["WarmPoolStatus"]
    assert warm == {"Status": "Terminated", "ResourceRetainedBillableTimeInSeconds": 1800}
    summary = sm.list_training_jobs()["TrainingJobSummaries"][0]
    assert summary["WarmPoolStatus"]["Status"] == "Terminated"


def test_no_warm_pool_without_keep_alive_or_when_stopped(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("cold"))
    sm.create_training_job(**training_job("stopped-warm", keep_alive=600))
    amt.advance(300)
    sm.stop_training_job(TrainingJobName="stopped-warm")
    amt.run_until_idle()

    assert "WarmPoolStatus" not in sm.describe_training_job(TrainingJobName="cold")
    assert "WarmPoolStatus" not in sm.describe_training_job(TrainingJobName="stopped-warm")


def test_failed_trials_carry_a_reason_and_no_metric(mocked_aws: None, sm: Any) -> None:
    class FailsOddTrials:
        def plan(self, tuning_job_config: Any, definition: Any, hyperparameters: Any, rng: Any) -> TrialPlan:
            if int(hyperparameters["max_depth"]) % 2:
                return TrialPlan(120.0, None, "Failed", "AlgorithmError: out of memory", 0.0, None)
            return TrialPlan(300.0, 0.9, "Completed", None, 0.0, None)

    with AmtStandIn(seed=5, behaviour=FailsOddTrials()) as amt:
        sm.create_hyper_parameter_tuning_job(
            HyperParameterTuningJobName="flaky",
            HyperParameterTuningJobConfig=tuning_config(max_jobs=8, parallel=3),
            TrainingJobDefinition=definition(),
        )
        amt.run_until_idle()
        jobs = [sm.describe_training_job(TrainingJobName=n) for n in amt.training_jobs_of("flaky")]
        described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="flaky")

    failed = [j for j in jobs if j["TrainingJobStatus"] == "Failed"]
    assert failed
    for job in failed:
        assert job["FailureReason"] == "AlgorithmError: out of memory"
        assert "FinalMetricDataList" not in job
    assert described["TrainingJobStatusCounters"]["NonRetryableError"] == len(failed)
    assert described["ObjectiveStatusCounters"]["Failed"] == len(failed)
    assert described["HyperParameterTuningJobStatus"] == "Completed"


def test_a_tuning_job_whose_trials_all_fail_fails(mocked_aws: None, sm: Any) -> None:
    class AlwaysFails:
        def plan(self, tuning_job_config: Any, definition: Any, hyperparameters: Any, rng: Any) -> TrialPlan:
            return TrialPlan(60.0, None, "Failed", "ClientError: bad input", 0.0, None)

    with AmtStandIn(seed=5, behaviour=AlwaysFails()) as amt:
        sm.create_hyper_parameter_tuning_job(
            HyperParameterTuningJobName="doomed",
            HyperParameterTuningJobConfig=tuning_config(max_jobs=3, parallel=3),
            TrainingJobDefinition=definition(),
        )
        amt.run_until_idle()
        described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="doomed")

    assert described["HyperParameterTuningJobStatus"] == "Failed"
    assert described["FailureReason"]
    assert "BestTrainingJob" not in described


def _listed(sm: Any, **kwargs: Any) -> tuple[list[str], int]:
    """Every job ListTrainingJobs returns for ``kwargs``, and the number of calls it took."""
    names: list[str] = []
    calls = 0
    for page in sm.get_paginator("list_training_jobs").paginate(**kwargs):
        calls += 1
        names += [s["TrainingJobName"] for s in page["TrainingJobSummaries"]]
    return names, calls


def test_list_training_jobs_bounds_by_last_modified_time_before_paging(amt: AmtStandIn, sm: Any) -> None:
    # Given five jobs that ended long ago and two that ended in the last hour
    for i in range(5):
        sm.create_training_job(**training_job(f"old-{i}"))
    amt.run_until_idle()
    amt.advance(6 * 3600)
    bound = amt.clock.now()
    for i in range(2):
        sm.create_training_job(**training_job(f"new-{i}"))
    amt.run_until_idle()
    # When the list is bounded by LastModifiedTime, one job per page
    names, calls = _listed(sm, LastModifiedTimeAfter=bound, PaginationConfig={"PageSize": 1})
    # Then only the recent jobs are paged through: the time filter applies before MaxResults
    assert (sorted(names), calls) == (["new-0", "new-1"], 2)
    assert _listed(sm, LastModifiedTimeBefore=bound)[0] == [f"old-{i}" for i in range(5)]
    created_after = bound - timedelta(seconds=1)  # the recent jobs were created at ``bound`` exactly
    assert _listed(sm, CreationTimeAfter=created_after, NameContains="new-1")[0] == ["new-1"]


def test_list_training_jobs_filters_warm_pools_after_max_results(amt: AmtStandIn, sm: Any) -> None:
    # Given three jobs without a warm pool, then one whose pool is Available
    for i in range(3):
        sm.create_training_job(**training_job(f"cold-{i}"))
    amt.run_until_idle()
    sm.create_training_job(**training_job("warm", keep_alive=1800))
    amt.run_until_idle()
    # When the first page of two is asked for with WarmPoolStatusEquals (oldest first, the default)
    first = sm.list_training_jobs(WarmPoolStatusEquals="Available", MaxResults=2)
    # Then it is empty with a token, as AWS documents for StatusEquals: filtered after MaxResults
    assert first["TrainingJobSummaries"] == [] and first["NextToken"]
    names, calls = _listed(sm, WarmPoolStatusEquals="Available", PaginationConfig={"PageSize": 2})
    assert (names, calls) == (["warm"], 2)
    assert _listed(sm, StatusEquals="Completed", PaginationConfig={"PageSize": 100})[0] == [
        "cold-0",
        "cold-1",
        "cold-2",
        "warm",
    ]
