"""Exactly once under retries: one fault at a chosen boto3 call, then the event redelivered.

Each test injects ONE transient fault through botocore's event hooks on the moto-backed clients,
either before the call reaches the service (``before-call``: nothing happened) or after it succeeded
(``after-call``: it happened, but the caller saw an error), redelivers the failed event as EventBridge
would, and asserts on what users see: stop calls, decision rows, reports on SNS and Slack.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from botocore.exceptions import ClientError

import sweep
from governor_client.amt import DefaultTrialBehaviour
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import LongTrials, big_job, mid_month
from tests.integration.test_governance import P3_2X, decisions, launch_two_teams, record_stop_calls, use_policy
from tuning_governor.adapters.store.keys import CLAIM_TIMEOUT
from tuning_governor.governance.reporting import BOOKKEEPING_ATTEMPTS

TRAINING = "SageMaker Training Job State Change"
__all__ = ["mid_month"]  # a fixture, used by name
TUNING = "SageMaker HyperParameter Tuning Job State Change"


class OneFault:
    """Fail the first ``times`` calls of ``operation`` whose parameters ``match`` with a throttling error.

    ``when="before"``: raised before the request is sent; ``"after"``: raised after the service
    answered successfully (the write or send took effect, the caller sees a failure).
    """

    def __init__(
        self,
        client: Any,
        operation: str,
        *,
        when: str = "before",
        match: Callable[[dict[str, Any]], bool] = lambda _params: True,
        times: int = 1,
    ) -> None:
        self.operation = operation
        self.match = match
        self.times = times
        self.fired = 0
        service = client.meta.service_model.service_id.hyphenize()
        client.meta.events.register(f"provide-client-params.{service}.{operation}", self._mark)
        client.meta.events.register(f"{when}-call.{service}.{operation}", self._fire)

    def _mark(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if self.fired < self.times and self.match(params):
            context["inject_fault"] = True

    def _fire(self, context: dict[str, Any], **_: Any) -> None:
        if context.get("inject_fault") and self.fired < self.times:
            self.fired += 1
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "injected"}}, self.operation)


def decision_key(params: dict[str, Any]) -> bool:
    return str(params.get("Key", {}).get("sk", {}).get("S", "")).startswith("DECISION#")


def run_redelivering(world: World, *, limit: int = 48 * 60) -> list[dict[str, Any]]:
    """Run the stand-in to the end, delivering each event; a failed one is redelivered once, as
    EventBridge retries a failed invocation. Returns the events that failed the first time."""
    failed: list[dict[str, Any]] = []
    for _ in range(limit):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            if deliver_event(event, world.env.services).outcome.get("outcome") == "error":
                failed.append(event)
                assert deliver_event(event, world.env.services).outcome.get("outcome") != "error"
        if world.amt.idle() and not world.amt.events:
            return failed
    raise AssertionError("the stand-in did not go idle")


def reports(world: World, rule: str) -> tuple[int, int]:
    """How many reports of ``rule``'s decision went out on SNS and on Slack."""
    sns = [m for m in world.env.sns_messages() if str(m["Subject"]).endswith(f": {rule}")]
    slack = [m for m in world.slack.messages if str(m.get("text", "")).endswith(f": {rule}")]
    return len(sns), len(slack)


def flaky_job(world: World) -> list[str]:
    """An enforcing policy that stops a job at its first failed trial, and a job whose trials fail."""
    world.amt.engine.behaviour = DefaultTrialBehaviour(seed=3, failure_rate=0.5)
    use_policy(world, "mode: enforce\ndefaults: {max_failed_trials: 1}\n")
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("flaky", max_jobs=20, max_parallel=2))
    return stops


