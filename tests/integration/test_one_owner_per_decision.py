"""One owner per decision under concurrent invocations (issue 18, findings 3 and 4).

Real handler invocations in threads against one store applying one request at a time (moto behind a
lock, as AWS applies each request atomically; ``MemoryStore``'s methods under its own lock). Where the
race needs a precise interleaving, the first caller is held inside its outside call (the Stop, the
report) until the other caller has finished: what the other does meanwhile is the finding.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import budget_check
import training_events
from governor_client.memory import MemoryStore
from governor_client.simulator.runner import FakeLambdaContext
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import LongTrials, big_job, deliver, mid_month  # noqa: F401 - fixture
from tests.integration.test_exactly_once import OneFault
from tests.integration.test_governance import record_stop_calls, use_policy
from tuning_governor.adapters.checks import PendingChecks
from tuning_governor.ports import CHECK_KEY

P3_8X = "ml.p3.8xlarge"


class HeldFirstCall:
    """Holds the first caller of an outside call until ``release()`` (or 20 s), counting every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.entered = threading.Event()
        self.released = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, name: str) -> None:
        with self._lock:
            self.calls.append(name)
            first = len(self.calls) == 1
        if first:
            self.entered.set()
            self.released.wait(20)

    def release(self) -> None:
        self.released.set()


def _job_at_its_budget_check(world: World, store: str) -> PendingChecks:
    """The $50 job of 4 x 8 ml.p3.8xlarge trials run until its one-time budget check is due."""
    world.amt.set_applied_quota(P3_8X, 1000)
    world.amt.engine.behaviour = LongTrials()
    if store == "memory":
        world.env.services.store = MemoryStore()
    use_policy(world, "mode: enforce\n")
    checks = PendingChecks()
    world.env.services.checks = checks
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("big-job", tags={"governance:budget-usd": "50"}))
    while len((world.env.services.store.get_job("big-job") or {}).get("running") or {}) < 4:
        world.amt.advance(5)
        for event in world.amt.drain_events():
            deliver(world, event)
    while (due := checks.next_due()) is not None and world.amt.clock.now() < due:
        world.amt.advance(min(5.0, (due - world.amt.clock.now()).total_seconds()))
        for event in world.amt.drain_events():
            deliver(world, event)
    return checks


@pytest.mark.usefixtures("atomic_moto_requests")
@pytest.mark.parametrize("store", ["moto", "memory"])
def test_a_budget_check_delivered_twice_at_once_stops_its_job_once(world: World, store: str) -> None:
    # Given the job at its one-time budget check, over its budget, in enforce mode
    _job_at_its_budget_check(world, store)
    held = HeldFirstCall()
    world.env.sagemaker.meta.events.register(
        "provide-client-params.sagemaker.StopHyperParameterTuningJob",
        lambda params, **_: held(params["HyperParameterTuningJobName"]),
    )
    sns_before = len(world.env.sns_messages())

    def check() -> dict[str, Any]:
        result: dict[str, Any] = budget_check.handler(
            {CHECK_KEY: {"job": "big-job"}}, FakeLambdaContext("budget-check"), services=world.env.services
        )
        return result

    # When the scheduler delivers the check twice at once: the second arrives while the first is
    # inside its Stop call
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(check)
        assert held.entered.wait(20), "the first check never called Stop"
        second = pool.submit(check)
        try:
            second.result(timeout=20)
        finally:
            held.release()
        first.result(timeout=20)

    # Then one decision, one Stop call, one report per channel
    decisions = world.env.services.store.decisions("big-job")
    assert [(d["rule"], d["verdict"], d["action"], d["state"]) for d in decisions] == [
        ("budget", "breach", "stopped", "done")
    ]
    assert held.calls == ["big-job"]
    assert len(world.env.sns_messages()) - sns_before == 1


def _team_over_its_month(world: World, store: str) -> dict[str, dict[str, Any]]:
    """Team nlp's two jobs (nlp-a, nlp-b) run 40 minutes (about $310 accrued), then its month is $100:
    a status event of a running trial of each job, sent now, for the test to deliver."""
    world.amt.engine.behaviour = LongTrials()
    if store == "memory":
        world.env.services.store = MemoryStore()
    use_policy(world, "mode: enforce\n")
    for name in ("nlp-a", "nlp-b"):
        world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job(name, max_parallel=2, max_jobs=2))
    progress: dict[str, dict[str, Any]] = {}
    for _ in range(40):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            deliver(world, event)
            detail = event["detail"]
            if detail.get("TrainingJobStatus") == "InProgress" and detail.get("TuningJobArn"):
                progress[str(detail["TuningJobArn"]).rsplit("/", 1)[1]] = event
    assert sorted(progress) == ["nlp-a", "nlp-b"]
    assert world.env.services.store.team_decisions("nlp") == []  # type: ignore[attr-defined]
    use_policy(world, "mode: enforce\nteams:\n  nlp: {monthly_budget_usd: 100}\n")
    now = world.amt.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    return {name: event | {"id": f"progress-{name}", "time": now} for name, event in progress.items()}


