"""Scenarios for the simulator tests: several teams, every strategy, spot, failures, standalone jobs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from moto import mock_aws

from governor_client.amt import DefaultTrialBehaviour, FailurePhase
from governor_client.simulator.requests import training_job_request, tuning_request
from governor_client.simulator.simulation import (
    CreateTrainingJob,
    CreateTuningJob,
    Scenario,
    Simulation,
    SimulationResult,
)

MICRO = Decimal("0.000001")
#: Every failure phase equally likely, so a small run shows all three.
ALL_PHASES: tuple[tuple[FailurePhase, float], ...] = (("Starting", 1.0), ("Downloading", 1.0), ("Training", 1.0))


def teams_scenario(*, keep_alive_s: int = 0, seed: int = 7, failure_rate: float = 0.25) -> Scenario:
    """Four tuning jobs of three teams (Bayesian+spot, Hyperband, Grid, Random+median stopping) and two
    standalone training jobs; ``keep_alive_s`` > 0 gives the tuning jobs and the standalone jobs warm pools."""
    actions: list[CreateTuningJob | CreateTrainingJob] = [
        CreateTuningJob(
            0,
            tuning_request(
                "vision-bo",
                strategy="Bayesian",
                team="vision",
                owner="bo@example.com",
                max_jobs=6,
                max_parallel=2,
                spot=True,
                keep_alive_s=keep_alive_s,
            ),
        ),
        CreateTuningJob(
            60, tuning_request("churn-hb", team="churn", max_jobs=9, max_parallel=3, keep_alive_s=keep_alive_s)
        ),
        CreateTuningJob(
            120,
            tuning_request(
                "fraud-grid",
                strategy="Grid",
                team="fraud",
                owner="cy@example.com",
                max_jobs=6,
                max_parallel=3,
                keep_alive_s=keep_alive_s,
            ),
        ),
        CreateTuningJob(
            180,
            tuning_request(
                "fraud-rand",
                strategy="Random",
                team="fraud",
                owner="cy@example.com",
                max_jobs=6,
                max_parallel=2,
                early_stopping="Auto",
                keep_alive_s=keep_alive_s,
            ),
        ),
        CreateTrainingJob(
            30, training_job_request("vision-solo-1", team="vision", owner="bo@example.com", keep_alive_s=900)
        ),
        CreateTrainingJob(
            1500, training_job_request("vision-solo-2", team="vision", owner="bo@example.com", keep_alive_s=900)
        ),
    ]
    behaviour = DefaultTrialBehaviour(
        seed=seed, failure_rate=failure_rate, spot_interruption_rate=0.6, failure_phases=ALL_PHASES
    )
    return Scenario(actions, behaviour=behaviour, launch_delay_s=20.0, finish_delay_s=30.0)


@contextmanager
def fresh_world(simulation: Simulation) -> Iterator[Simulation]:
    """The simulation in a moto world of its own (for comparing two runs side by side)."""
    with mock_aws(), simulation as sim:
        yield sim


def summaries_of(sim: Simulation, jobs: list[str]) -> dict[str, dict[str, Any] | None]:
    """The stored job summaries as plain data, without ``finalised_at`` (it is the delivery time)."""
    out: dict[str, dict[str, Any] | None] = {}
    for job in jobs:
        summary = sim.env.services.store.get_summary(job)
        out[job] = summary.model_dump(mode="json", exclude={"finalised_at"}) if summary else None
    return out


RunAndRead = Callable[[Simulation], tuple[SimulationResult, dict[str, dict[str, Any] | None]]]
