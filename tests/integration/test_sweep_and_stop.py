"""The sweep (runtime cap, stagnation, lost terminal events) and the stop action's idempotency."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError

import sweep
import tuning_governor.app.sweep.warm_pools as warm_pools_module
from governor_client.amt import DefaultTrialBehaviour
from governor_client.simulator.runner import FakeLambdaContext, deliver_all, deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tests.integration.standin.builders import training_job
from tests.integration.test_governance import decisions, record_stop_calls, status, use_policy
from tuning_governor.adapters.sagemaker import PAGE_SIZE

TERMINAL = {"Completed", "Stopped", "Failed"}


def run_sweep(world: World) -> dict[str, Any]:
    return sweep.handler({"source": "aws.scheduler"}, FakeLambdaContext("sweep"), services=world.env.services)


def test_sweep_finalises_a_job_whose_terminal_event_was_lost_with_the_same_summary(world: World) -> None:
    # Given a job whose Completed event never reaches the governor
    held = world.run_holding_terminal(seed_tuning_request("lost-end", max_jobs=8, max_parallel=2))
    assert world.env.services.store.get_summary("lost-end") is None
    # When the sweep runs
    report = run_sweep(world)
    # Then it finalises the job, reports it once, and stores the summary
    assert report["finalised"] == ["lost-end"]
    swept = world.env.services.store.get_summary("lost-end")
    assert swept is not None
    assert swept.status == "Completed"
    assert len(world.env.sns_messages()) == 1
    # And the summary equals what the terminal event itself produces from the same state
    world.env.dynamodb.delete_item(
        TableName=world.env.settings.table_name, Key={"pk": {"S": "JOB#lost-end"}, "sk": {"S": "SUMMARY"}}
    )
    outcome = deliver_event(held[-1], world.env.services).outcome
    assert outcome["outcome"] == "finalised"
    from_event = world.env.services.store.get_summary("lost-end")
    assert from_event is not None
    assert from_event.model_dump(exclude={"finalised_at"}) == swept.model_dump(exclude={"finalised_at"})
    # A second sweep finds nothing more to finalise, and the report is not sent again
    assert run_sweep(world)["finalised"] == []
    assert len(world.env.sns_messages()) == 1


def test_sweep_stops_a_job_at_its_runtime_cap_not_one_second_before(world: World) -> None:
    use_policy(world, "mode: enforce\ndefaults: {max_runtime_hours: 0.25}\n")  # 900 s
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **seed_tuning_request("slow-job", max_jobs=30, max_parallel=1)
    )
    created = world.amt.clock.now()
    world.amt.advance(899)
    deliver_all(world.amt.drain_events(), world.env.services)
    assert run_sweep(world)["decisions"] == []
    assert stops == []
    world.amt.advance(1)
    assert world.amt.clock.now() - created == timedelta(seconds=900)
    report = run_sweep(world)
    assert stops == ["slow-job"]
    [decision] = report["decisions"]
    assert (decision["rule"], decision["action"]) == ("runtime", "stopped")
    [recorded] = decisions(world, "slow-job")
    assert recorded["numbers"] == {"runtime_seconds": 900, "cap_seconds": 900}
    world.run_until_idle()
    assert status(world, "slow-job") == "Stopped"
    summary = world.env.services.store.get_summary("slow-job")
    assert summary is not None
    assert summary.status == "Stopped"


def test_failed_trial_cap_stops_at_the_nth_failure(world: World) -> None:
    world.amt.engine.behaviour = DefaultTrialBehaviour(seed=3, failure_rate=0.5)
    use_policy(world, "mode: enforce\ndefaults: {max_failed_trials: 3}\n")
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("flaky", max_jobs=20, max_parallel=2))
    failures_seen_at_stop: list[int] = []
    for _ in range(48 * 60):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            before = len(stops)
            deliver_event(event, world.env.services)
            if len(stops) > before:
                meta = world.env.services.store.get_job("flaky") or {}
                failures_seen_at_stop.append(int(meta.get("trials_failed", 0)))
        if world.amt.idle():
            break
    assert stops == ["flaky"]
    assert failures_seen_at_stop == [3]


def test_stagnation_stops_after_n_completed_trials_without_improvement(world: World) -> None:
    use_policy(world, "mode: enforce\ndefaults: {stagnation_trials: 4}\n")
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("plateau", max_jobs=40, max_parallel=1))
    world.run_until_idle()
    recorded = decisions(world, "plateau")
    if not recorded:
        pytest.fail("the seeded job never stagnated for 4 trials; pick another seed")
    [decision] = recorded
    assert decision["rule"] == "stagnation"
    assert decision["numbers"]["trials_without_improvement"] == 4
    assert stops == ["plateau"]


def test_stopping_is_idempotent_and_handles_missing_and_throttled(world: World) -> None:
    gateway = world.env.services.sagemaker
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("to-stop", max_jobs=4, max_parallel=2))
    world.amt.advance(60)
    assert gateway.stop_tuning_job("to-stop") == "stop-requested"
    assert gateway.stop_tuning_job("to-stop") in {"already-stopping", "stop-requested"}
    world.amt.run_until_idle()
    assert gateway.stop_tuning_job("to-stop") == "already-ended"
    assert gateway.stop_tuning_job("never-existed") == "not-found"
    # A throttled stop is retried by the gateway before it gives up
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("busy", max_jobs=4, max_parallel=2))
    world.amt.advance(60)
    throttles = [2]

    def throttle(**_: Any) -> None:
        if throttles[0] > 0:
            throttles[0] -= 1
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "StopHyperParameterTuningJob"
            )

    world.env.sagemaker.meta.events.register("before-call.sagemaker.StopHyperParameterTuningJob", throttle)
    assert gateway.stop_tuning_job("busy") == "stop-requested"
    assert throttles == [0]
    world.amt.run_until_idle()
    assert status(world, "busy") == "Stopped"


# -- warm pools: the sweep's listing is bounded in time ------------------------------------------------
def test_the_sweep_finds_a_warm_pool_without_paging_through_older_training_jobs(world: World) -> None:
    # Given a page's worth of training jobs that ended hours ago, then one whose warm pool is Available
    # (its events lost: only the sweep can see the pool)
    sm = world.env.sagemaker
    for i in range(PAGE_SIZE):
        sm.create_training_job(**training_job(f"old-{i:03d}"))
    world.amt.run_until_idle()
    world.amt.advance(8 * 3600)
    sm.create_training_job(**training_job("warm", keep_alive=3600))
    while sm.describe_training_job(TrainingJobName="warm")["TrainingJobStatus"] == "InProgress":
        world.amt.advance(60)
    world.amt.advance(3000)
    world.amt.drain_events()
    listed: list[dict[str, Any]] = []
    sm.meta.events.register(
        "provide-client-params.sagemaker.ListTrainingJobs", lambda params, **_: listed.append(params)
    )
    # When the sweep runs
    run_sweep(world)
    # Then it holds the pool's instances, having listed only the recently modified jobs: one call
    assert world.env.services.store.warm_pool_names() == {"warm"}
    assert len(listed) == 1
    # And once the keep-alive has run out, the next sweep releases them
    world.amt.advance(700)
    run_sweep(world)
    assert world.env.services.store.warm_pool_names() == set()


def test_the_warm_pool_window_covers_the_longest_keep_alive_sagemaker_accepts() -> None:
    model = botocore.session.get_session().get_service_model("sagemaker")
    longest = max(
        model.shape_for(shape).members["KeepAlivePeriodInSeconds"].metadata["max"]
        for shape in ("ResourceConfig", "ResourceConfigForUpdate")
    )
    assert timedelta(seconds=longest) <= warm_pools_module.MAX_KEEP_ALIVE