def _trial_event(world: World, event: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = training_events.handler(
        event, FakeLambdaContext("training-events"), services=world.env.services
    )
    return result


@pytest.mark.usefixtures("atomic_moto_requests")
@pytest.mark.parametrize("store", ["moto", "memory"])
def test_one_team_breach_found_by_two_jobs_at_once_is_reported_once(request: pytest.FixtureRequest, store: str) -> None:
    # Given team nlp's two jobs running for an hour (about $310 accrued) and then a $100 month
    world: World = request.getfixturevalue("mid_month")
    progress = _team_over_its_month(world, store)
    stops = record_stop_calls(world)
    held = HeldFirstCall()
    sns = world.env.services.notifiers[0]._client  # type: ignore[attr-defined]
    sns.meta.events.register(
        "provide-client-params.sns.Publish",
        lambda params, **_: held(str(params.get("Subject"))) if "team nlp" in str(params.get("Subject")) else None,
    )

    # When a trial event of each job is handled at once: the second while the first is sending the
    # team's report
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(_trial_event, world, progress["nlp-a"])
        assert held.entered.wait(20), "the team's report was never sent"
        second = pool.submit(_trial_event, world, progress["nlp-b"])
        try:
            second.result(timeout=20)
        finally:
            held.release()
        first.result(timeout=20)

    # Then one team decision, each job stopped once, one team report per channel naming both
    [breach] = [d for d in world.env.services.store.team_decisions("nlp") if d["verdict"] == "breach"]  # type: ignore[attr-defined]
    assert breach["state"] == "done"
    assert sorted(stops) == ["nlp-a", "nlp-b"]
    team_sns = [m for m in world.env.sns_messages() if "team nlp" in m["Subject"]]
    team_slack = [m for m in world.slack.messages if "team nlp" in m.get("text", "")]
    assert (len(team_sns), len(team_slack)) == (1, 1)
    assert "nlp-a: stopped" in team_sns[0]["Message"] and "nlp-b: stopped" in team_sns[0]["Message"]


@pytest.mark.parametrize("store", ["moto", "memory"])
def test_a_team_report_failing_on_slack_is_not_sent_again_on_sns_by_the_next_jobs_event(
    request: pytest.FixtureRequest, store: str
) -> None:
    # Given team nlp over its month, and Slack failing the team's report (after the client's retries)
    world: World = request.getfixturevalue("mid_month")
    progress = _team_over_its_month(world, store)
    world.slack.fail_next(500, 500, 500)
    # When a trial event of nlp-a finds the breach (its report fails on Slack: the event does not fail,
    # the team decision stays pending with its lease given back) and then one of nlp-b
    _trial_event(world, progress["nlp-a"])
    _trial_event(world, progress["nlp-b"])
    # Then the team's report is out once on each channel: SNS is not sent again for nlp-b's event
    [breach] = [d for d in world.env.services.store.team_decisions("nlp") if d["verdict"] == "breach"]  # type: ignore[attr-defined]
    assert breach["state"] == "done"
    team_sns = [m for m in world.env.sns_messages() if "team nlp" in m["Subject"]]
    team_slack = [m for m in world.slack.messages if "team nlp" in m.get("text", "")]
    assert (len(team_sns), len(team_slack)) == (1, 1)


def test_a_lease_whose_answer_was_lost_is_taken_again_by_its_own_caller(world: World) -> None:
    # Given the job at its budget check, and the lease on its decision written but the caller seeing
    # a throttling error
    _job_at_its_budget_check(world, "moto")
    stops = record_stop_calls(world)
    fault = OneFault(
        world.env.dynamodb,
        "UpdateItem",
        when="after",
        # The update that sets a lease (names are placeholders in the expression: its names map holds them).
        match=lambda params: "lease_until" in str(params.get("ExpressionAttributeNames")),
    )
    # When the check runs
    result = budget_check.handler(
        {CHECK_KEY: {"job": "big-job"}}, FakeLambdaContext("budget-check"), services=world.env.services
    )
    # Then the same caller takes its own lease again: the job is stopped now, once, not after the lease
    assert fault.fired == 1
    assert [(d["rule"], d["action"]) for d in result["decisions"]] == [("budget", "stopped")]
    assert stops == ["big-job"]
