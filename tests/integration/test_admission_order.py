"""Admission in SageMaker's time (issue 17): jobs are admitted in CreationTime order whatever order
their events are handled in, jobs the sweep discovers are judged like arrivals, a reservation never
exceeds the job's own configuration, a finished job's reservation is checked against SageMaker before
it causes a stop, and a job first admitted on incomplete facts is judged again on full ones."""

from __future__ import annotations

import random
from typing import Any

import pytest

from governor_client.simulator.runner import deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tests.integration.test_admission import P3, TUNING, calls, enforce, like_sample, stop_calls, team_a, team_b
from tuning_governor.app.sweep.run import run_sweep


def created(world: World, *requests: dict[str, Any], gap: float = 30) -> list[dict[str, Any]]:
    """Create the jobs ``gap`` seconds apart, run a minute, and return what SageMaker emitted (held)."""
    for i, request in enumerate(requests):
        if i:
            world.amt.advance(gap)
        world.env.sagemaker.create_hyper_parameter_tuning_job(**request)
    world.amt.advance(60)
    return world.amt.drain_events()


def of(events: list[dict[str, Any]], name: str, *, tuning: bool | None = None) -> list[dict[str, Any]]:
    def job_of(event: dict[str, Any]) -> str:
        detail = event["detail"]
        arn = str(detail.get("TuningJobArn") or "")
        return str(detail.get("HyperParameterTuningJobName") or arn.rsplit("/", 1)[-1])

    return [
        e for e in events if job_of(e).lower() == name and (tuning is None or (e["detail-type"] == TUNING) == tuning)
    ]


