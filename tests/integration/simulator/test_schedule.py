"""The simulator keeps the deployed schedule: the sweep on the clock at its interval, the one-time budget
checks at their time, even while nothing else happens (issue 17, mechanism 12)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from governor_client.amt.plans import TrialPlan
from governor_client.simulator.delivery import DeliveryFaults
from governor_client.simulator.requests import tuning_request
from governor_client.simulator.schedule import first_tick
from governor_client.simulator.simulation import CreateTuningJob, Scenario, Simulation
from tuning_governor.policy import parse_policy

START = datetime(2026, 11, 30, 9, 0, 40, tzinfo=UTC)
FIVE_MINUTES = timedelta(minutes=5)


class HourLongTrial:
    """Every trial trains one hour and completes: between its start and its end SageMaker says nothing."""

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> TrialPlan:
        return TrialPlan(duration_s=3600.0, objective_value=0.8, startup_s=60.0, download_s=10.0, upload_s=10.0)


def _one_trial_job(name: str, tags: dict[str, str] | None = None) -> Scenario:
    request = tuning_request(
        name, strategy="Random", instance_type="ml.p3.8xlarge", instance_count=2, max_jobs=1, max_parallel=1,
        max_runtime_s=3 * 3600, extra_tags=tags,
    )  # fmt: skip
    return Scenario([CreateTuningJob(0, request)], behaviour=HourLongTrial())


def _stopped_by(sim: Simulation, job: str) -> list[dict[str, Any]]:
    return [d for d in sim.env.services.store.decisions(job) if d.get("action") == "stopped"]


def _status(sim: Simulation, job: str) -> str:
    described = sim.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=job)
    return str(described["HyperParameterTuningJobStatus"])


def test_a_runtime_cap_crossed_mid_trial_is_stopped_by_the_next_sweep(mocked_aws: None) -> None:
    # Given a job of one hour-long trial and a 30-minute runtime cap, swept every 5 virtual minutes
    policy = parse_policy("mode: enforce\ndefaults:\n  max_runtime_hours: 0.5\n", "test")
    simulation = Simulation(
        _one_trial_job("silent-hpo"), start=START, environment={"policy": policy}, quiet_handlers=True
    )
    with simulation as sim:
        sim.amt.set_applied_quota("ml.p3.8xlarge", 100)
        # When it runs: after the trial's start, nothing happens for an hour
        result = sim.run()
        stops = _stopped_by(sim, "silent-hpo")
        status = _status(sim, "silent-hpo")
    # Then the sweep after the cap stops it, within one interval of the cap
    assert status == "Stopped"
    assert [d["rule"] for d in stops] == ["runtime"], stops
    cap = START + timedelta(minutes=30)
    stopped_at = datetime.fromisoformat(stops[0]["at"])
    assert cap <= stopped_at <= cap + FIVE_MINUTES
    assert stopped_at == first_tick(cap, FIVE_MINUTES)
    assert result.sweeps >= 6


def test_a_budget_check_fires_at_its_time_without_a_sweep(mocked_aws: None) -> None:
    # Given a job whose only trial (2 x ml.p3.8xlarge, about $28/h) crosses its $10 budget some 20
    # minutes in, with no sweep at all
    policy = parse_policy("mode: enforce\n", "test")
    simulation = Simulation(
        _one_trial_job("checked-hpo", {"governance:budget-usd": "10"}),
        start=START,
        environment={"policy": policy},
        quiet_handlers=True,
        sweep_every=None,
    )
    with simulation as sim:
        sim.amt.set_applied_quota("ml.p3.8xlarge", 100)
        result = sim.run()
        stops = _stopped_by(sim, "checked-hpo")
        status = _status(sim, "checked-hpo")
    # Then the one-time check asked for at the trial's start stops the job at the projected crossing
    assert result.sweeps == 0
    assert result.budget_checks >= 1
    assert status == "Stopped"
    assert [d["rule"] for d in stops] == ["budget"], stops
    stopped_at = datetime.fromisoformat(stops[0]["at"])
    assert START + timedelta(minutes=10) < stopped_at < START + timedelta(minutes=40)
    # before the budget was spent (the trial's next event, its end, comes some 40 minutes later)
    assert Decimal(stops[0]["numbers"]["spent_usd"]) < Decimal(10), stops[0]


def test_sweep_every_none_keeps_todays_loop(mocked_aws: None) -> None:
    # Given the same silent job with the sweep off: nothing judges it mid-trial, it runs to the end
    policy = parse_policy("mode: enforce\ndefaults:\n  max_runtime_hours: 0.5\n", "test")
    with Simulation(
        _one_trial_job("unswept-hpo"),
        start=START,
        environment={"policy": policy},
        quiet_handlers=True,
        sweep_every=None,
    ) as sim:
        sim.amt.set_applied_quota("ml.p3.8xlarge", 100)
        result = sim.run()
        status = _status(sim, "unswept-hpo")
    assert result.sweeps == 0
    assert status == "Completed"


def test_a_job_whose_every_event_is_lost_is_discovered_and_finalised_by_the_sweep(mocked_aws: None) -> None:
    # Given every event dropped on the way: only the sweep can see the job
    policy = parse_policy("mode: monitor\n", "test")
    with Simulation(
        _one_trial_job("unheard-hpo"),
        start=START,
        faults=DeliveryFaults(drop_rate=1.0, seed=1),
        environment={"policy": policy},
        quiet_handlers=True,
    ) as sim:
        sim.amt.set_applied_quota("ml.p3.8xlarge", 100)
        result = sim.run()
        summary = sim.env.services.store.get_summary("unheard-hpo")
    # Then the run does not end with the job's last event: a sweep after it finalises the job on
    # SageMaker's figures, as the deployed sweep would
    assert result.deliveries == 0
    assert summary is not None
    assert summary.status == "Completed"
    assert summary.trials_total == 1
    assert result.finished_at == first_tick(result.finished_at, FIVE_MINUTES)
