"""A team-month projection warning is a decision of the job whose judgement crossed it (issue 17,
mechanism 11): it is in that job's ``decisions`` (its table item), once per team and month, as
docs/reference/replay.md says decisions hold every decision the rules made. Through the real handlers on the
AMT stand-in."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from governor_client.replay.run import replay_lines
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import SWEEP_EVERY, LongTrials, big_job, deliver, mid_month, run_sweep
from tests.integration.test_governance import decisions, use_policy
from tuning_governor.policy import parse_policy

__all__ = ["mid_month"]  # the fixture: a world on 10 November


POLICY = "mode: enforce\nteams:\n  nlp: {monthly_budget_usd: 300}\n"


def run_for(world: World, minutes: int, log: list[dict[str, Any]]) -> None:
    start = world.amt.clock.now()
    while world.amt.clock.now() - start < timedelta(minutes=minutes):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            log.append(event)
            deliver(world, event)
        if (world.amt.clock.now() - start) % SWEEP_EVERY == timedelta(0):
            run_sweep(world)


def team_warnings(world: World, job: str) -> list[dict[str, object]]:
    return [d for d in decisions(world, job) if (d["rule"], d["verdict"]) == ("team-budget", "warning")]


def test_the_team_month_warning_is_a_decision_of_the_job_that_crossed_it_once(mid_month: World) -> None:
    world = mid_month
    # Given team nlp with $300 for November, and on 10 November a job whose pace projects past it
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, POLICY)
    log: list[dict[str, Any]] = []
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("nlp-first", max_parallel=2, max_jobs=2))
    # When its trials run and are swept (the month's spend stays under $300)
    run_for(world, 30, log)
    team = {d["sk"]: d for d in world.env.services.store.team_decisions("nlp")}
    assert "DECISION#team-budget#breach#2026-11" not in team
    warning = team["DECISION#team-budget#warning#2026-11"]
    # Then the warning is in the crossing job's decisions, with the team decision's figures, once
    [recorded] = team_warnings(world, "nlp-first")
    assert warning["job_key"] == "nlp-first"
    assert recorded["action"] == "warned"
    assert recorded["mode"] == "enforce"
    assert recorded["numbers"] == warning["numbers"]
    assert recorded["at"] == warning["at"]
    # When another nlp job runs later in the month and more sweeps pass
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("nlp-second", max_parallel=1, max_jobs=1))
    run_for(world, 10, log)
    # Then the warning stays one decision of the first job, none of the second (once per team-month)
    assert len(team_warnings(world, "nlp-first")) == 1
    assert team_warnings(world, "nlp-second") == []
    # and the team's one warning report went out once per channel (the job decision adds none)
    subjects = [m["Subject"] for m in world.env.sns_messages() if "team-budget" in m["Subject"]]
    assert len(subjects) == 1
    # and a replay of the same events records the team's one warning as one decision of the job whose
    # judgement crossed it there (the job its team report names: the replay's sweeps run on its own
    # schedule, so the crossing judgement may be another job's)
    result = replay_lines([json.dumps(e) for e in log], parse_policy(POLICY, "test"))
    warned = [
        name
        for name, job in result.jobs.items()
        for d in job.decisions
        if (d.rule, d.verdict, d.action) == ("team-budget", "warning", "warned")
    ]
    reported = {n.job for n in result.notifications if n.kind == "decision-team-budget-warning-2026-11"}
    assert len(warned) == 1
    assert reported == set(warned)
