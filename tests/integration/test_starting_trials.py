"""A team month crossed between sweeps by trials the sweep saw Starting, with every event hours late
(issue 25: the disorder suite's team-budgets hours-late seed 3), through the real handlers and the sweep
on the AMT stand-in (moto).

At the sweep, SageMaker lists the job's trials InProgress without a TrainingStartTime (Starting): not billed,
so not tracked. They start billing a minute later and take the team past its month before the next sweep;
no event shows them in time. The sweep asks for a one-time check at the earliest the team could cross were
they billing from the sweep; the check re-reads the trials from SageMaker, judges on their real
TrainingStartTimes, asks for the next check at the real crossing, and that one stops the job.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal
from typing import Any

import budget_check
from governor_client.amt.plans import TrialPlan
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import HOURLY, P3_8X, SWEEP_EVERY, big_job, run_sweep
from tests.integration.test_governance import record_stop_calls, use_policy
from tuning_governor.adapters.checks import PendingChecks
from tuning_governor.ports import CHECK_KEY

STARTUP_S = 90.0
"""Every trial is Starting for this long after the job's creation (TrainingStartTime then)."""


class SlowStart:
    """Trials that start billing ``STARTUP_S`` after creation and train 3 h."""

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> TrialPlan:
        return TrialPlan(duration_s=3 * 3600, objective_value=rng.uniform(0.7, 0.9), startup_s=STARTUP_S)


def _deliver_tuning_events(world: World) -> None:
    """The tuning job's own events handled; its trials' events held back (hours late)."""
    for event in world.amt.drain_events():
        if event["detail-type"] != "SageMaker Training Job State Change":
            deliver_event(event, world.env.services)


def test_trials_starting_at_a_sweep_are_checked_when_they_could_cross_the_team_month(world: World) -> None:
    # Given team nlp with a $20 month, one job of 4 parallel trials of 8 x ml.p3.8xlarge ($470/h), its
    # arrival handled, and none of its trials' events delivered (every one hours late)
    world.amt.set_applied_quota(P3_8X, 1000)
    world.amt.engine.behaviour = SlowStart()
    use_policy(world, "mode: enforce\nteams: {nlp: {monthly_budget_usd: 20}}\n")
    stops = record_stop_calls(world)
    checks = PendingChecks()
    world.env.services.checks = checks
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("late-team"))
    created = world.amt.clock.now()
    # When the sweep runs a minute after creation, while SageMaker lists the trials Starting
    world.amt.advance(60)
    _deliver_tuning_events(world)
    run_sweep(world)
    listed = world.env.sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName="late-team"
    )["TrainingJobSummaries"]
    assert len(listed) == 4 and all("TrainingStartTime" not in t for t in listed)
    # Then it asks for a check at the earliest the month could cross: their burn from the sweep on
    burn = 4 * 8 * HOURLY
    earliest = created + timedelta(seconds=60 + float(Decimal(20) / burn * 3600))
    first = checks.next_due()
    assert first is not None and abs((first - earliest).total_seconds()) <= 1, (first, earliest)
    # and each check, run at its second (no sweep, no event in between), judges on SageMaker's trials
    fired: list[Any] = []
    while (due := checks.next_due()) is not None and not stops and len(fired) < 5:
        world.amt.advance((due - world.amt.clock.now()).total_seconds())
        _deliver_tuning_events(world)
        [(at, _)] = checks.due(world.amt.clock.now())
        fired.append(at)
        budget_check.handler(
            {CHECK_KEY: {"job": "late-team", "at": at.isoformat()}},
            FakeLambdaContext("budget-check"),
            services=world.env.services,
        )
    # Then the job is stopped at the team's real crossing (billing from STARTUP_S), before the next sweep
    crossing = created + timedelta(seconds=STARTUP_S + float(Decimal(20) / burn * 3600))
    assert stops == ["late-team"], fired
    assert fired[0] == first and abs((fired[-1] - crossing).total_seconds()) <= 2, (fired, crossing)
    assert fired[-1] < created + timedelta(seconds=60) + SWEEP_EVERY