def sweep_later(world: World) -> dict[str, Any]:
    """The sweep, more than a sweep interval (``STEP_TIMEOUT``) later: its delivery step sends what a
    channel failed to deliver (issue 18: a failed report no longer fails the event)."""
    world.amt.advance(timedelta(minutes=6).total_seconds())
    result: dict[str, Any] = sweep.handler(
        {"source": "aws.scheduler"}, FakeLambdaContext("sweep"), services=world.env.services
    )
    return result


def assert_done_once(world: World, stops: list[str], job: str, rule: str) -> None:
    assert stops == [job]
    [row] = [d for d in decisions(world, job) if d["rule"] == rule]
    assert (row["state"], row["action"]) == ("done", "stopped")
    assert "gsi1pk" not in row  # no longer listed as pending


def test_root_cause_1_arrival_judged_after_a_throttled_capacity_read(world: World) -> None:
    # Given an arriving job that does not fit (quota 8, 4 in use, it wants 6)
    world.amt.set_applied_quota(P3_2X, 8)
    use_policy(world, "mode: enforce\n")
    stops = record_stop_calls(world)
    launch_two_teams(world)
    # And the arrival's read of what else holds instances throttled once, after the job's item was written
    fault = OneFault(
        world.env.dynamodb,
        "Query",
        match=lambda p: p.get("IndexName") == "gsi1" and "TRAINING#Active" in str(p.get("ExpressionAttributeValues")),
    )
    failed = run_redelivering(world)
    # Then the redelivered arrival is judged: stopped once, decision done, reported once per channel
    assert fault.fired == 1
    assert [e["detail-type"] for e in failed] == [TUNING]
    assert_done_once(world, stops, "team-b-hpo", "concurrency")
    assert reports(world, "concurrency") == (1, 1)


def test_root_cause_1_arrival_report_sent_on_retry_after_the_ledger_commit(world: World) -> None:
    # Given an arriving job that does not fit, judged and stopped, and its report's publish throttled
    world.amt.set_applied_quota(P3_2X, 8)
    use_policy(world, "mode: enforce\n")
    stops = record_stop_calls(world)
    launch_two_teams(world)
    fault = OneFault(world.env.services.notifiers[0]._client, "Publish")  # type: ignore[attr-defined]
    failed = run_redelivering(world)
    # Then the arrival does not fail for it; the sweep's delivery step sends the report, once per channel
    assert fault.fired == 1
    assert failed == []
    sweep_later(world)
    assert_done_once(world, stops, "team-b-hpo", "concurrency")
    assert reports(world, "concurrency") == (1, 1)


def test_root_cause_2_report_sent_on_retry_when_publish_failed_before_the_call(world: World) -> None:
    # Given a job stopped at its first failed trial, and SNS throttling the decision report once
    stops = flaky_job(world)
    fault = OneFault(world.env.services.notifiers[0]._client, "Publish")  # type: ignore[attr-defined]
    failed = run_redelivering(world)
    # Then the trial's event does not fail for it; the sweep's delivery step sends the report it
    # lacked: once on each channel
    assert fault.fired == 1
    assert failed == []
    sweep_later(world)
    assert_done_once(world, stops, "flaky", "failed-trials")
    assert reports(world, "failed-trials") == (1, 1)


def test_root_cause_2_report_sent_at_least_once_when_publish_failed_after_the_call(world: World) -> None:
    # Given the decision report reaching SNS, but the caller seeing a throttling error
    stops = flaky_job(world)
    fault = OneFault(world.env.services.notifiers[0]._client, "Publish", when="after")  # type: ignore[attr-defined]
    failed = run_redelivering(world)
    assert fault.fired == 1
    assert failed == []
    sweep_later(world)
    assert_done_once(world, stops, "flaky", "failed-trials")
    sns, slack = reports(world, "failed-trials")
    assert sns >= 1
    assert slack == 1


