"""The stand-in's richer behaviours: warm-pool reuse, failure phases, spot interruptions, tuner timing,
learning curves and strategies (SageMaker side only; the handlers are not involved)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from governor_client.amt import AmtStandIn, DefaultTrialBehaviour, TrialPlan, VirtualClock
from governor_client.simulator.requests import GRID_RANGES, training_job_request, tuning_request

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture
def sm(mocked_aws: None) -> Any:
    return boto3.client("sagemaker", region_name="us-east-1")


def _startup_s(job: dict[str, Any]) -> float:
    return float((job["TrainingStartTime"] - job["CreationTime"]).total_seconds())


def _describe_all(sm: Any, names: list[str]) -> list[dict[str, Any]]:
    return [sm.describe_training_job(TrainingJobName=name) for name in names]


def test_a_matching_job_reuses_an_available_warm_pool(sm: Any) -> None:
    with AmtStandIn(clock=VirtualClock(T0), seed=3) as amt:
        sm.create_training_job(**training_job_request("first", keep_alive_s=900))
        amt.run_until_idle()
        assert sm.describe_training_job(TrainingJobName="first")["WarmPoolStatus"] == {"Status": "Available"}
        amt.advance(300)
        sm.create_training_job(**training_job_request("second", keep_alive_s=900))
        first = sm.describe_training_job(TrainingJobName="first")
        second = sm.describe_training_job(TrainingJobName="second")
        # The pool moved: billed for the 300 s it waited, and named the job that took it.
        assert first["WarmPoolStatus"] == {
            "Status": "Reused",
            "ResourceRetainedBillableTimeInSeconds": 300,
            "ReusedByJob": "second",
        }
        assert second["WarmPoolStatus"] == {"Status": "InUse"}
        amt.run_until_idle()
        second = sm.describe_training_job(TrainingJobName="second")
        assert second["WarmPoolStatus"] == {"Status": "Available"}
        assert _startup_s(second) < _startup_s(first) / 5  # no provisioning on a warm pool
        amt.advance(900)
        assert sm.describe_training_job(TrainingJobName="second")["WarmPoolStatus"] == {
            "Status": "Terminated",
            "ResourceRetainedBillableTimeInSeconds": 900,
        }
        # The reused pool's expiry was cancelled: it stays Reused.
        assert sm.describe_training_job(TrainingJobName="first")["WarmPoolStatus"]["Status"] == "Reused"
        warm_events = [
            (e["detail"]["TrainingJobName"], e["detail"]["WarmPoolStatus"]["Status"])
            for e in amt.events
            if "WarmPoolStatus" in e["detail"]
        ]
    assert ("first", "Reused") in warm_events
    assert ("second", "InUse") in warm_events
    assert ("first", "Terminated") not in warm_events


@pytest.mark.parametrize(
    "second",
    [
        {"instance_type": "ml.m5.2xlarge"},  # another cluster shape
        {"instance_count": 2},
        {"keep_alive_s": 0},  # a job without a keep-alive does not ask for a pool
    ],
)
def test_only_a_job_with_the_same_cluster_and_a_keep_alive_reuses_a_pool(sm: Any, second: dict[str, Any]) -> None:
    with AmtStandIn(clock=VirtualClock(T0), seed=3) as amt:
        sm.create_training_job(**training_job_request("first", keep_alive_s=900))
        amt.run_until_idle()
        sm.create_training_job(**training_job_request("other", **{"keep_alive_s": 900, **second}))
        assert sm.describe_training_job(TrainingJobName="first")["WarmPoolStatus"] == {"Status": "Available"}
        assert sm.describe_training_job(TrainingJobName="other").get("WarmPoolStatus") is None


def test_an_expired_pool_is_not_reused(sm: Any) -> None:
    with AmtStandIn(clock=VirtualClock(T0), seed=3) as amt:
        sm.create_training_job(**training_job_request("first", keep_alive_s=120))
        amt.run_until_idle()
        # Idle (no job running), but the pool's expiry is still scheduled.
        ended = sm.describe_training_job(TrainingJobName="first")["TrainingEndTime"]
        assert amt.idle()
        expiry = amt.next_due()
        assert expiry is not None
        assert abs((expiry - (ended + timedelta(seconds=120))).total_seconds()) < 0.01  # API times are in ms
        amt.advance_to(expiry)
        assert amt.next_due() is None
        sm.create_training_job(**training_job_request("late", keep_alive_s=120))
        assert sm.describe_training_job(TrainingJobName="first")["WarmPoolStatus"] == {
            "Status": "Terminated",
            "ResourceRetainedBillableTimeInSeconds": 120,
        }
        assert "WarmPoolStatus" not in sm.describe_training_job(TrainingJobName="late")


def test_trials_of_a_tuning_job_reuse_the_pools_of_earlier_trials(sm: Any) -> None:
    launch_delay = 45.0
    with AmtStandIn(clock=VirtualClock(T0), seed=5, launch_delay_s=launch_delay) as amt:
        sm.create_hyper_parameter_tuning_job(
            **tuning_request("warm-tune", strategy="Random", max_jobs=8, max_parallel=2, keep_alive_s=600)
        )
        amt.run_until_idle()
        amt.advance(600)
        trials = _describe_all(sm, amt.training_jobs_of("warm-tune"))
    statuses = Counter(t["WarmPoolStatus"]["Status"] for t in trials)
    assert statuses["Reused"] == 6  # trials 3..8 each took over a finished trial's pool
    assert statuses["Terminated"] == 2  # the last two pools found no taker
    names = {t["TrainingJobName"] for t in trials}
    retained = []
    for trial in trials:
        pool = trial["WarmPoolStatus"]
        if pool["Status"] == "Reused":
            assert pool["ReusedByJob"] in names
            retained.append(pool["ResourceRetainedBillableTimeInSeconds"])
        else:
            assert pool["ResourceRetainedBillableTimeInSeconds"] == 600
    # A pool waits at most until the tuner's next launch, launch_delay after a trial ends (a launch
    # fills every free slot, so a pool freed in between waits less).
    assert all(0 <= seconds <= launch_delay + 1 for seconds in retained)
    assert max(retained) == pytest.approx(launch_delay, abs=1)
    reusers = [t for t in trials if any(p["WarmPoolStatus"].get("ReusedByJob") == t["TrainingJobName"] for p in trials)]
    assert len(reusers) == 6
    cold = [t for t in trials if t not in reusers]
    assert max(_startup_s(t) for t in reusers) < min(_startup_s(t) for t in cold)


class _FailsInPhase:
    """Every trial fails, in the phase its index picks (1: Starting, 2: Downloading, 3: Training)."""

    def plan(self, tuning_job_config: Any, definition: Any, hyperparameters: Any, rng: random.Random) -> TrialPlan:
        phase = rng.choice(["Starting", "Downloading", "Training"])
        return TrialPlan(120.0, None, "Failed", f"simulated failure in {phase}", failure_phase=phase)  # type: ignore[arg-type]


def test_failed_trials_bill_nothing_before_start_up_and_partial_time_after(sm: Any) -> None:
    with AmtStandIn(clock=VirtualClock(T0), seed=11, behaviour=_FailsInPhase()) as amt:
        sm.create_hyper_parameter_tuning_job(**tuning_request("doomed", strategy="Random", max_jobs=12, max_parallel=4))
        amt.run_until_idle()
        trials = _describe_all(sm, amt.training_jobs_of("doomed"))
        tuning = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="doomed")
    by_phase: dict[str, list[dict[str, Any]]] = {}
    for trial in trials:
        assert trial["TrainingJobStatus"] == "Failed"
        by_phase.setdefault(trial["FailureReason"].rsplit(" ", 1)[-1], []).append(trial)
    assert set(by_phase) == {"Starting", "Downloading", "Training"}
    for trial in by_phase["Starting"]:
        assert "TrainingStartTime" not in trial
        assert "BillableTimeInSeconds" not in trial
        assert [t["Status"] for t in trial["SecondaryStatusTransitions"]] == ["Starting", "Failed"]
    for trial in by_phase["Downloading"]:
        assert [t["Status"] for t in trial["SecondaryStatusTransitions"]] == ["Starting", "Downloading", "Failed"]
        assert 0 < trial["BillableTimeInSeconds"] <= 60
    for trial in by_phase["Training"]:
        assert trial["BillableTimeInSeconds"] >= 120
    assert tuning["HyperParameterTuningJobStatus"] == "Failed"
    assert tuning["TrainingJobStatusCounters"]["NonRetryableError"] == 12


def test_the_default_behaviour_fails_a_configurable_share_of_trials_in_every_phase() -> None:
    behaviour = DefaultTrialBehaviour(seed=1, failure_rate=0.3)
    config = tuning_request("x")["HyperParameterTuningJobConfig"]
    definition = tuning_request("x")["TrainingJobDefinition"]
    plans = [
        behaviour.plan(config, definition, {"eta": "0.1", "max_depth": "5"}, random.Random(i)) for i in range(2000)
    ]
    failed = [p for p in plans if p.outcome == "Failed"]
    assert 0.26 < len(failed) / len(plans) < 0.34
    phases = Counter(p.failure_phase for p in failed)
    assert set(phases) == {"Starting", "Downloading", "Training"}
    assert phases["Training"] > phases["Starting"]
    assert all(p.failure_reason and p.objective_value is None for p in failed)
    assert all(p.duration_s == 0 for p in failed if p.failure_phase != "Training")


def test_spot_interruptions_are_configurable_and_never_billed(sm: Any) -> None:
    behaviour = DefaultTrialBehaviour(seed=2, spot_interruption_rate=1.0, spot_interruption_s=(300.0, 300.0))
    with AmtStandIn(clock=VirtualClock(T0), seed=2, behaviour=behaviour) as amt:
        sm.create_hyper_parameter_tuning_job(**tuning_request("spotty", strategy="Random", max_jobs=4, spot=True))
        amt.run_until_idle()
        trials = _describe_all(sm, amt.training_jobs_of("spotty"))
    for trial in trials:
        secondary = [t["Status"] for t in trial["SecondaryStatusTransitions"]]
        assert secondary == ["Starting", "Downloading", "Training", "Interrupted", "Training", "Uploading", "Completed"]
        assert trial["EnableManagedSpotTraining"] is True
        assert trial["BillableTimeInSeconds"] < trial["TrainingTimeInSeconds"] - 300


def test_the_tuner_pauses_between_trials_and_before_finishing(sm: Any) -> None:
    with AmtStandIn(clock=VirtualClock(T0), seed=4, launch_delay_s=40, finish_delay_s=90) as amt:
        sm.create_hyper_parameter_tuning_job(**tuning_request("paced", strategy="Random", max_jobs=3, max_parallel=1))
        amt.run_until_idle()
        trials = _describe_all(sm, amt.training_jobs_of("paced"))
        tuning = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="paced")
    for earlier, later in itertools.pairwise(trials):
        gap = (later["CreationTime"] - earlier["TrainingEndTime"]).total_seconds()
        assert gap == pytest.approx(40, abs=0.01)
    assert (tuning["HyperParameterTuningEndTime"] - trials[-1]["TrainingEndTime"]).total_seconds() == pytest.approx(
        90, abs=0.01
    )


def test_learning_curves_saturate_sooner_with_a_higher_learning_rate() -> None:
    behaviour = DefaultTrialBehaviour(seed=3, noise=0.0)
    request = tuning_request("x", strategy="Random")
    config, definition = request["HyperParameterTuningJobConfig"], request["TrainingJobDefinition"]
    slow = behaviour.plan(config, definition, {"eta": "0.01", "max_depth": "6"}, random.Random(1))
    fast = behaviour.plan(config, definition, {"eta": "0.5", "max_depth": "6"}, random.Random(1))
    assert slow.objective_value is not None and fast.objective_value is not None

    def share_reached(plan: TrialPlan, fraction: float) -> float:
        value = plan.objective_at(fraction)
        assert value is not None and plan.objective_value is not None
        return (value - 0.5) / (plan.objective_value - 0.5)

    assert share_reached(fast, 0.2) > share_reached(slow, 0.2) + 0.2
    assert share_reached(slow, 1.0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("strategy", "max_jobs", "expected_trials"),
    [("Bayesian", 9, 9), ("Random", 9, 9), ("Hyperband", 9, 9), ("Grid", 40, 18)],
)
def test_every_strategy_runs_to_completion(sm: Any, strategy: str, max_jobs: int, expected_trials: int) -> None:
    with AmtStandIn(clock=VirtualClock(T0), seed=6) as amt:
        sm.create_hyper_parameter_tuning_job(
            **tuning_request(f"s-{strategy.lower()}", strategy=strategy, max_jobs=max_jobs, max_parallel=3)  # type: ignore[arg-type]
        )
        amt.run_until_idle()
        infos = amt.trials_of(f"s-{strategy.lower()}")
        tuning = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=f"s-{strategy.lower()}")
    assert tuning["HyperParameterTuningJobStatus"] == "Completed"
    assert len(infos) == expected_trials
    assert tuning["HyperParameterTuningJobConfig"]["Strategy"] == strategy
    statuses = Counter(info.status for info in infos)
    if strategy == "Hyperband":
        assert statuses["Stopped"] > 0  # successive halving cut some trials
    else:
        assert statuses == {"Completed": expected_trials}
    if strategy == "Grid":
        points = {tuple(sorted(info.tuned_hyperparameters.items())) for info in infos}
        assert len(points) == 18  # every grid point exactly once
        names = {r["Name"] for r in GRID_RANGES["CategoricalParameterRanges"]}
        assert all(set(info.tuned_hyperparameters) == names for info in infos)
