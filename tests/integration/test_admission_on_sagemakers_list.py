"""Admission judged on SageMaker's list: a concurrency stop is made only on a complete view of the jobs
created before the one stopped (every InProgress job SageMaker lists, judged first), and a breach
recorded under monitor is acted on once after the switch to enforce. (A breach that no longer holds at
the moment of acting: test_admission_order, "a breach that has passed".) Through the real handlers on
the AMT stand-in."""

from __future__ import annotations

import random

import pytest

from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tests.integration.test_admission import P3, enforce, stop_calls, team_a, team_b
from tests.integration.test_admission_order import created, deliver, of
from tuning_governor.app.sweep.run import run_sweep
from tuning_governor.policy import parse_policy


def monitor(world: World) -> None:
    policy = parse_policy("mode: monitor\n", "test")
    world.env.services.policy = lambda: policy


def test_a_job_admitted_over_the_quota_in_monitor_is_stopped_once_after_the_switch(world: World) -> None:
    # Given 8 ml.p3.2xlarge under monitor: A (4) admitted, B (6) admitted over the quota (would-stop)
    world.amt.set_applied_quota(P3, 8)
    monitor(world)
    stops = stop_calls(world)
    deliver(world, created(world, team_a(max_jobs=40), team_b(max_jobs=40)))
    store = world.env.services.store
    assert store.read_ledger().reservations["team-b-hpo"].over_limit is True
    assert [d["action"] for d in store.decisions("team-b-hpo")] == ["would-stop"]
    # When the policy says enforce and the sweeps run (no new event of either job)
    enforce(world)
    world.amt.advance(300)
    world.amt.drain_events()
    run_sweep(world.env.services)
    run_sweep(world.env.services)
    # Then B, still over the quota next to A, is stopped, once, as a re-judgement of the monitor decision
    assert stops == ["team-b-hpo"], "a job admitted over the quota in monitor ran on after the switch"
    enforced = [d for d in store.decisions("team-b-hpo") if d["verdict"] == "enforced"]
    assert [(d["rule"], d["action"]) for d in enforced] == [("concurrency", "stopped")]
    assert "team-b-hpo" not in store.read_ledger().reservations


def greedy(demand: dict[str, int], limit: int) -> list[str]:
    """The jobs the pass in creation order refuses (``demand`` in creation order)."""
    used, refused = 0, []
    for name, wanted in demand.items():
        if used + wanted <= limit:
            used += wanted
        else:
            refused.append(name)
    return refused


EIGHT = [2, 3, 3, 6, 4, 5, 2, 6]  # instances per job, in creation order (job-0 created first)


@pytest.mark.parametrize("order", ["newest-first", "seed-1", "seed-2", "seed-3"])
def test_eight_jobs_created_in_one_second_stop_what_creation_order_stops_in_any_handling_order(
    world: World, order: str
) -> None:
    # Given 10 ml.p3.2xlarge and eight jobs created in the same second (creation order: job-0 .. job-7)
    world.amt.set_applied_quota(P3, 10)
    enforce(world)
    stops = stop_calls(world)
    demand = {f"job-{i}": wanted for i, wanted in enumerate(EIGHT)}
    requests = [
        seed_tuning_request(name, team="t", instance_type=P3, instance_count=1, max_parallel=wanted, max_jobs=40)
        for name, wanted in demand.items()
    ]
    events = created(world, *requests, gap=0)
    # When their arrivals are handled one at a time, newest first (or shuffled), no thread
    names = list(reversed(demand))
    if order != "newest-first":
        random.Random(int(order[-1])).shuffle(names)
    for name in names:
        deliver(world, of(events, name, tuning=True))
    # Then exactly the jobs the pass in creation order refuses are stopped, each once
    assert sorted(stops) == greedy(demand, 10), f"handled {names}"
    store = world.env.services.store
    assert sorted(store.read_ledger().reservations) == sorted(set(demand) - set(greedy(demand, 10)))