def deliver(world: World, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [deliver_event(event, world.env.services).outcome for event in events]


def test_two_jobs_30_s_apart_the_later_created_is_stopped_whatever_is_handled_first(world: World) -> None:
    # Given 8 ml.p3.2xlarge; A (4) created 30 s before B (6): both cannot run
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    stops = stop_calls(world)
    events = created(world, team_a(), team_b())
    # When B's events are handled first, then A's
    deliver(world, of(events, "team-b-hpo"))
    deliver(world, of(events, "team-a-hpo"))
    # Then B, created later, is the breacher: stopped; A, who launched first, runs
    assert stops == ["team-b-hpo"]
    store = world.env.services.store
    assert set(store.read_ledger().reservations) == {"team-a-hpo"}
    [decision] = store.decisions("team-b-hpo")
    assert decision["numbers"]["displaced_by"] == "team-a-hpo"
    assert store.decisions("team-a-hpo") == []


def test_in_monitor_mode_the_later_created_job_is_the_would_stop_and_keeps_holding(world: World) -> None:
    world.amt.set_applied_quota(P3, 8)
    stops = stop_calls(world)
    events = created(world, team_a(), team_b())
    deliver(world, of(events, "team-b-hpo"))
    deliver(world, of(events, "team-a-hpo"))
    store = world.env.services.store
    assert stops == []
    [decision] = store.decisions("team-b-hpo")
    assert decision["action"] == "would-stop"
    assert store.decisions("team-a-hpo") == []
    ledger = store.read_ledger()
    assert ledger.reservations["team-b-hpo"].over_limit is True
    assert ledger.reservations["team-a-hpo"].over_limit is False


def test_a_job_the_sweep_listed_before_its_late_event_is_judged_for_admission(world: World) -> None:
    # Given A (4 of 8) admitted, and B (6) created whose events are still in flight
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    deliver(world, created(world, team_a()))
    stops = stop_calls(world)
    late = created(world, team_b())
    # When the sweep lists B first, then B's late InProgress event arrives
    report = run_sweep(world.env.services)
    assert report["unjudged"] == ["team-b-hpo"]
    deliver(world, late)
    # Then B was judged like an arrival: over the quota, stopped once
    assert stops == ["team-b-hpo"]
    [decision] = world.env.services.store.decisions("team-b-hpo")
    assert decision["rule"] == "concurrency"
    assert set(world.env.services.store.read_ledger().reservations) == {"team-a-hpo"}


def test_a_lost_arrival_known_only_from_trial_events_is_judged_by_the_sweep(world: World) -> None:
    # Given A (4) created before B (6) with 8 instances: A's tuning events are all dropped, its trials' delivered
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    stops = stop_calls(world)
    events = created(world, team_a(), team_b())
    deliver(world, of(events, "team-a-hpo", tuning=False))
    deliver(world, of(events, "team-b-hpo"))
    assert stops == []  # B was judged without A
    # When the sweep runs
    run_sweep(world.env.services)
    # Then A is judged for admission, as created first it is admitted, and B is the breacher
    assert stops == ["team-b-hpo"]
    assert set(world.env.services.store.read_ledger().reservations) == {"team-a-hpo"}


def test_a_lost_arrival_over_the_quota_is_judged_by_the_sweep(world: World) -> None:
    world.amt.set_applied_quota(P3, 5)
    enforce(world)
    stops = stop_calls(world)
    created(world, team_b())  # 6 > 5, every event of it dropped
    run_sweep(world.env.services)
    assert stops == ["team-b-hpo"]
    assert world.env.services.store.read_ledger().reservations == {}


def test_the_sweep_judges_the_jobs_it_finds_in_creation_order(world: World) -> None:
    # Given A (4) created 30 s before B (6), 8 instances, every event of both lost
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    stops = stop_calls(world)
    created(world, team_a(), team_b())
    # When the sweep finds them
    report = run_sweep(world.env.services)
    # Then they are judged in CreationTime order: A admitted, B stopped
    assert report["unjudged"] == ["team-a-hpo", "team-b-hpo"]
    assert stops == ["team-b-hpo"]
    assert set(world.env.services.store.read_ledger().reservations) == {"team-a-hpo"}


def test_a_finished_job_whose_end_is_in_flight_causes_no_concurrency_stop(world: World) -> None:
    # Given A (4 of 8) finished, its terminal event still in flight
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    world.run_holding_terminal(team_a(max_jobs=2))
    world.amt.advance(300)
    assert set(world.env.services.store.read_ledger().reservations) == {"team-a-hpo"}
    stops = stop_calls(world)
    listed = calls(world, "ListHyperParameterTuningJobs", "DescribeHyperParameterTuningJob")
    # When B (6) arrives
    deliver(world, created(world, team_b()))
    # Then the judgement checked SageMaker (one List per status: InProgress, Stopping; one Describe for
    # A, not listed: its end time): A ended before B was created, its reservation is released, B fits
    assert listed == ["ListHyperParameterTuningJobs"] * 2 + ["DescribeHyperParameterTuningJob"]
    assert stops == []
    assert world.env.services.store.decisions("team-b-hpo") == []
    assert set(world.env.services.store.read_ledger().reservations) == {"team-b-hpo"}


def test_the_sweep_never_counts_more_trials_than_the_job_runs_in_parallel(world: World) -> None:
    # Given B (3 parallel x 2) whose trials' terminal events are all lost: the table believes them running
    world.amt.set_applied_quota(P3, 100)
    enforce(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**team_b(max_jobs=30))
    for _ in range(15):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            if event["detail"].get("TrainingJobStatus") not in {"Completed", "Stopped", "Failed"}:
                deliver_event(event, world.env.services)
    believed = len((world.env.services.store.get_job("team-b-hpo") or {}).get("running") or {})
    assert believed > 3
    # When the sweep re-counts the reservation
    run_sweep(world.env.services)
    # Then it holds at most MaxParallel x InstanceCount
    reservation = world.env.services.store.read_ledger().reservations["team-b-hpo"]
    assert sum(reservation.on_demand.values()) <= 6


def test_a_job_admitted_on_thin_facts_is_judged_again_when_its_configuration_arrives(world: World) -> None:
    # Given A (4 of 8) admitted, and B (3 parallel x 2) whose first event and Describe are thin (a replay)
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    deliver(world, created(world, team_a()))
    stops = stop_calls(world)
    events = of(created(world, team_b()), "team-b-hpo", tuning=True)
    gateway = world.env.services.sagemaker
    real = gateway.describe_tuning_job
    gateway.describe_tuning_job = lambda name: real(name).model_copy(update={"config": None})  # type: ignore[method-assign]
    thin = like_sample("tuning-docs-shape-inprogress")
    deliver(world, [event | {"detail": thin(event["detail"])} for event in events])
    gateway.describe_tuning_job = real  # type: ignore[method-assign]
    reservation = world.env.services.store.read_ledger().reservations["team-b-hpo"]
    assert reservation.incomplete is True
    assert stops == []
    # When its full event arrives
    deliver(world, [event | {"id": f"{event['id']}-full"} for event in events])
    # Then it is judged on MaxParallel 3: 4 + 6 > 8, stopped
    assert stops == ["team-b-hpo"]
    assert "team-b-hpo" not in world.env.services.store.read_ledger().reservations


@pytest.mark.parametrize("seed", [0, 3, 5, 9, 11])
def test_any_handling_order_stops_what_creation_order_stops(world: World, seed: int) -> None:
    # Given 12 ml.p3.2xlarge and five jobs created 20 s apart, of random demand
    rng = random.Random(seed)
    world.amt.set_applied_quota(P3, 12)
    enforce(world)
    stops = stop_calls(world)
    demand: dict[str, int] = {}
    requests = []
    for i in range(5):
        count, parallel = rng.choice([1, 2]), rng.choice([1, 2, 3])
        demand[f"job-{i}"] = count * parallel
        requests.append(
            seed_tuning_request(
                f"job-{i}", team="t", instance_type=P3, instance_count=count, max_parallel=parallel, max_jobs=4
            )
        )
    events = created(world, *requests, gap=20)
    # When their arrivals are handled in a shuffled order
    order = list(demand)
    random.Random(seed * 7 + 1).shuffle(order)
    for name in order:
        deliver(world, of(events, name, tuning=True))
    # Then exactly the jobs the greedy pass in creation order refuses are stopped
    used, refused = 0, []
    for name, wanted in demand.items():
        if used + wanted <= 12:
            used += wanted
        else:
            refused.append(name)
    assert sorted(stops) == refused


def _holder_ends_after_the_newcomer_is_created(world: World) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A (4 of 8) admitted and running for ten minutes; B (6) created; A stopped 19 s later: it ends
    19 s after B's CreationTime. Returns A's end events and B's events, all still undelivered."""
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    deliver(world, created(world, team_a(max_jobs=40)))
    world.pump(600)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**team_b())
    world.amt.advance(19)
    world.env.sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="team-a-hpo")
    world.amt.advance(300)
    events = world.amt.drain_events()
    a = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="team-a-hpo")
    b = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="team-b-hpo")
    assert a["HyperParameterTuningJobStatus"] == "Stopped"
    assert a["HyperParameterTuningEndTime"] > b["CreationTime"]
    return of(events, "team-a-hpo", tuning=True), of(events, "team-b-hpo")