def test_root_cause_3_decision_finished_on_retry_when_recording_it_failed(world: World) -> None:
    # Given the write that marks the decision done throttled once (the stop already made)
    stops = flaky_job(world)
    fault = OneFault(
        world.env.dynamodb,
        "UpdateItem",
        match=lambda p: decision_key(p) and "done" in str(p.get("ExpressionAttributeValues", {})),
    )
    failed = run_redelivering(world)
    # Then the redelivered trial event finishes it: no second stop, done, reported once per channel
    assert fault.fired == 1
    assert [e["detail-type"] for e in failed] == [TRAINING]
    assert_done_once(world, stops, "flaky", "failed-trials")
    assert reports(world, "failed-trials") == (1, 1)


def test_sweep_finishes_a_decision_left_pending_when_the_event_is_never_redelivered(world: World) -> None:
    # Given the decision's report failing once (the event no longer fails for it, issue 18)
    stops = flaky_job(world)
    fault = OneFault(world.env.services.notifiers[0]._client, "Publish")  # type: ignore[attr-defined]
    errors = 0
    for _ in range(48 * 60):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            errors += deliver_event(event, world.env.services).outcome.get("outcome") == "error"
        if fault.fired:
            break  # and nothing else is delivered after it (say, the function was throttled)
    assert (fault.fired, errors) == (1, 0)
    [row] = decisions(world, "flaky")
    assert row["state"] == "pending"
    assert reports(world, "failed-trials") == (0, 1)
    # When a sweep runs more than a sweep interval later
    report = sweep_later(world)
    # Then the decision is finished from its stored row: its missing report sent, no second stop
    assert [(r["job"], r["rule"]) for r in report["resumed"]] == [("flaky", "failed-trials")]
    assert_done_once(world, stops, "flaky", "failed-trials")
    assert reports(world, "failed-trials") == (1, 1)


def test_stop_step_made_again_when_recording_it_failed_and_reported_once(world: World) -> None:
    # Given the write that records the decision's stop (action + the job's stop_requested_at) throttled
    # once: the stop call was made, nothing says so
    stops = flaky_job(world)
    fault = OneFault(world.env.dynamodb, "TransactWriteItems", match=lambda p: "stop_requested_at" in str(p))
    failed = run_redelivering(world)
    # Then the retry stops again (at least once: SageMaker answers that the job is already stopping),
    # records it, and reports once per channel
    assert fault.fired == 1
    assert [e["detail-type"] for e in failed] == [TRAINING]
    assert stops == ["flaky", "flaky"]
    [row] = decisions(world, "flaky")
    assert (row["state"], row["action"]) == ("done", "stopped")
    assert (world.env.services.store.get_job("flaky") or {}).get("stop_requested_at")
    assert reports(world, "failed-trials") == (1, 1)


def test_team_decision_reported_on_retry_when_its_report_failed(mid_month: World) -> None:
    # Given team nlp over its $100 month, and the team's breach report throttled once on SNS
    world = mid_month
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, "mode: enforce\nteams:\n  nlp: {monthly_budget_usd: 100}\n")
    stops = record_stop_calls(world)
    fault = OneFault(
        world.env.services.notifiers[0]._client,  # type: ignore[attr-defined]
        "Publish",
        match=lambda p: "STOPPED team nlp" in str(p.get("Subject")),
    )
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("nlp-a", max_parallel=2, max_jobs=2))
    failed = run_redelivering(world)
    # Then no event fails (a report never holds up the event) and a later judgement of the team
    # finishes the team decision: the job stopped once, the team's report naming it sent once per
    # channel, the team decision done
    assert fault.fired == 1
    assert failed == []
    assert stops == ["nlp-a"]
    breach = next(d for d in world.env.services.store.team_decisions("nlp") if d["verdict"] == "breach")
    assert breach["state"] == "done"
    assert [(j["job"], j["action"]) for j in breach["jobs"]] == [("nlp-a", "stopped")]
    sns = [m for m in world.env.sns_messages() if "STOPPED team nlp" in m["Subject"]]
    slack = [m for m in world.slack.messages if "STOPPED team nlp" in m.get("text", "")]
    assert (len(sns), len(slack)) == (1, 1)
    assert "nlp-a: stopped" in sns[0]["Message"]


