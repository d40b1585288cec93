"""Issue 18, finding 8: a report channel that cannot deliver never delays a decision or a stop.

Through the real handlers on the AMT stand-in: the default Slack webhook answers 404 to every post
(Slack's answer for a revoked webhook; as for a team's missing secret, the channel fails at once) while a job that was warned about its budget runs past its runtime
cap. The stop must come at the cap, the warning's report goes out once Slack is back (the sweep's
delivery step), and each report reaches Slack exactly once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from governor_client.simulator.runner import deliver_event
from tests.integration.conftest import T0, World
from tests.integration.test_accrued_budgets import P3_8X, LongTrials, big_job, run_sweep
from tests.integration.test_governance import decisions, record_stop_calls, use_policy

#: Redeliveries of a failed event in this test (EventBridge goes on for up to 24 h; a few are enough
#: to show what a retry does, and keep the test short).
RETRIES = 3


def run_until(world: World, until: datetime, *, sweep_every: int = 5) -> list[dict[str, Any]]:
    """A minute at a time: every event delivered, an event that fails redelivered the next minute (as
    EventBridge retries it), the sweep every ``sweep_every`` minutes. Returns the failed deliveries."""
    minute, retry, failed = 0, [], []
    tries: dict[str, int] = {}
    while world.amt.clock.now() < until:
        world.amt.advance(60)
        minute += 1
        events, retry = [*retry, *world.amt.drain_events()], []
        for event in events:
            outcome = deliver_event(event, world.env.services).outcome
            if outcome.get("outcome") == "error":
                failed.append(outcome)
                tries[event["id"]] = tries.get(event["id"], 0) + 1
                if tries[event["id"]] < RETRIES:
                    retry.append(event)
        if minute % sweep_every == 0:
            run_sweep(world)
    return failed


def kinds(world: World, job: str) -> list[tuple[str, str, str, str]]:
    return sorted((d["rule"], d["verdict"], str(d.get("action")), str(d.get("state"))) for d in decisions(world, job))


def slack_texts(world: World) -> list[str]:
    return [str(m.get("text")) for m in world.slack.messages]


def test_a_slack_outage_delays_neither_the_runtime_stop_nor_loses_the_warning(world: World) -> None:
    # Given an enforced 90-minute runtime cap and a $1,000 budget the job's projection goes over
    # (a warning at its first finished trials, 30 minutes in), and the default Slack down throughout
    world.amt.set_applied_quota(P3_8X, 1000)
    use_policy(world, "mode: enforce\ndefaults: {max_runtime_hours: 1.5, job_budget_usd: 1000}\n")
    stops = record_stop_calls(world)
    world.amt.engine.behaviour = LongTrials(hours=0.5)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("capped", max_parallel=4, max_jobs=40))
    world.slack.fail_at_rate(1.0, statuses=(404,))
    # When it runs for 100 minutes with the sweep every 5 minutes
    run_until(world, T0 + timedelta(minutes=100))
    # Then the runtime cap stopped it at 90-95 minutes (the first sweep past the cap), whatever Slack did
    assert stops == ["capped"], kinds(world, "capped")
    runtime = [d for d in decisions(world, "capped") if d["rule"] == "runtime"]
    assert len(runtime) == 1 and runtime[0]["action"] == "stopped"
    stopped_at = datetime.fromisoformat(str(runtime[0]["at"]))
    assert stopped_at - T0 <= timedelta(minutes=96), stopped_at
    print(f"runtime stop decided {stopped_at - T0} after the job started, Slack down")
    assert not world.slack.messages
    # and once Slack is back, the sweep's delivery step sends every report left pending, once each
    world.slack.fail_at_rate(0)
    run_until(world, T0 + timedelta(minutes=130))
    texts = slack_texts(world)
    assert len([t for t in texts if "Warning for capped" in t]) == 1, texts
    assert len([t for t in texts if "STOPPED capped" in t]) == 1, texts
    assert all(state == "done" for *_, state in kinds(world, "capped")), kinds(world, "capped")
    # and a second hour of sweeps sends nothing again
    before = len(world.slack.messages)
    run_until(world, T0 + timedelta(minutes=160))
    assert len(world.slack.messages) - before <= 1  # at most the job's summary report
