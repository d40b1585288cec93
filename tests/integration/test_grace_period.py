"""Grace periods (``defaults.grace_minutes``): the first breach is a notice, the stop comes at its time if
the breach still holds. Through the real handlers on the AMT stand-in, with the one-time checks."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import build_environment
from governor_client.offline.slack_server import SlackWebhookServer
from tests.integration.conftest import T0, World
from tests.integration.test_accrued_budgets import LongTrials, big_job, deliver, run_sweep
from tests.integration.test_budget_checks import P3_8X, check
from tests.integration.test_governance import decisions, record_stop_calls, use_policy
from tuning_governor.adapters.checks import PendingChecks

GRACE = timedelta(minutes=30)


pytestmark = pytest.mark.usefixtures("roomy_quota")


def run_until(world: World, checks: PendingChecks, until: datetime) -> list[dict[str, Any]]:
    """Advance a minute at a time to ``until``, delivering every event and running each one-time check
    when it is due (as EventBridge Scheduler would); the checks' results, in order."""
    results: list[dict[str, Any]] = []
    while world.amt.clock.now() < until:
        world.amt.advance(60)
        for event in world.amt.drain_events():
            deliver(world, event)
        for _, key in checks.due(world.amt.clock.now()):
            results.append(check(world, key))
    return results


def kinds(world: World, job: str) -> list[tuple[str, str, str]]:
    return sorted((d["rule"], d["verdict"], str(d.get("action"))) for d in decisions(world, job))


def budget_job(world: World, name: str, **tags: str) -> None:
    world.amt.engine.behaviour = LongTrials()
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job(name, tags={"governance:budget-usd": "50", **tags}))


def notice_of(world: World, job: str) -> dict[str, Any]:
    [notice] = [d for d in decisions(world, job) if d["verdict"] == "grace"]
    return notice


def test_a_budget_breach_is_noticed_first_and_the_job_stopped_at_the_notice_time(world: World) -> None:
    # Given a $50 budget with 30 minutes of grace, enforced, and the one-time checks running
    use_policy(world, "mode: enforce\ndefaults: {grace_minutes: {budget: 30}}\n")
    stops = record_stop_calls(world)
    checks = PendingChecks()
    world.env.services.checks = checks
    budget_job(world, "graced", owner="alice")
    # When the spend crosses the budget (about 4 minutes in: 4 x 8 x $14.688/h)
    run_until(world, checks, T0 + timedelta(minutes=10))
    # Then the job is not stopped: a notice is recorded and reported once, naming the stop time
    assert stops == []
    assert kinds(world, "graced") == [("budget", "grace", "grace")]
    notice = notice_of(world, "graced")
    noticed_at = datetime.fromisoformat(str(notice["at"]))
    stop_at = datetime.fromisoformat(str(notice["numbers"]["stop_at"]))
    assert stop_at - noticed_at == GRACE
    assert notice["numbers"]["grace_minutes"] == 30
    assert notice["numbers"]["at_stop_usd"] >= 50 > notice["numbers"]["spent_usd"]  # the breach's own figures
    assert "unless its budget is raised (tag governance:budget-usd" in notice["message"]
    sns = [m for m in world.env.sns_messages() if m["MessageAttributes"]["outcome"]["Value"] == "grace"]
    assert len(sns) == 1
    assert f"will be stopped at {notice['numbers']['stop_at']}" in sns[0]["Subject"] + sns[0]["Message"]
    assert len([m for m in world.slack.messages if "will be stopped at" in m["text"]]) == 1
    # and the one check asked for is the notice's time (rounded up to the minute)
    assert checks.next_due() is not None
    assert stop_at <= checks.next_due() < stop_at + timedelta(minutes=1)  # type: ignore[operator]
    # When trial events and sweeps come before that time, nothing more happens
    run_sweep(world)
    run_until(world, checks, stop_at - timedelta(minutes=2))
    assert stops == [] and kinds(world, "graced") == [("budget", "grace", "grace")]
    # When the check at the notice's time runs, the breach still holds: the job is stopped, once
    results = run_until(world, checks, stop_at + timedelta(minutes=2))
    assert [(d["rule"], d["verdict"], d["action"]) for r in results for d in r["decisions"]] == [
        ("budget", "breach", "stopped")
    ]
    assert stops == ["graced"]
    [breach] = [d for d in decisions(world, "graced") if d["verdict"] == "breach"]
    assert breach["numbers"]["grace_stop_at"] == notice["numbers"]["stop_at"]
    assert datetime.fromisoformat(str(breach["at"])) >= stop_at
    run_sweep(world)
    assert stops == ["graced"]
    assert len([m for m in world.env.sns_messages() if m["MessageAttributes"]["outcome"]["Value"] == "grace"]) == 1


