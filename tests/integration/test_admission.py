"""Arrival through the real handlers on the AMT stand-in: minimal AWS events, spot and default
quotas, prioritized InstanceConfigs, the capacity ledger and retries of a failed judgement."""

from __future__ import annotations

from typing import Any

import pytest

from governor_client.simulator.runner import deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import load_event
from tests.integration.conftest import World
from tuning_governor.app.sweep.run import run_sweep
from tuning_governor.errors import TransientError
from tuning_governor.policy import parse_policy

P3 = "ml.p3.2xlarge"
G5, G4DN, G5_2X = "ml.g5.xlarge", "ml.g4dn.xlarge", "ml.g5.2xlarge"
TUNING = "SageMaker HyperParameter Tuning Job State Change"


def enforce(world: World, extra: str = "") -> None:
    policy = parse_policy("mode: enforce\n" + extra, "test")
    world.env.services.policy = lambda: policy


def calls(world: World, *operations: str) -> list[str]:
    seen: list[str] = []
    for operation in operations:
        world.env.sagemaker.meta.events.register(
            f"provide-client-params.sagemaker.{operation}", lambda params, _op=operation, **_: seen.append(_op)
        )
    return seen


def stop_calls(world: World) -> list[str]:
    stops: list[str] = []
    world.env.sagemaker.meta.events.register(
        "provide-client-params.sagemaker.StopHyperParameterTuningJob",
        lambda params, **_: stops.append(params["HyperParameterTuningJobName"]),
    )
    return stops


def status(world: World, name: str) -> str:
    described = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    return str(described["HyperParameterTuningJobStatus"])


def run_first(world: World, request: dict[str, Any]) -> None:
    """Create a job and deliver its events for a minute: it is running and admitted."""
    world.env.sagemaker.create_hyper_parameter_tuning_job(**request)
    world.pump(60)


def arrive(world: World, request: dict[str, Any], shape: Any = None) -> list[dict[str, Any]]:
    """Create a job and deliver what SageMaker emits for a minute; its tuning events cut down to
    ``shape`` (a function of the detail) when given. Returns the tuning events' outcomes."""
    world.env.sagemaker.create_hyper_parameter_tuning_job(**request)
    world.amt.advance(60)
    outcomes = []
    for emitted in world.amt.drain_events():
        event = emitted
        if event["detail-type"] == TUNING and shape is not None:
            event = event | {"detail": shape(event["detail"])}
        delivered = deliver_event(event, world.env.services)
        if event["detail-type"] == TUNING:
            outcomes.append(delivered.outcome)
    return outcomes


def like_sample(sample: str) -> Any:
    """Cut a detail down to the fields of a sample in events/ (AWS's documented minimal shapes)."""
    keys = set(load_event(sample)["detail"])
    return lambda detail: {k: v for k, v in detail.items() if k in keys}


def team_b(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "team": "speech",
        "instance_type": P3,
        "instance_count": 2,
        "max_parallel": 3,
        "max_jobs": 6,
    }
    return seed_tuning_request("team-b-hpo", **(base | changes))


def team_a(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "team": "vision",
        "instance_type": P3,
        "instance_count": 1,
        "max_parallel": 4,
        "max_jobs": 8,
    }
    return seed_tuning_request("team-a-hpo", **(base | changes))


@pytest.mark.parametrize("sample", ["tuning-docs-shape-inprogress", "tuning-minimal-no-tags-inprogress"])
def test_an_arrival_in_aws_documented_minimal_shape_is_judged_on_describe_and_list_tags(
    world: World, sample: str
) -> None:
    # Given 8 ml.p3.2xlarge and team A holding 4 of them
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    run_first(world, team_a())
    seen = calls(world, "DescribeHyperParameterTuningJob", "ListTags")
    stops = stop_calls(world)
    # When team B (3 parallel x 2) arrives with events that carry only the documented fields
    outcomes = arrive(world, team_b(), like_sample(sample))
    # Then it is judged on MaxParallel 3 and its real tags: 6 > 4 free, stopped, for team speech
    assert stops == ["team-b-hpo"]
    [decision] = world.env.services.store.decisions("team-b-hpo")
    assert decision["team"] == "speech"
    assert decision["numbers"]["instance_types"][P3]["demand"] == 6
    meta = world.env.services.store.get_job("team-b-hpo") or {}
    assert (meta["max_parallel"], meta["team"], meta["tags"]["team"]) == (3, "speech", "speech")
    # And each event needed at most one Describe and one ListTags (none when the event has Tags), plus
    # one of each right before the stop (the job's status and tags as SageMaker has them then)
    tuning_events = len(outcomes)
    assert seen.count("DescribeHyperParameterTuningJob") <= tuning_events + 1
    expected_list_tags = 0 if "Tags" in load_event(sample)["detail"] else tuning_events
    assert seen.count("ListTags") == expected_list_tags + 1


