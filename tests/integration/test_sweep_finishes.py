"""The sweep finishes what a lost event would have done: a stopped job queued again, a warm pool's
retention billed, a team month judged again once the policy says enforce. On moto and the AMT stand-in,
through the real handlers (every event goes to its handler, a tuning job's end to the queue consumer
too, and the sweep and the consumer's schedule run every 5 virtual minutes), with chosen events lost
and, where it matters, delivered hours late after all."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import queue_submissions

from governor_client.simulator.requests import tuning_request
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from tests.integration.conftest import World
from tests.integration.test_queue_requeue import _launch, _requeue_world
from tuning_governor.app.queue.admission import QueueServices
from tuning_governor.app.sweep.run import run_sweep
from tuning_governor.domain.resume import resume_name
from tuning_governor.policy import parse_policy

TERMINAL = {"Completed", "Stopped", "Failed"}
SCHEDULE = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
M5 = "ml.m5.xlarge"


def _consume(world: World, queue: QueueServices | None, event: dict[str, Any]) -> None:
    if queue is not None:
        queue_submissions.handler(
            event, FakeLambdaContext("queue-submissions"), services=world.env.services, queue=queue
        )


def _deliver(world: World, queue: QueueServices | None, event: dict[str, Any]) -> None:
    """As EventBridge routes it: to its handler, and a tuning job's end to the queue consumer too."""
    deliver_event(event, world.env.services)
    if event["detail"].get("HyperParameterTuningJobStatus") in TERMINAL:
        _consume(world, queue, event)


def _run(
    world: World, queue: QueueServices | None, lose: Callable[[dict[str, Any]], bool], *, minutes: int = 48 * 60
) -> list[dict[str, Any]]:
    """Run until idle (and three sweeps more), losing the events ``lose`` picks; returns them."""
    lost: list[dict[str, Any]] = []
    quiet = 0
    for minute in range(1, minutes + 1):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            if lose(event):
                lost.append(event)
            else:
                _deliver(world, queue, event)
        if minute % 5 == 0:
            run_sweep(world.env.services)
            _consume(world, queue, SCHEDULE)
            quiet = quiet + 1 if world.amt.idle() and not world.amt.events else 0
            if quiet > 3:
                return lost
    raise AssertionError("the stand-in did not go idle")


def _texts(world: World) -> list[str]:
    return [json.dumps(m) for m in world.slack.messages] + [m["Message"] for m in world.env.sns_messages()]


def _stopped_event_of(name: str) -> Callable[[dict[str, Any]], bool]:
    def lose(event: dict[str, Any]) -> bool:
        detail = event["detail"]
        return detail.get("HyperParameterTuningJobName") == name and detail.get("HyperParameterTuningJobStatus") in {
            "Stopped",
            "Stopping",
        }

    return lose


# -- a preempted or requeue-policy job whose Stopped event was lost ------------------------------------
def test_a_stopped_job_whose_stopped_event_was_lost_is_queued_again_once_even_when_the_event_comes_late(
    world: World,
) -> None:
    queue = _requeue_world(world)
    # Given team B's job is stopped on arrival (on_over_capacity: requeue) and its Stopping and Stopped
    # events are lost
    _launch(world)
    lost = _run(world, queue, _stopped_event_of("team-b-hpo"))
    assert lost, "the scenario lost no event"
    # Then the sweep queued it again under its resumed name, told its owner, and it ran once A ended
    resumed = resume_name("team-b-hpo", 1)
    entry = world.env.services.store.get_request(resumed)
    assert entry is not None, "the stopped job was not queued again"
    assert entry.state == "admitted"
    # When the lost events arrive hours late after all
    world.amt.advance(3 * 3600)
    for event in lost:
        _deliver(world, queue, event)
    run_sweep(world.env.services)
    _consume(world, queue, SCHEDULE)
    # Then it is still queued once, and its owner was told once
    told = [t for t in _texts(world) if f"queued as {resumed}" in t]
    assert len(told) == 2, told  # Slack and SNS, once each
    waiting = [e for e in world.env.services.store.waiting_requests() if e.job_name.startswith("team-b-hpo")]
    assert waiting == []


# -- warm-pool retention whose pool Terminated/Reused event was lost -----------------------------------
def _pool_end(event: dict[str, Any]) -> bool:
    status = (event["detail"].get("WarmPoolStatus") or {}).get("Status")
    return event["detail-type"] == "SageMaker Training Job State Change" and status in {"Terminated", "Reused"}


def _billed(world: World, job: str) -> Decimal:
    """What SageMaker bills the job's trials: BillableTime and warm-pool retention, x instances x price."""
    sm, catalog = world.env.sagemaker, world.env.services.catalog
    total = Decimal(0)
    for trial in world.amt.training_jobs_of(job):
        described = sm.describe_training_job(TrainingJobName=trial)
        resource = described["ResourceConfig"]
        price = catalog.price(world.env.region, resource["InstanceType"])
        assert price is not None
        retained = (described.get("WarmPoolStatus") or {}).get("ResourceRetainedBillableTimeInSeconds") or 0
        rate = Decimal(price.usd_per_hour) * resource["InstanceCount"] / 3600
        for seconds in (described.get("BillableTimeInSeconds") or 0, retained):  # billed as two lines
            total += (rate * seconds).quantize(Decimal("1e-6"))
    return total


