"""A tuning job's life on the virtual clock: launching, limits, statuses, strategies."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from governor_client.amt import AmtStandIn, VirtualClock

from .builders import RANGES, definition, seed_job, tuning_config
from .conftest import T0

NAME_PATTERN = re.compile(r"^(?P<tuning>.+)-(?P<index>\d{3})-(?P<suffix>[0-9a-f]{8})$")
NON_TERMINAL = {"InProgress", "Stopping"}


def _name_parts(name: str) -> dict[str, str]:
    match = NAME_PATTERN.match(name)
    assert match, f"{name} does not follow <tuning-job>-NNN-xxxxxxxx"
    return match.groupdict()


def _statuses(sm: Any, tuning_job: str) -> list[str]:
    pages = sm.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job").paginate(
        HyperParameterTuningJobName=tuning_job, PaginationConfig={"PageSize": 100}
    )
    return [s["TrainingJobStatus"] for page in pages for s in page["TrainingJobSummaries"]]


def test_create_starts_in_progress_and_launches_up_to_the_parallel_limit(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())

    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-churn-hb")

    assert described["HyperParameterTuningJobStatus"] == "InProgress"
    assert "HyperParameterTuningEndTime" not in described
    assert described["TrainingJobStatusCounters"]["InProgress"] == 4
    assert described["ObjectiveStatusCounters"] == {"Succeeded": 0, "Pending": 4, "Failed": 0}
    assert "BestTrainingJob" not in described
    names = amt.training_jobs_of("xgb-churn-hb")
    parts = [_name_parts(n) for n in names]
    assert [p["index"] for p in parts] == ["001", "002", "003", "004"]
    assert {p["tuning"] for p in parts} == {"xgb-churn-hb"}
    assert len({p["suffix"] for p in parts}) == 4


def test_parallel_and_total_limits_hold_at_every_step(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())

    seen_max_running = 0
    for _ in range(200):
        statuses = _statuses(sm, "xgb-churn-hb")
        running = sum(1 for s in statuses if s in NON_TERMINAL)
        seen_max_running = max(seen_max_running, running)
        assert running <= 4
        assert len(statuses) <= 30
        if amt.idle():
            break
        amt.advance(30)

    assert amt.idle()
    assert seen_max_running == 4
    assert len(amt.training_jobs_of("xgb-churn-hb")) == 30


def test_parallelism_from_the_event_stream_never_exceeds_the_limit(amt: AmtStandIn, sm: Any) -> None:
    # Given the seed job has run to completion, every state change was an event in time order.
    sm.create_hyper_parameter_tuning_job(**seed_job())
    amt.run_until_idle()

    running: set[str] = set()
    peak = 0
    for event in amt.events:
        if event["detail-type"] != "SageMaker Training Job State Change":
            continue
        detail = event["detail"]
        if detail["TrainingJobStatus"] in NON_TERMINAL:
            running.add(detail["TrainingJobName"])
        else:
            running.discard(detail["TrainingJobName"])
        peak = max(peak, len(running))
        assert len(running) <= 4
    assert peak == 4
    assert not running


def test_statuses_progress_on_the_virtual_clock_only(amt: AmtStandIn, sm: Any, clock: VirtualClock) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())
    first = amt.training_jobs_of("xgb-churn-hb")[0]

    # Nothing moves without the clock.
    for _ in range(3):
        assert sm.describe_training_job(TrainingJobName=first)["SecondaryStatus"] == "Starting"
    assert "TrainingStartTime" not in sm.describe_training_job(TrainingJobName=first)

    seen: list[str] = []
    while not amt.idle():
        amt.advance(20)
        status = sm.describe_training_job(TrainingJobName=first)["SecondaryStatus"]
        if not seen or seen[-1] != status:
            seen.append(status)
        if status in {"Completed", "Stopped"}:
            break

    assert seen[0] in {"Starting", "Downloading"}
    assert seen[-1] in {"Completed", "Stopped"}
    described = sm.describe_training_job(TrainingJobName=first)
    start = described["TrainingStartTime"]
    # A realistic start-up (instance provisioning) happens before TrainingStartTime.
    assert start - described["CreationTime"] >= timedelta(seconds=60)
    assert described["TrainingEndTime"] > start
    assert described["CreationTime"] == T0
    assert clock.now() >= described["TrainingEndTime"]


def test_run_until_idle_completes_the_job_with_end_time_and_runtime(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())

    elapsed = amt.run_until_idle()

    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-churn-hb")
    assert described["HyperParameterTuningJobStatus"] == "Completed"
    counters = described["TrainingJobStatusCounters"]
    assert counters["InProgress"] == 0
    assert counters["Completed"] + counters["Stopped"] + counters["NonRetryableError"] == 30
    end = described["HyperParameterTuningEndTime"]
    assert end == described["LastModifiedTime"]
    runtime = described["ConsumedResources"]["RuntimeInSeconds"]
    assert runtime == int((end - described["CreationTime"]).total_seconds())
    assert 0 < runtime <= elapsed
    listed = sm.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]
    assert [(j["HyperParameterTuningJobName"], j["HyperParameterTuningJobStatus"]) for j in listed] == [
        ("xgb-churn-hb", "Completed")
    ]


def test_hyperparameters_are_sampled_within_ranges_and_merged_with_static(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())
    amt.run_until_idle()

    bounds = {r["Name"]: (float(r["MinValue"]), float(r["MaxValue"])) for r in RANGES["IntegerParameterRanges"]}
    bounds |= {r["Name"]: (float(r["MinValue"]), float(r["MaxValue"])) for r in RANGES["ContinuousParameterRanges"]}
    distinct = set()
    for name in amt.training_jobs_of("xgb-churn-hb"):
        hyperparameters = sm.describe_training_job(TrainingJobName=name)["HyperParameters"]
        assert hyperparameters["objective"] == "binary:logistic"  # static survives
        for param, (low, high) in bounds.items():
            assert low <= float(hyperparameters[param]) <= high
        assert hyperparameters["max_depth"].isdigit()
        assert hyperparameters["booster"] in {"gbtree", "dart"}
        distinct.add(hyperparameters["eta"])
    assert len(distinct) == 30


def test_the_same_seed_reproduces_the_run_and_another_seed_does_not() -> None:
    def run(seed: int) -> list[tuple[str, str, float | None]]:
        with mock_aws():
            sm: Any = boto3.client("sagemaker", region_name="us-east-1")
            with AmtStandIn(clock=VirtualClock(T0), seed=seed) as amt:
                sm.create_hyper_parameter_tuning_job(**seed_job())
                amt.run_until_idle()
                result = []
                for name in amt.training_jobs_of("xgb-churn-hb"):
                    job = sm.describe_training_job(TrainingJobName=name)
                    metrics = job.get("FinalMetricDataList") or [{}]
                    result.append((name, job["HyperParameters"]["eta"], metrics[0].get("Value")))
                return result

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_hyperband_stops_some_trials_early_with_less_training_time(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())
    amt.run_until_idle()

    jobs = [sm.describe_training_job(TrainingJobName=n) for n in amt.training_jobs_of("xgb-churn-hb")]
    stopped = [j for j in jobs if j["TrainingJobStatus"] == "Stopped"]
    completed = [j for j in jobs if j["TrainingJobStatus"] == "Completed"]
    assert stopped
    assert completed
    plans = {t.name: t.plan for t in amt.trials_of("xgb-churn-hb")}
    for job in stopped:
        plan = plans[job["TrainingJobName"]]
        assert plan.early_stop_at_s is not None
        assert plan.early_stop_at_s < plan.duration_s
        # Billed time = download (<= 60 s) + training until the rung + the stop grace, not the full run.
        assert job["TrainingTimeInSeconds"] <= plan.early_stop_at_s + 60 + 10 + 1
    for job in completed:
        assert job["TrainingTimeInSeconds"] >= plans[job["TrainingJobName"]].duration_s
    # Early-stopped trials still report an objective: Hyperband ranks them by it.
    assert all(j["FinalMetricDataList"][0]["MetricName"] == "validation:auc" for j in stopped)


@pytest.mark.parametrize("strategy", ["Bayesian", "Random"])
def test_bayesian_and_random_do_not_stop_early_unless_auto(amt: AmtStandIn, sm: Any, strategy: str) -> None:
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=f"{strategy.lower()}-off",
        HyperParameterTuningJobConfig=tuning_config(strategy=strategy, max_jobs=10, parallel=2),
        TrainingJobDefinition=definition(),
    )
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=f"{strategy.lower()}-auto",
        HyperParameterTuningJobConfig=tuning_config(strategy=strategy, max_jobs=10, parallel=2, early_stopping="Auto"),
        TrainingJobDefinition=definition(),
    )
    amt.run_until_idle()

    assert set(_statuses(sm, f"{strategy.lower()}-off")) == {"Completed"}
    assert "Stopped" in _statuses(sm, f"{strategy.lower()}-auto")


def test_max_runtime_of_the_tuning_job_stops_its_trials_and_launches_no_more(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="short-budget",
        HyperParameterTuningJobConfig=tuning_config(max_jobs=20, parallel=2, max_runtime=900),
        TrainingJobDefinition=definition(),
    )
    amt.run_until_idle()

    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="short-budget")
    assert described["HyperParameterTuningJobStatus"] == "Completed"
    launched = amt.training_jobs_of("short-budget")
    assert len(launched) < 20
    deadline = described["CreationTime"] + timedelta(seconds=900)
    for name in launched:
        job = sm.describe_training_job(TrainingJobName=name)
        assert job["CreationTime"] <= deadline
        assert job["TrainingEndTime"] <= deadline + timedelta(seconds=60)
    assert "Stopped" in {sm.describe_training_job(TrainingJobName=n)["TrainingJobStatus"] for n in launched}


def test_training_stopping_condition_max_runtime_ends_the_trial(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="tight-trials",
        HyperParameterTuningJobConfig=tuning_config(max_jobs=2, parallel=2),
        TrainingJobDefinition=definition(max_runtime=120),
    )
    amt.run_until_idle()

    for name in amt.training_jobs_of("tight-trials"):
        job = sm.describe_training_job(TrainingJobName=name)
        assert job["TrainingJobStatus"] == "Stopped"
        assert job["SecondaryStatus"] == "MaxRuntimeExceeded"
        assert job["TrainingTimeInSeconds"] == 120


def test_grid_strategy_runs_every_categorical_combination_once(amt: AmtStandIn, sm: Any) -> None:
    ranges = {
        "CategoricalParameterRanges": [
            {"Name": "booster", "Values": ["gbtree", "dart"]},
            {"Name": "max_depth", "Values": ["4", "6", "8"]},
        ]
    }
    config = tuning_config(strategy="Grid", parallel=2, ranges=ranges)
    del config["ResourceLimits"]["MaxNumberOfTrainingJobs"]
    sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="grid", HyperParameterTuningJobConfig=config, TrainingJobDefinition=definition()
    )
    amt.run_until_idle()

    combos = {(t.tuned_hyperparameters["booster"], t.tuned_hyperparameters["max_depth"]) for t in amt.trials_of("grid")}
    assert len(amt.training_jobs_of("grid")) == 6
    assert combos == {(b, d) for b in ("gbtree", "dart") for d in ("4", "6", "8")}


def test_duplicate_tuning_job_name_is_rejected(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())
    with pytest.raises(sm.exceptions.ResourceInUse):
        sm.create_hyper_parameter_tuning_job(**seed_job())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parallel=st.integers(min_value=1, max_value=5),
    total=st.integers(min_value=1, max_value=9),
    seed=st.integers(min_value=0, max_value=10_000),
    strategy=st.sampled_from(["Bayesian", "Random", "Hyperband"]),
)
def test_limits_hold_for_any_configuration(parallel: int, total: int, seed: int, strategy: str) -> None:
    with mock_aws():
        sm: Any = boto3.client("sagemaker", region_name="us-east-1")
        with AmtStandIn(clock=VirtualClock(T0), seed=seed) as amt:
            sm.create_hyper_parameter_tuning_job(
                HyperParameterTuningJobName="prop",
                HyperParameterTuningJobConfig=tuning_config(strategy=strategy, max_jobs=total, parallel=parallel),
                TrainingJobDefinition=definition(),
            )
            amt.run_until_idle()
            running: set[str] = set()
            for event in amt.events:
                detail = event["detail"]
                if "TrainingJobName" not in detail:
                    continue
                if detail["TrainingJobStatus"] in NON_TERMINAL:
                    running.add(detail["TrainingJobName"])
                else:
                    running.discard(detail["TrainingJobName"])
                assert len(running) <= parallel
            assert len(amt.training_jobs_of("prop")) == total
            status = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="prop")
            assert status["HyperParameterTuningJobStatus"] == "Completed"


@pytest.mark.parametrize(
    "config",
    [
        tuning_config(strategy="Grid"),  # Grid with numeric ranges
        {
            **tuning_config(strategy="Hyperband"),
            "StrategyConfig": {"HyperbandStrategyConfig": {"MinResource": 9, "MaxResource": 3}},
        },
    ],
    ids=["grid-with-numeric-ranges", "hyperband-min-above-max"],
)
def test_invalid_tuning_configs_are_validation_errors(amt: AmtStandIn, sm: Any, config: dict[str, Any]) -> None:
    with pytest.raises(sm.exceptions.ClientError) as excinfo:
        sm.create_hyper_parameter_tuning_job(
            HyperParameterTuningJobName="invalid",
            HyperParameterTuningJobConfig=config,
            TrainingJobDefinition=definition(),
        )
    assert excinfo.value.response["Error"]["Code"] == "ValidationException"