def test_a_breach_that_clears_before_the_notice_time_stops_nothing(world: World) -> None:
    # Given the same job, noticed
    stops = record_stop_calls(world)
    checks = PendingChecks()
    world.env.services.checks = checks
    world.amt.engine.behaviour = LongTrials()
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("raised", tags={}))
    use_policy(world, "mode: enforce\ndefaults: {job_budget_usd: 50, grace_minutes: {budget: 30}}\n")
    run_until(world, checks, T0 + timedelta(minutes=10))
    stop_at = datetime.fromisoformat(str(notice_of(world, "raised")["numbers"]["stop_at"]))
    # When the owner's budget is raised in the policy before that time
    use_policy(world, "mode: enforce\ndefaults: {job_budget_usd: 5000, grace_minutes: {budget: 30}}\n")
    # Then neither the check at the notice's time nor the sweeps after it stop the job
    run_until(world, checks, stop_at + timedelta(minutes=5))
    run_sweep(world)
    assert stops == []
    assert kinds(world, "raised") == [("budget", "grace", "grace")]


def test_an_exempt_job_gets_no_notice_and_its_breach_is_recorded_as_exempt_at_once(world: World) -> None:
    use_policy(world, "mode: enforce\ndefaults: {grace_minutes: {budget: 30}}\n")
    stops = record_stop_calls(world)
    checks = PendingChecks()
    world.env.services.checks = checks
    budget_job(world, "exempt-job", **{"governance:exempt": "true"})
    run_until(world, checks, T0 + timedelta(minutes=10))
    assert stops == []
    assert kinds(world, "exempt-job") == [("budget", "breach", "exempt")]


def test_in_monitor_mode_the_notice_says_would_and_the_grace_ends_in_would_stop(world: World) -> None:
    use_policy(world, "mode: monitor\ndefaults: {grace_minutes: {budget: 30}}\n")
    stops = record_stop_calls(world)
    checks = PendingChecks()
    world.env.services.checks = checks
    budget_job(world, "watched")
    run_until(world, checks, T0 + timedelta(minutes=10))
    notice = notice_of(world, "watched")
    assert notice["action_detail"].startswith("monitor mode: would stop at ")
    assert any("would be stopped at" in m["Subject"] for m in world.env.sns_messages())
    run_until(world, checks, datetime.fromisoformat(str(notice["numbers"]["stop_at"])) + timedelta(minutes=2))
    assert stops == []
    assert kinds(world, "watched") == [("budget", "breach", "would-stop"), ("budget", "grace", "grace")]


def test_the_sweep_stops_a_runtime_breach_after_its_grace_without_any_check(
    mocked_aws: None, slack: SlackWebhookServer
) -> None:
    # Given a 1-hour runtime cap with 20 minutes of grace, sweeps every 5 minutes and no one-time checks
    clock = VirtualClock(T0)
    with AmtStandIn(clock=clock, seed=7) as amt:
        world = World(amt=amt, env=build_environment(slack_url=slack.url, clock=clock.now), slack=slack, deliveries=[])
        world.amt.set_applied_quota(P3_8X, 1000)
        use_policy(world, "mode: enforce\ndefaults: {max_runtime_hours: 1, grace_minutes: {runtime: 20}}\n")
        stops = record_stop_calls(world)
        world.amt.engine.behaviour = LongTrials()
        world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("long-runner"))
        stopped_at = None
        for minute in range(1, 120):
            world.amt.advance(60)
            for event in world.amt.drain_events():
                deliver(world, event)
            if minute % 5 == 0:
                run_sweep(world)
            if stops and stopped_at is None:
                stopped_at = minute
        # Then the first sweep at or after 60 minutes notices, the first at or after 60 + 20 stops
        notice = notice_of(world, "long-runner")
        assert notice["numbers"]["runtime_seconds"] >= 3600
        assert stops == ["long-runner"]
        assert stopped_at is not None and 80 <= stopped_at < 85
        assert kinds(world, "long-runner") == [("runtime", "breach", "stopped"), ("runtime", "grace", "grace")]
