"""One-time budget checks at a job's projected crossing: the EventBridge Scheduler adapter on moto, and the
check itself through the real handlers on the AMT stand-in."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

import budget_check
from governor_client.simulator.runner import FakeLambdaContext
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import HOURLY, LongTrials, big_job, deliver, spent
from tests.integration.test_governance import decisions, record_stop_calls, status, use_policy
from tuning_governor.adapters.checks import PendingChecks, SchedulerChecks, schedule_name
from tuning_governor.app.checks.budget import run_budget_check
from tuning_governor.ports import CHECK_KEY

REGION = "us-east-1"
FAKE_FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:governor-budget-check"
FAKE_ROLE = "arn:aws:iam::123456789012:role/governor-scheduler"
P3_8X = "ml.p3.8xlarge"


# -- the EventBridge Scheduler adapter --------------------------------------------------------------------
def test_a_jobs_check_is_one_schedule_created_then_moved(mocked_aws: None) -> None:
    client = boto3.client("scheduler", region_name=REGION)
    client.create_schedule_group(Name="governor-budget-checks")
    checks = SchedulerChecks(
        lambda: boto3.client("scheduler", region_name=REGION),
        group="governor-budget-checks",
        target_arn=FAKE_FUNCTION,
        role_arn=FAKE_ROLE,
    )
    first = datetime(2026, 11, 30, 9, 17, tzinfo=UTC)
    checks.schedule("big-job", "Big-Job", first)
    # A later estimate replaces the schedule (ConflictException on create -> update), never adds one
    checks.schedule("big-job", "Big-Job", first + timedelta(minutes=3))
    [listed] = client.list_schedules(GroupName="governor-budget-checks")["Schedules"]
    assert listed["Name"] == schedule_name("big-job") == "budget-big-job"
    schedule = client.get_schedule(GroupName="governor-budget-checks", Name="budget-big-job")
    # Scheduler invokes within the minute it is given (60 s precision): the minute before, so the check
    # runs by the exact time its input carries, and waits for it there
    assert schedule["ScheduleExpression"] == "at(2026-11-30T09:19:00)"
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    target = schedule["Target"]
    assert (target["Arn"], target["RoleArn"]) == (FAKE_FUNCTION, FAKE_ROLE)
    assert json.loads(target["Input"]) == {CHECK_KEY: {"job": "Big-Job", "at": "2026-11-30T09:20:00+00:00"}}


def test_a_check_is_invoked_in_the_minute_before_its_second_and_carries_that_second(mocked_aws: None) -> None:
    client = boto3.client("scheduler", region_name=REGION)
    client.create_schedule_group(Name="governor-budget-checks")
    checks = SchedulerChecks(client, group="governor-budget-checks", target_arn=FAKE_FUNCTION, role_arn=FAKE_ROLE)
    # Given a crossing at 09:20:37.4
    checks.schedule("big-job", "Big-Job", datetime(2026, 11, 30, 9, 20, 37, 400_000, tzinfo=UTC))
    schedule = client.get_schedule(GroupName="governor-budget-checks", Name="budget-big-job")
    # Then Scheduler fires between 09:19:00 and 09:19:59 (never after the crossing), and the check is for
    # 09:20:38 (the second at or after it)
    assert schedule["ScheduleExpression"] == "at(2026-11-30T09:19:00)"
    assert json.loads(schedule["Target"]["Input"])[CHECK_KEY]["at"] == "2026-11-30T09:20:38+00:00"


def test_a_check_invoked_early_waits_for_its_second_and_one_late_or_unmarked_does_not(world: World) -> None:
    slept: list[float] = []
    now = world.env.services.clock()
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("big-job"))
    for at, waited in ((now + timedelta(seconds=41.5), [41.5]), (now - timedelta(seconds=3), []), (None, [])):
        slept.clear()
        body: dict[str, Any] = {"job": "big-job"} | ({"at": at.isoformat()} if at else {})
        run_budget_check({CHECK_KEY: body}, world.env.services, sleep=slept.append)
        assert slept == waited, (at, slept)


def test_the_pending_checks_keep_the_latest_per_job_and_hand_them_out_in_time_order() -> None:
    checks = PendingChecks()
    t0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    checks.schedule("a", "A", t0 + timedelta(minutes=9))
    checks.schedule("b", "B", t0 + timedelta(minutes=4))
    checks.schedule("a", "A", t0 + timedelta(minutes=2))  # moved earlier: a trial started
    assert checks.next_due() == t0 + timedelta(minutes=2)
    assert checks.due(t0 + timedelta(minutes=1)) == []
    assert checks.due(t0 + timedelta(minutes=5)) == [(t0 + timedelta(minutes=2), "a"), (t0 + timedelta(minutes=4), "b")]
    assert checks.next_due() is None


# -- the check, end to end ----------------------------------------------------------------------------------
pytestmark = pytest.mark.usefixtures("roomy_quota")


def check(world: World, job: str) -> dict[str, Any]:
    result: dict[str, Any] = budget_check.handler(
        {CHECK_KEY: {"job": job}}, FakeLambdaContext("budget-check"), services=world.env.services
    )
    return result


def test_the_check_at_the_projected_crossing_stops_the_job_with_no_sweep_and_no_event(world: World) -> None:
    # Given the job ($50 budget, 4 parallel trials of 8 x ml.p3.8xlarge, 3 h) and no sweep at all
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, "mode: enforce\n")
    stops = record_stop_calls(world)
    checks = PendingChecks()
    world.env.services.checks = checks
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("big-job", tags={"governance:budget-usd": "50"}))
    store = world.env.services.store
    # When its trials start, each running-trial event moves the job's one check to the new crossing
    while len((store.get_job("big-job") or {}).get("running") or {}) < 4:
        world.amt.advance(5)
        for event in world.amt.drain_events():
            deliver(world, event)
    due = checks.next_due()
    assert due is not None and due.microsecond == 0  # to the second, not rounded up to the minute
    assert (store.get_job("big-job") or {})["budget_check_at"] == due.isoformat(timespec="milliseconds")
    # and no decision yet: the spend so far, plus what a stop bills, is under the budget
    assert stops == []
    # When the clock reaches the check (the trials' progress events move it no further: the burn is the
    # same) and it fires
    while (due := checks.next_due()) is not None and world.amt.clock.now() < due:
        world.amt.advance(min(5.0, (due - world.amt.clock.now()).total_seconds()))
        for event in world.amt.drain_events():
            deliver(world, event)
    assert due is not None and stops == []
    assert checks.due(world.amt.clock.now()) == [(due, "big-job")]
    result = check(world, "big-job")
    # Then the job is stopped by the check, with the bill at the stop's end near the budget, not a sweep later
    assert [(d["rule"], d["verdict"], d["action"]) for d in result["decisions"]] == [("budget", "breach", "stopped")]
    assert stops == ["big-job"]
    total, _, _ = spent(world, "big-job", due)
    burn = 4 * 8 * HOURLY
    at_stop = total + burn * 120 / 3600
    # the check comes at the second of the crossing (to the second, rounded up): within 2 s of burn
    assert Decimal(50) <= at_stop <= Decimal(50) + burn * 2 / 3600, (at_stop, burn)
    [breach] = [d for d in decisions(world, "big-job") if d["sk"] == "DECISION#budget#breach"]
    assert Decimal(str(breach["numbers"]["at_stop_usd"])) >= 50
    world.amt.advance(180)
    world.amt.drain_events()
    assert status(world, "big-job") in {"Stopping", "Stopped"}


def test_a_check_after_the_job_ended_or_under_its_budget_decides_nothing(world: World) -> None:
    world.amt.engine.behaviour = LongTrials(hours=1)
    use_policy(world, "mode: enforce\n")
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **big_job("small-job", max_parallel=1, max_jobs=1, tags={"governance:budget-usd": "100000"})
    )
    world.pump(600)
    assert check(world, "small-job") == {"outcome": "checked", "job": "small-job", "decisions": []}
    for _ in range(90):
        world.pump(60)
    assert status(world, "small-job") == "Completed"
    assert check(world, "small-job")["decisions"] == []
    assert stops == []


@pytest.mark.parametrize(
    "event",
    [
        {},
        {CHECK_KEY: None},
        {CHECK_KEY: {"job": ""}},
        {CHECK_KEY: {"job": "not a job name!"}},
        {CHECK_KEY: {"job": "x" * 33}},
        {"source": "aws.scheduler"},
    ],
)
def test_a_malformed_check_is_rejected_with_a_reason_never_retried(world: World, event: dict[str, Any]) -> None:
    result = budget_check.handler(event, FakeLambdaContext("budget-check"), services=world.env.services)
    assert result["outcome"] == "rejected"
    assert result["reason"].startswith("not a budget check")


def test_a_check_that_cannot_be_scheduled_never_fails_the_event_that_asked_for_it(world: World) -> None:
    # Given a scheduler that refuses every schedule (as AWS does for a group deleted by hand)
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, "mode: enforce\n")
    client = boto3.client("scheduler", region_name=REGION)
    refused: list[str] = []

    def refuse(params: dict[str, Any], **_: Any) -> None:
        refused.append(params["Name"])
        error = {
            "Error": {"Code": "ResourceNotFoundException", "Message": "Schedule group no-such-group does not exist."}
        }
        raise ClientError(error, "CreateSchedule")  # type: ignore[arg-type]

    client.meta.events.register("provide-client-params.scheduler.CreateSchedule", refuse)
    world.env.services.checks = SchedulerChecks(
        client, group="no-such-group", target_arn=FAKE_FUNCTION, role_arn=FAKE_ROLE
    )
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("big-job", tags={"governance:budget-usd": "50"}))
    store = world.env.services.store
    # When the trials start, each judgement asks for a check and is refused
    while len((store.get_job("big-job") or {}).get("running") or {}) < 4:
        world.amt.advance(5)
        for event in world.amt.drain_events():
            deliver(world, event)  # asserts no event failed
    # Then no check is remembered as scheduled, so each judgement asks again (the sweep still judges)
    assert len(refused) >= 4
    assert "budget_check_at" not in (store.get_job("big-job") or {})