def test_warm_pool_retention_whose_pool_event_was_lost_is_billed_to_the_job_and_team_month_once(world: World) -> None:
    # Given a job whose trials keep warm pools for 10 minutes, and every pool's Terminated/Reused event lost
    request = tuning_request("pool-hpo", strategy="Random", team="vision", instance_type=M5, instance_count=2,
                             max_parallel=2, max_jobs=4, keep_alive_s=600)  # fmt: skip
    world.env.sagemaker.create_hyper_parameter_tuning_job(**request)
    lost = _run(world, None, _pool_end)
    assert lost, "no pool event was lost"
    truth = _billed(world, "pool-hpo")
    store = world.env.services.store
    # Then the sweep described the pools and billed their retention: the job's summary and the team's
    # month hold every dollar SageMaker bills
    summary = store.get_summary("pool-hpo")
    assert summary is not None
    assert summary.cost.priced_cost_usd == truth, "warm-pool retention missing from the job's dollars"
    month = store.team_month("vision", world.env.services.clock().strftime("%Y-%m"))
    assert Decimal(str(month.get("finished_usd", 0))).quantize(Decimal("1e-6")) == truth
    # When the lost pool events arrive hours late after all
    world.amt.advance(3 * 3600)
    for event in lost:
        deliver_event(event, world.env.services)
    run_sweep(world.env.services)
    # Then nothing is counted twice
    again = store.get_summary("pool-hpo")
    assert again is not None and again.cost.priced_cost_usd == truth
    month = store.team_month("vision", world.env.services.clock().strftime("%Y-%m"))
    assert Decimal(str(month.get("finished_usd", 0))).quantize(Decimal("1e-6")) == truth


# -- monitor -> enforce, team month ---------------------------------------------------------------------
TEAM_MONTH = "mode: {mode}\nquotas: {{ml.m5.xlarge: 1000}}\nteams:\n  nlp:\n    monthly_budget_usd: 0.5\n"


def test_a_team_past_its_month_under_monitor_is_stopped_once_the_policy_says_enforce(world: World) -> None:
    services = world.env.services
    policy = {"now": parse_policy(TEAM_MONTH.format(mode="monitor"), "test")}
    services.policy = lambda: policy["now"]
    # Given nlp's job runs past the team's month budget under monitor mode (a would-stop decision)
    request = tuning_request("nlp-long", strategy="Random", team="nlp", instance_type=M5, instance_count=2,
                             max_parallel=2, max_jobs=40, num_round=200)  # fmt: skip
    world.env.sagemaker.create_hyper_parameter_tuning_job(**request)
    for minute in range(1, 4 * 60):
        world.pump(60)
        if minute % 5 == 0:
            run_sweep(services)
        if any(d.get("action") == "would-stop" for d in services.store.decisions("nlp-long")):
            break
    decisions = services.store.decisions("nlp-long")
    assert [d["rule"] for d in decisions if d.get("action") == "would-stop"] == ["team-budget"], decisions
    # When the policy is switched to enforce
    policy["now"] = parse_policy(TEAM_MONTH.format(mode="enforce"), "test")
    stopped_at = None
    for minute in range(1, 30):
        world.pump(60)
        if minute % 5 == 0:
            run_sweep(services)
        status = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="nlp-long")
        if status["HyperParameterTuningJobStatus"] in {"Stopping", "Stopped"}:
            stopped_at = minute
            break
    # Then its next judgement (an event or the sweep) stops it, once, for the team month
    assert stopped_at is not None, "the team past its month ran on after the switch to enforce"
    world.run_until_idle()
    run_sweep(services)
    stops = [d for d in services.store.decisions("nlp-long") if d.get("action") == "stopped"]
    assert [d["rule"] for d in stops] == ["team-budget"]


# -- a team decision left pending when no team job runs any more ----------------------------------------
def test_a_team_decision_left_pending_with_no_team_job_running_is_finished_by_the_sweep(world: World) -> None:
    services = world.env.services
    policy = parse_policy(TEAM_MONTH.format(mode="enforce"), "test")
    services.policy = lambda: policy
    # Given Slack refuses every report while nlp's only job breaches the team's month and is stopped
    world.slack.fail_at_rate(1.0)
    request = tuning_request("nlp-only", strategy="Random", team="nlp", instance_type=M5, instance_count=2,
                             max_parallel=2, max_jobs=40, num_round=200)  # fmt: skip
    world.env.sagemaker.create_hyper_parameter_tuning_job(**request)
    world.run_until_idle()
    status = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="nlp-only")
    assert status["HyperParameterTuningJobStatus"] == "Stopped"
    pending = [d for d in services.store.team_decisions("nlp") if d.get("state") == "pending"]
    assert [d["verdict"] for d in pending] == ["breach"], services.store.team_decisions("nlp")
    # When Slack answers again and the sweep runs (no job of the team is running any more)
    world.slack.fail_at_rate(0)
    for _ in range(2):
        world.amt.advance(6 * 60)
        run_sweep(services)
    # Then the team's decision is finished and its one report is out, naming what happened to its job
    decisions = {d["verdict"]: d for d in services.store.team_decisions("nlp")}
    assert decisions["breach"].get("state") == "done", "the team's decision was left pending"
    team_reports = [m for m in world.slack.messages if "team nlp" in json.dumps(m)]
    assert len(team_reports) == 1, [json.dumps(m)[:300] for m in world.slack.messages]
    assert "STOPPED team nlp" in json.dumps(team_reports[0])