@pytest.mark.parametrize("end_event", ["handled first", "in flight"])
def test_a_holder_that_ended_after_the_newcomer_was_created_makes_a_breach_that_has_passed(
    world: World, end_event: str
) -> None:
    # Given A (4 of 8) running when B (6) is created, A ending after B's CreationTime
    a_end, b_events = _holder_ends_after_the_newcomer_is_created(world)
    stops = stop_calls(world)
    # When A's end event is handled before B's arrival, or is still in flight when B arrives
    if end_event == "handled first":
        deliver(world, a_end)
        assert world.env.services.store.read_ledger().reservations == {}
    deliver(world, b_events)
    # Then B breached as of its CreationTime, when A still ran (4 + 6 > 8), but SageMaker runs only B
    # now: the breach has passed, nobody is stopped, whatever the delivery delay
    assert stops == []
    [decision] = world.env.services.store.decisions("team-b-hpo")
    assert (decision["rule"], decision["verdict"], decision["action"]) == ("concurrency", "passed", "passed")
    assert set(world.env.services.store.read_ledger().reservations) == {"team-b-hpo"}


def test_a_holder_the_sweep_finds_ended_after_the_newcomer_was_created_makes_a_breach_that_has_passed(
    world: World,
) -> None:
    # Given A (4 of 8) running when B (6) is created, A ending after B's CreationTime, and every event
    # of A's end and of B's arrival lost
    _holder_ends_after_the_newcomer_is_created(world)
    stops = stop_calls(world)
    # When the sweep finalises A (its release marked at the end Describe gives) and then judges B
    report = run_sweep(world.env.services)
    assert report["ledger"]["released"] == ["team-a-hpo"]
    assert report["unjudged"] == ["team-b-hpo"]
    # Then B breached as of its CreationTime, but not now: recorded as passed, not stopped
    assert stops == []
    [decision] = world.env.services.store.decisions("team-b-hpo")
    assert decision["verdict"] == "passed"
    assert set(world.env.services.store.read_ledger().reservations) == {"team-b-hpo"}


