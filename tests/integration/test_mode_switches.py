"""Switching the policy's mode (issue 18, finding 7), through the real handlers, the policy read from its
SSM parameter as deployed: a job already past its budget while the policy was monitor is stopped at the
first judgement (event, one-time check or sweep) after the switch to enforce; the reverse (enforce ->
monitor) never stops. One test walks the README's rollout steps."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import SSMProvider

import budget_check
from governor_client.__main__ import main
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import P3_8X, LongTrials, big_job, run_sweep
from tests.integration.test_governance import decisions, record_stop_calls
from tuning_governor.app.wiring import policy_loader
from tuning_governor.policy import policy_source
from tuning_governor.ports import CHECK_KEY

PARAMETER = "/tuning-governor/policy"
MAX_AGE = 300  # POLICY_MAX_AGE: the functions pick a new policy up within this many seconds
MONITOR = "mode: monitor\n"
ENFORCE = "mode: enforce\n"


def deploy_policy(world: World, text: str) -> Callable[[str], None]:
    """The policy in its SSM parameter, read by the functions as deployed (re-read every MAX_AGE seconds
    of the world's clock); returns how to put a new text there."""
    ssm = boto3.client("ssm", region_name="us-east-1")

    def put(value: str) -> None:
        ssm.put_parameter(Name=PARAMETER, Value=value, Type="String", Overwrite=True)

    put(text)
    source = policy_source(
        parameter=PARAMETER,
        ssm=SSMProvider(boto3_client=ssm),
        max_age_seconds=MAX_AGE,
        clock=lambda: world.amt.clock.now().timestamp(),
    )
    world.env.services.policy = policy_loader(source)
    return put


def run(world: World, minutes: int, log: list[dict[str, Any]] | None = None) -> None:
    """``minutes`` of the world as deployed: every event delivered, a sweep every 5 minutes."""
    for _ in range(minutes):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            if log is not None:
                log.append(event)
            assert deliver_event(event, world.env.services).outcome.get("outcome") != "error"
        if world.amt.clock.now().minute % 5 == 0:
            assert run_sweep(world)["errors"] == []


def breach_rows(world: World, job: str) -> dict[str, dict[str, Any]]:
    return {d["sk"]: d for d in decisions(world, job) if d["sk"].startswith("DECISION#budget#")}


def over_budget_in_monitor(world: World) -> list[str]:
    """The issue's job ($50 budget; 4 parallel trials of 8 x ml.p3.8xlarge, 3 h) run in monitor mode
    until it is past its budget and the breach is recorded as would-stop."""
    world.amt.set_applied_quota(P3_8X, 1000)
    world.amt.engine.behaviour = LongTrials()
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("big-job", tags={"governance:budget-usd": "50"}))
    for _ in range(60):
        run(world, 1)
        if "DECISION#budget#breach" in breach_rows(world, "big-job"):
            break
    assert breach_rows(world, "big-job")["DECISION#budget#breach"]["action"] == "would-stop"
    assert stops == []
    return stops


@pytest.mark.parametrize("judgement", ["event", "check", "sweep"])
def test_a_job_past_its_budget_in_monitor_is_stopped_at_the_first_judgement_under_enforce(
    world: World, judgement: str
) -> None:
    # Given a job past its budget while the policy was monitor (would-stop recorded, nothing stopped)
    put = deploy_policy(world, MONITOR)
    stops = over_budget_in_monitor(world)
    # When the parameter says enforce and the functions have picked it up (MAX_AGE later, no event between)
    put(ENFORCE)
    world.amt.advance(MAX_AGE)
    world.amt.drain_events()  # delivered by no one: the judgement below is the first after the switch
    if judgement == "event":
        events: list[dict[str, Any]] = []
        while not events:  # the trials train in silence: the next event is the first trial's end
            world.amt.advance(60)
            events = world.amt.drain_events()
        deliver_event(events[0], world.env.services)
    elif judgement == "check":
        budget_check.handler({CHECK_KEY: {"job": "big-job"}}, FakeLambdaContext("check"), services=world.env.services)
    else:
        run_sweep(world)
    # Then that judgement stops the job, once, and says it re-judged the monitor-mode decision
    assert stops == ["big-job"]
    enforced = breach_rows(world, "big-job")["DECISION#budget#enforced"]
    assert (enforced["mode"], enforced["action"]) == ("enforce", "stopped")
    assert "monitor mode" in enforced["message"]
    run(world, 10)
    run_sweep(world)
    assert stops == ["big-job"]


def test_a_grace_notice_given_under_enforce_never_stops_once_the_policy_is_monitor(world: World) -> None:
    # Given a job whose budget breach got a 30-minute notice under enforce ("will stop at T")
    grace = "defaults: {grace_minutes: {budget: 30}}\n"
    put = deploy_policy(world, ENFORCE + grace)
    world.amt.set_applied_quota(P3_8X, 1000)
    world.amt.engine.behaviour = LongTrials()
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("big-job", tags={"governance:budget-usd": "50"}))
    for _ in range(60):
        run(world, 1)
        if "DECISION#budget#grace" in breach_rows(world, "big-job"):
            break
    assert breach_rows(world, "big-job")["DECISION#budget#grace"]["action"] == "grace"
    # When the policy goes back to monitor before T, and T passes with events, checks and sweeps
    put(MONITOR + grace)
    for _ in range(6):
        run(world, 10)
        run_sweep(world)
        budget_check.handler({CHECK_KEY: {"job": "big-job"}}, FakeLambdaContext("check"), services=world.env.services)
    # Then nothing is stopped: the breach is recorded as would-stop
    assert stops == []
    assert breach_rows(world, "big-job")["DECISION#budget#breach"]["action"] == "would-stop"
    assert "DECISION#budget#enforced" not in breach_rows(world, "big-job")


def test_the_readmes_rollout_steps_do_what_they_say(world: World, tmp_path: Path) -> None:
    # 1. Deploy in monitor mode: every decision recorded and reported as would stop, nothing stopped; a
    # job runs to its end past its budget (its events captured), another is past its budget and running
    put = deploy_policy(world, MONITOR)
    log: list[dict[str, Any]] = []
    world.amt.engine.behaviour = LongTrials(hours=1)
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **big_job("past-job", max_parallel=1, max_jobs=1, tags={"governance:budget-usd": "50"})
    )
    run(world, 90, log)
    assert breach_rows(world, "past-job")["DECISION#budget#breach"]["action"] == "would-stop"
    stops = over_budget_in_monitor(world)
    # 2. Replay what the account did under the candidate policy: it would have stopped the past job
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e, default=str) + "\n" for e in log))
    candidate = tmp_path / "candidate.yaml"
    candidate.write_text(ENFORCE)
    out = tmp_path / "result.json"
    assert main(["replay", str(events), "--policy", str(candidate), "--out", str(out)]) == 0
    actions = json.loads(out.read_text())["actions"]
    assert [(a["job"], a["action"], a["rule"]) for a in actions] == [("past-job", "stop", "budget")]
    # 3. Check the policy before it goes live: exit 0
    assert main(["validate", str(candidate)]) == 0
    # 4. Put it in the parameter with mode: enforce; within POLICY_MAX_AGE the functions pick it up, and
    # the job already past its budget is stopped at the next judgement
    put(candidate.read_text())
    run(world, MAX_AGE // 60 + 1)
    assert stops == ["big-job"]