def test_a_full_event_needs_no_describe_and_no_list_tags(world: World) -> None:
    world.amt.set_applied_quota(P3, 8)
    seen = calls(world, "DescribeHyperParameterTuningJob", "ListTags")
    arrive(world, team_a())
    assert seen == []


def test_spot_arrivals_count_against_the_spot_quota_not_the_on_demand_one(world: World) -> None:
    # Given on-demand ml.p3.2xlarge 4 of 8 used, and a spot quota of 8 with nothing on spot
    world.amt.set_applied_quota(P3, 8)
    world.amt.set_applied_quota(f"{P3} for spot training job usage", 8)
    enforce(world)
    run_first(world, team_a())
    stops = stop_calls(world)
    # When a managed-spot job of 3 x 2 arrives
    arrive(world, team_b(spot=True))
    # Then it fits: spot and on-demand are separate quotas
    assert stops == []
    assert world.env.services.store.decisions("team-b-hpo") == []
    ledger = world.env.services.store.read_ledger()
    assert dict(ledger.reservations["team-b-hpo"].spot) == {P3: 6}
    assert dict(ledger.reservations["team-a-hpo"].on_demand) == {P3: 4}


def test_a_spot_arrival_over_the_spot_quota_is_stopped_naming_the_spot_quota(world: World) -> None:
    world.amt.set_applied_quota(P3, 100)
    code = world.amt.set_applied_quota(f"{P3} for spot training job usage", 4)
    enforce(world)
    stops = stop_calls(world)
    arrive(world, team_b(spot=True))
    assert stops == ["team-b-hpo"]
    [decision] = world.env.services.store.decisions("team-b-hpo")
    row = decision["numbers"]["spot_instance_types"][P3]
    assert (row["demand"], row["limit"]) == (6, 4)
    assert row["limit_source"] == f"Service Quota {code} ({P3} for spot training job usage)"


def test_without_an_applied_value_the_aws_default_quota_decides_and_is_named(world: World) -> None:
    # Given an account where ml.g5.2xlarge has no applied quota value (AWS default: 4 in the stand-in)
    code = world.amt.clear_applied_quota(G5_2X)
    enforce(world)
    stops = stop_calls(world)
    # When a job of 3 x 2 ml.g5.2xlarge arrives
    arrive(world, team_b(instance_type=G5_2X))
    # Then the default value is the limit, and the decision says it was the default
    assert stops == ["team-b-hpo"]
    [decision] = world.env.services.store.decisions("team-b-hpo")
    row = decision["numbers"]["instance_types"][G5_2X]
    assert row["limit"] == 4
    assert row["limit_source"].startswith(f"AWS default quota {code} ({G5_2X} for training job usage")


def prioritized(request: dict[str, Any], configs: list[tuple[str, int]]) -> dict[str, Any]:
    definition = dict(request["TrainingJobDefinition"])
    definition.pop("ResourceConfig")
    definition["HyperParameterTuningResourceConfig"] = {
        "AllocationStrategy": "Prioritized",
        "InstanceConfigs": [{"InstanceType": t, "InstanceCount": c, "VolumeSizeInGB": 30} for t, c in configs],
    }
    return request | {"TrainingJobDefinition": definition}


def test_a_prioritized_job_whose_first_choice_is_full_is_admitted_on_its_second(world: World) -> None:
    # Given ml.g5.xlarge full (4 of 4) and ml.g4dn.xlarge free (4)
    world.amt.set_applied_quota(G5, 4)
    world.amt.set_applied_quota(G4DN, 4)
    enforce(world)
    run_first(world, team_a(instance_type=G5))
    stops = stop_calls(world)
    # When a job with InstanceConfigs [g5.xlarge x1, g4dn.xlarge x1], 3 parallel, arrives
    arrive(world, prioritized(team_b(instance_count=1), [(G5, 1), (G4DN, 1)]))
    # Then it fits on its second choice and is reserved there only
    assert stops == []
    reservation = world.env.services.store.read_ledger().reservations["team-b-hpo"]
    assert dict(reservation.on_demand) == {G4DN: 3}
    assert reservation.plan.startswith("1 x ml.g4dn.xlarge")


def test_finished_jobs_give_their_reservations_back(world: World) -> None:
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**team_a(max_jobs=2))
    world.pump(60)
    assert set(world.env.services.store.read_ledger().reservations) == {"team-a-hpo"}
    world.run_until_idle()
    assert status(world, "team-a-hpo") == "Completed"
    assert world.env.services.store.read_ledger().reservations == {}