def delivery_write(state: str) -> Callable[[dict[str, Any]], bool]:
    """Matches the PutItem of a summary report's delivery row in ``state`` (sending: the claim)."""

    def match(params: dict[str, Any]) -> bool:
        item = params.get("Item", {})
        return str(item.get("sk", {}).get("S", "")).startswith("DELIVERY#summary-") and item.get("state") == {
            "S": state
        }

    return match


def summaries_sent(world: World, job: str) -> tuple[int, int]:
    """How many summary reports of ``job`` went out on SNS and on Slack."""
    sns = [m for m in world.env.sns_messages() if str(m["Subject"]).startswith(f"[tuning-governor] {job} ")]
    slack = [m for m in world.slack.messages if f"{job} completed" in str(m.get("text", ""))]
    return len(sns), len(slack)


def quiet_job(world: World) -> None:
    """A job no rule judges: its summary is its only report."""
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("quiet", max_jobs=2, max_parallel=2))


def test_a_delivery_claim_whose_answer_was_lost_is_taken_again_in_place(world: World) -> None:
    # Given the summary's claim on SNS written, but the caller seeing a throttling error
    quiet_job(world)
    fault = OneFault(world.env.dynamodb, "PutItem", when="after", match=delivery_write("sending"))
    failed = run_redelivering(world)
    # Then the same attempt takes its own claim again (nothing was sent under it): no retry, sent once
    assert fault.fired == 1
    assert failed == []
    assert summaries_sent(world, "quiet") == (1, 1)


def test_a_sent_mark_that_failed_before_the_call_is_written_in_place_and_sent_once(world: World) -> None:
    # Given the summary sent on SNS and the write saying so throttled twice
    quiet_job(world)
    fault = OneFault(world.env.dynamodb, "PutItem", match=delivery_write("sent"), times=2)
    failed = run_redelivering(world)
    # Then the process that sent it writes the mark (it alone knows): no retry, no second send
    assert fault.fired == 2
    assert failed == []
    assert summaries_sent(world, "quiet") == (1, 1)
    assert world.env.services.store.delivery_sent("quiet", "summary-completed", "sns")


def test_a_summary_claim_lost_for_good_is_sent_by_the_sweep_once_stale(world: World) -> None:
    # Given the summary's SNS claim written but every in-place attempt seeing an error: the invocation
    # fails, and its retry finds the claim held by an attempt that is gone (in-flight)
    quiet_job(world)
    fault = OneFault(
        world.env.dynamodb, "PutItem", when="after", match=delivery_write("sending"), times=BOOKKEEPING_ATTEMPTS
    )
    failed = run_redelivering(world)
    assert fault.fired == BOOKKEEPING_ATTEMPTS
    assert [e["detail-type"] for e in failed] == [TUNING]
    assert summaries_sent(world, "quiet") == (0, 1)
    assert [item["job_name"] for item in world.env.services.store.jobs_with_gaps()] == ["quiet"]
    assert "summary_reported_at" not in (world.env.services.store.get_job("quiet") or {})
    # When the sweep runs once the claim is stale (CLAIM_TIMEOUT)
    world.amt.advance(CLAIM_TIMEOUT.total_seconds() + 60)
    report = sweep.handler({"source": "aws.scheduler"}, FakeLambdaContext("sweep"), services=world.env.services)
    # Then it sends the summary where it was missing, once, and the job is no longer followed
    assert [(g["job"], g["reports"]) for g in report["gaps"]] == [("quiet", {"sns": "sent", "slack": "already-sent"})]
    assert summaries_sent(world, "quiet") == (1, 1)
    assert world.env.services.store.jobs_with_gaps() == []
    assert (world.env.services.store.get_job("quiet") or {}).get("summary_reported_at")