def test_a_later_created_job_displaced_as_of_its_creation_is_not_stopped_once_the_holder_has_ended(
    world: World,
) -> None:
    # Given 8 ml.p3.2xlarge: H (4) running; E (2) created, its events delayed; L (4) created 30 s later
    # and admitted next to H; then H stopped, ending after both were created, its end handled
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    holder = seed_tuning_request("h-hpo", team="t", instance_type=P3, instance_count=1, max_parallel=4, max_jobs=40)
    deliver(world, created(world, holder))
    world.pump(600)
    early = seed_tuning_request("e-hpo", team="t", instance_type=P3, instance_count=1, max_parallel=2, max_jobs=4)
    later = seed_tuning_request("l-hpo", team="t", instance_type=P3, instance_count=2, max_parallel=2, max_jobs=4)
    events = created(world, early, later)
    stops = stop_calls(world)
    deliver(world, of(events, "l-hpo"))
    world.env.sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="h-hpo")
    world.amt.advance(300)
    deliver(world, of(world.amt.drain_events(), "h-hpo", tuning=True))
    assert stops == ["h-hpo"]  # the user's stop
    # When E's late arrival is handled
    deliver(world, of(events, "e-hpo"))
    # Then E is judged as of its creation (H + E = 6 fits) and L as of its own, when H still ran:
    # H + E + L = 10 > 8, L is the breacher; but H has ended: E + L = 6 run now, the breach has passed
    assert stops == ["h-hpo"]
    [decision] = world.env.services.store.decisions("l-hpo")
    assert decision["numbers"]["displaced_by"] == "e-hpo"
    assert (decision["verdict"], decision["action"]) == ("passed", "passed")
    assert set(world.env.services.store.read_ledger().reservations) == {"e-hpo", "l-hpo"}


def test_an_ended_reservation_is_kept_for_the_retention_then_pruned_by_the_sweep(world: World) -> None:
    # Given A admitted and finished, its end event handled
    world.amt.set_applied_quota(P3, 8)
    enforce(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**team_a(max_jobs=4))
    world.run_until_idle()
    ledger = world.env.services.store.read_ledger()
    assert (dict(ledger.reservations), sorted(ledger.ended)) == ({}, ["team-a-hpo"])
    # When sweeps run within the retention, and after it (3600 s + two sweep intervals)
    world.amt.advance(3600)
    run_sweep(world.env.services)
    kept = sorted(world.env.services.store.read_ledger().ended)
    world.amt.advance(600)
    run_sweep(world.env.services)
    # Then the ended reservation is kept, then pruned: the ledger item does not grow with ended jobs
    assert kept == ["team-a-hpo"]
    assert world.env.services.store.read_ledger().ended == {}
