"""One interleaving of two arrivals, replayed deterministically: no threads, a store that runs the other
arrival between one arrival's read of the ledger and its conditional write.

The interleaving (seen under load in ``test_admission_race``): an arrival's judgement breaches, so it
lists SageMaker and runs the complete pass in creation order over jobs it had not seen; while the
pass is about to reserve the earliest of them, another arrival reserves a later one that still fitted
then. The pass's commit conflicts, is judged again on the ledger that now holds the later job, and
reserves the earlier one without displacing (the pass judges later jobs itself); the later job is one
the pass had listed as unseen, so it must still be judged again against the earlier one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import tuning_events
from governor_client.memory import MemoryStore
from governor_client.simulator.runner import FakeLambdaContext
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tuning_governor.policy import parse_policy

P3 = "ml.p3.2xlarge"
QUOTA = 8
# name -> (instance count, max parallel): all created at the same moment, admitted in name order.
JOBS = {"ilv-0": (2, 2), "ilv-1": (2, 2), "ilv-2": (1, 1), "ilv-3": (1, 5)}


class Interleaving:
    """A store whose first ``commit_admission`` for ``job_key`` first runs ``meanwhile`` (the other
    arrival, whole), so that commit is made on a ledger read before the other arrival committed."""

    def __init__(self, store: Any, job_key: str, meanwhile: Callable[[], object]) -> None:
        self._store, self._job_key, self._meanwhile = store, job_key, meanwhile
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def commit_admission(self, version: int, job_key: str, *args: Any, **kwargs: Any) -> str:
        if job_key == self._job_key and not self.fired:
            self.fired = True
            self._meanwhile()
        outcome: str = self._store.commit_admission(version, job_key, *args, **kwargs)
        return outcome


def _arrivals(world: World) -> dict[str, dict[str, Any]]:
    for name, (count, parallel) in JOBS.items():
        world.env.sagemaker.create_hyper_parameter_tuning_job(
            **seed_tuning_request(name, team="team-a", instance_type=P3, instance_count=count, max_parallel=parallel)
        )
    world.amt.advance(30)
    first: dict[str, dict[str, Any]] = {}
    for event in world.amt.drain_events():
        detail = event["detail"]
        if detail.get("HyperParameterTuningJobStatus") == "InProgress":
            first.setdefault(detail["HyperParameterTuningJobName"], event)
    return first


@pytest.mark.parametrize("store", ["moto", "memory"])
def test_a_job_reserved_while_the_complete_pass_judged_an_earlier_one_is_judged_again(world: World, store: str) -> None:
    # Given a quota of 8, ilv-0 (4) admitted, and ilv-1 (4), ilv-2 (1), ilv-3 (5) created at the same moment
    world.amt.set_applied_quota(P3, QUOTA)
    policy = parse_policy("mode: enforce\n", "test")
    services = world.env.services
    if store == "memory":
        services.store = MemoryStore()
    services.policy = lambda: policy
    arrivals = _arrivals(world)

    def handle(name: str) -> dict[str, Any]:
        outcome: dict[str, Any] = tuning_events.handler(
            arrivals[name], FakeLambdaContext("tuning-events"), services=services
        )
        return outcome

    assert handle("ilv-0")["outcome"] == "recorded"
    # When ilv-3's arrival breaches (4 + 5 > 8), lists ilv-1 and ilv-2 as unseen and judges ilv-1 first,
    # and ilv-2's arrival reserves ilv-2 (4 + 1 fits) between that judgement's read and its commit
    interleaving = Interleaving(services.store, "ilv-1", lambda: handle("ilv-2"))
    services.store = interleaving
    assert handle("ilv-3")["outcome"] == "recorded"
    assert interleaving.fired
    # Then the ledger holds no more than the quota: ilv-0 and ilv-1 (CreationTime, then name), not ilv-2
    demand = {name: count * parallel for name, (count, parallel) in JOBS.items()}
    admitted = dict(services.store.read_ledger().reservations)
    assert sum(demand[name] for name in admitted) <= QUOTA, sorted(admitted)
    assert sorted(admitted) == ["ilv-0", "ilv-1"]
    # And ilv-2, reserved on a ledger that did not hold ilv-1 yet, has its stop decision (displaced)
    [decision] = services.store.decisions("ilv-2")
    assert (decision["rule"], decision["action"]) == ("concurrency", "stopped")
