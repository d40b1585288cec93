"""Simultaneous arrivals: threads racing real handler invocations against one capacity ledger.

Each thread invokes the tuning-events handler with one job's InProgress event, all released at once
by a barrier. The governor's read-judge-conditional-write cycle races for real. moto's in-process
backend has no locking of its own, so each moto call (the whole request, as one DynamoDB request is
atomic in AWS) runs under one lock; nothing of the governor's own cycle is serialised by it. The same
race runs on the in-memory store (``store=memory``), whose methods are each atomic under its own lock.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import tuning_events
from governor_client.memory import MemoryStore
from governor_client.simulator.runner import FakeLambdaContext
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tuning_governor.policy import parse_policy

P3 = "ml.p3.2xlarge"
QUOTA = 12


def launch(world: World, rng: random.Random, jobs: int) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Create ``jobs`` tuning jobs at once; their demands and their first InProgress events."""
    demand: dict[str, int] = {}
    for i in range(jobs):
        count, parallel = rng.choice([1, 2]), rng.choice([1, 2, 3])
        name = f"race-{i:02d}"
        demand[name] = count * parallel
        world.env.sagemaker.create_hyper_parameter_tuning_job(
            **seed_tuning_request(
                name, team=f"team-{i % 3}", instance_type=P3, instance_count=count, max_parallel=parallel, max_jobs=4
            )
        )
    world.amt.advance(30)
    first: dict[str, dict[str, Any]] = {}
    for event in world.amt.drain_events():
        name = event["detail"].get("HyperParameterTuningJobName")
        if name and event["detail"]["HyperParameterTuningJobStatus"] == "InProgress":
            first.setdefault(name, event)
    arrivals = [first[name] for name in demand]
    rng.shuffle(arrivals)
    return demand, arrivals


@pytest.mark.parametrize("store", ["moto", "memory"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_simultaneous_arrivals_are_judged_one_after_the_other_in_creation_order(
    world: World, atomic_moto_requests: None, seed: int, store: str
) -> None:
    # Given an account of 12 ml.p3.2xlarge, an enforcing policy and 10 jobs created at once
    rng = random.Random(seed)
    world.amt.set_applied_quota(P3, QUOTA)
    policy = parse_policy("mode: enforce\n", "test")
    services = world.env.services
    if store == "memory":
        services.store = MemoryStore()
    services.policy = lambda: policy
    stops: list[str] = []
    world.env.sagemaker.meta.events.register(
        "provide-client-params.sagemaker.StopHyperParameterTuningJob",
        lambda params, **_: stops.append(params["HyperParameterTuningJobName"]),
    )
    demand, arrivals = launch(world, rng, jobs=10)
    assert sum(demand.values()) > QUOTA  # some must be stopped
    barrier = threading.Barrier(len(arrivals))

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        barrier.wait()
        outcome: dict[str, Any] = tuning_events.handler(event, FakeLambdaContext("tuning-events"), services=services)
        return outcome

    # When every arrival is handled at the same moment, each in its own thread
    with ThreadPoolExecutor(max_workers=len(arrivals)) as pool:
        outcomes = list(pool.map(invoke, arrivals))

    assert all(o["outcome"] == "recorded" for o in outcomes), outcomes
    ledger = services.store.read_ledger()
    admitted = dict(ledger.reservations)
    rejected = {name: services.store.decisions(name) for name in demand if name not in admitted}
    # Then every job not admitted has exactly one decision: stopped for concurrency
    for decisions in rejected.values():
        [decision] = decisions
        assert (decision["rule"], decision["action"]) == ("concurrency", "stopped")
    # And the order of admission is CreationTime, then name (all ten were created at the same moment):
    # a job is only ever displaced by one created before it, never by handling order
    for name, [decision] in rejected.items():
        displacer = decision["numbers"].get("displaced_by")
        assert displacer is None or displacer < name, (name, displacer)
    assert sum(demand[name] for name in admitted) <= QUOTA
    # And only the jobs that did not fit were stopped, each once
    assert sorted(stops) == sorted(rejected)
    assert admitted and rejected
