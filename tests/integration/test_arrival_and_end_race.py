"""A job that ends while its own arrival is being judged (issue 18, finding 2).

Real tuning-events handler invocations in threads against one store applying one request at a time
(moto behind a lock, as AWS applies each request atomically; ``MemoryStore``'s methods under its own
lock). The arrival reads the capacity ledger, judges, and commits; the job's terminal event gives its
reservation back. Whatever the order, a job that has ended holds nothing once both are handled.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import tuning_events
from governor_client.memory import MemoryStore
from governor_client.simulator.runner import FakeLambdaContext
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tuning_governor.app.services import Services
from tuning_governor.policy import parse_policy

P3 = "ml.p3.2xlarge"
QUOTA = 8


def _arrive_and_end(world: World, names: list[str]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Create tuning jobs of 2 x ml.p3.2xlarge and stop each once it runs: (InProgress, Stopped) per job."""
    for name in names:
        world.env.sagemaker.create_hyper_parameter_tuning_job(
            **seed_tuning_request(name, team="vision", instance_type=P3, instance_count=2, max_parallel=1, max_jobs=3)
        )
    world.amt.advance(30)
    events: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for name in names:
        world.env.sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    world.amt.advance(600)
    for event in world.amt.drain_events():
        detail = event["detail"]
        name = detail.get("HyperParameterTuningJobName")
        if name in events and detail["HyperParameterTuningJobStatus"] in {"InProgress", "Stopped"}:
            events[name].append(event)
    pairs = {}
    for name, seen in events.items():
        first = next(e for e in seen if e["detail"]["HyperParameterTuningJobStatus"] == "InProgress")
        last = next(e for e in seen if e["detail"]["HyperParameterTuningJobStatus"] == "Stopped")
        pairs[name] = (first, last)
    return pairs


def _services(world: World, store: str) -> Services:
    services = world.env.services
    if store == "memory":
        services.store = MemoryStore()
    policy = parse_policy("mode: enforce\n", "test")
    services.policy = lambda: policy
    world.amt.set_applied_quota(P3, QUOTA)
    return services


def _invoke(services: Services) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        outcome: dict[str, Any] = tuning_events.handler(event, FakeLambdaContext("tuning-events"), services=services)
        return outcome

    return invoke


@pytest.mark.usefixtures("atomic_moto_requests")
@pytest.mark.parametrize("store", ["moto", "memory"])
def test_a_job_ending_while_its_arrival_is_judged_leaks_no_reservation(world: World, store: str) -> None:
    # Given an idle quota of 8 ml.p3.2xlarge and a 2-instance job whose end event comes while its
    # arrival is between reading the ledger and committing its reservation
    services = _services(world, store)
    (arrival, end) = _arrive_and_end(world, ["ends-at-once"])["ends-at-once"]
    ledger_read, ended = threading.Event(), threading.Event()
    read_ledger = services.store.read_ledger

    def read_then_let_the_end_through() -> Any:
        ledger = read_ledger()
        if not ended.is_set():
            ledger_read.set()
            assert ended.wait(30), "the end event never finished"
        return ledger

    services.store.read_ledger = read_then_let_the_end_through  # type: ignore[method-assign]
    invoke = _invoke(services)

    def end_after_the_read() -> dict[str, Any]:
        assert ledger_read.wait(30), "the arrival never read the ledger"
        try:
            return invoke(end)
        finally:
            ended.set()

    # When the arrival and the end are handled at the same time, in two threads
    with ThreadPoolExecutor(max_workers=2) as pool:
        judged, finalised = pool.submit(invoke, arrival), pool.submit(end_after_the_read)
        outcomes = [judged.result(), finalised.result()]

    # Then the ended job holds nothing, and the next 2-instance job on the idle quota is not stopped
    assert [o["outcome"] for o in outcomes] == ["recorded", "finalised"], outcomes
    assert services.store.read_ledger().reservations == {}
    assert services.store.decisions("ends-at-once") == []