def test_an_arrival_judgement_that_failed_half_way_is_made_on_the_retry(world: World) -> None:
    # Given B would not fit, and the first attempt to judge it fails on a throttled read
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    run_first(world, team_a())
    stops = stop_calls(world)
    store = world.env.services.store
    real_holders = store.holders
    failures = iter([True])

    def flaky_holders(**kwargs: Any) -> Any:
        if next(failures, False):
            raise TransientError("DynamoDB ThrottlingException")
        return real_holders(**kwargs)

    store.holders = flaky_holders  # type: ignore[method-assign]
    world.env.sagemaker.create_hyper_parameter_tuning_job(**team_b())
    world.amt.advance(60)
    events = world.amt.drain_events()
    first = next(e for e in events if e["detail"].get("HyperParameterTuningJobName") == "team-b-hpo")
    assert deliver_event(first, world.env.services).outcome["outcome"] == "error"
    assert stops == []
    # When EventBridge redelivers the event
    retried = deliver_event(first, world.env.services).outcome
    # Then the judgement is made: B is stopped, once
    assert stops == ["team-b-hpo"]
    assert [d["action"] for d in retried["decisions"]] == ["stopped"]
    # And a later duplicate does nothing more
    deliver_event(first, world.env.services)
    assert stops == ["team-b-hpo"]


def test_a_stop_that_failed_after_the_judgement_is_finished_on_the_retry(world: World) -> None:
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    run_first(world, team_a())
    stops = stop_calls(world)
    gateway = world.env.services.sagemaker
    real_stop = gateway.stop_tuning_job
    failures = iter([True])

    def flaky_stop(name: str) -> Any:
        if next(failures, False):
            raise TransientError(f"{name}: stop throttled")
        return real_stop(name)

    gateway.stop_tuning_job = flaky_stop  # type: ignore[method-assign]
    world.env.sagemaker.create_hyper_parameter_tuning_job(**team_b())
    world.amt.advance(60)
    first = next(e for e in world.amt.drain_events() if e["detail"].get("HyperParameterTuningJobName") == "team-b-hpo")
    assert deliver_event(first, world.env.services).outcome["outcome"] == "error"
    assert world.env.services.store.read_ledger().reservations.keys() == {"team-a-hpo"}
    deliver_event(first, world.env.services)
    assert stops == ["team-b-hpo"]
    [decision] = world.env.services.store.decisions("team-b-hpo")
    assert (decision["state"], decision["action"]) == ("done", "stopped")


# -- the sweep keeps the ledger true to what runs ---------------------------------------------------------
def test_the_sweep_releases_the_reservation_of_a_job_whose_end_was_never_delivered(world: World) -> None:
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    world.run_holding_terminal(team_a(max_jobs=2))
    assert set(world.env.services.store.read_ledger().reservations) == {"team-a-hpo"}
    world.amt.advance(300)  # the next sweep (a reservation younger than 5 minutes is left to a later one)
    report = run_sweep(world.env.services)
    assert report["ledger"]["released"] == ["team-a-hpo"]
    assert world.env.services.store.read_ledger().reservations == {}


def test_the_sweep_judges_a_running_job_whose_arrival_was_lost_and_later_arrivals_count_it(world: World) -> None:
    # Given team A's job running, but none of its events delivered
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**team_a())
    world.amt.advance(60)
    world.amt.drain_events()
    # When the sweep runs, A is discovered, judged like an arrival (it fits) and counted in the ledger
    report = run_sweep(world.env.services)
    assert report["unjudged"] == ["team-a-hpo"]
    assert report["ledger"]["adopted"] == []
    assert dict(world.env.services.store.read_ledger().reservations["team-a-hpo"].on_demand) == {P3: 4}
    # Then team B (6) arriving later does not fit next to it
    stops = stop_calls(world)
    arrive(world, team_b())
    assert stops == ["team-b-hpo"]


def test_the_sweep_recounts_a_reservation_from_the_types_its_trials_run_on(world: World) -> None:
    # Given B reserved on its second choice (g4dn) because g5 was full in the ledger
    world.amt.set_applied_quota(G5, 4)
    world.amt.set_applied_quota(G4DN, 4)
    enforce(world)
    run_first(world, team_a(instance_type=G5))
    arrive(world, prioritized(team_b(instance_count=1, max_jobs=30), [(G5, 1), (G4DN, 1)]))
    assert dict(world.env.services.store.read_ledger().reservations["team-b-hpo"].on_demand) == {G4DN: 3}
    # When its trials run on ml.g5.xlarge after all (the stand-in always finds first-choice capacity)
    world.pump(240)
    running = world.env.services.store.get_job("team-b-hpo") or {}
    on_g5 = sum(1 for t in (running.get("running") or {}).values() if G5 in t["instances"])
    assert on_g5 >= 1
    report = run_sweep(world.env.services)
    # Then the sweep charges the running trials where they run, the free slots on the reserved choice
    assert "team-b-hpo" in report["ledger"]["recounted"]
    reservation = world.env.services.store.read_ledger().reservations["team-b-hpo"]
    assert reservation.on_demand.get(G5) == on_g5
    assert reservation.on_demand.get(G4DN, 0) == 3 - on_g5
