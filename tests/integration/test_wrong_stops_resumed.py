"""A concurrency stop made in error is resumed, once (issue 25 item 1's last sentence): the job the
governor stopped for concurrency, when what SageMaker ran at the stop call plus its demand fitted the
limit (here: the job it was judged against ended between the judgement and the stop call), is queued
again as its warm-start resume whatever ``on_over_capacity`` says, by its Stopped event or by the
sweep when that event is lost, and its decision record and owner's report say "stopped in error:
resumed as <name>". A right stop is not resumed. Through the real handlers on the AMT stand-in."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from tests.conftest import REGION
from tests.integration.conftest import World
from tests.integration.test_admission import P3, enforce, run_first, stop_calls, team_a, team_b
from tests.integration.test_queue_requeue import SPEECH_EXEC
from tests.integration.test_sweep_finishes import SCHEDULE, _consume, _deliver, _run, _stopped_event_of
from tuning_governor.adapters.submissions import IamPrincipals, SageMakerLauncher
from tuning_governor.app.queue.admission import QueueServices
from tuning_governor.app.sweep.run import run_sweep
from tuning_governor.domain.resume import resume_name

RESUMED = resume_name("team-b-hpo", 1)


def _queue(world: World) -> QueueServices:
    sm = world.env.sagemaker
    iam = IamPrincipals(boto3.client("iam", region_name=REGION))
    return QueueServices(launcher=SageMakerLauncher(sm), principals=iam, stopped_jobs=SageMakerLauncher(sm))


def _a_ends_at_bs_stop_call(world: World) -> None:
    """A's owner stops A while the governor comes to stop B; A is Stopped when B's stop call is made."""
    sm, done = world.env.sagemaker, []

    def owner_stops_a(params: dict[str, Any], **_: Any) -> None:
        if params["HyperParameterTuningJobName"] == "team-b-hpo" and not done:
            done.append(True)
            sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="team-a-hpo")
            world.amt.advance(120)

    sm.meta.events.register("provide-client-params.sagemaker.StopHyperParameterTuningJob", owner_stops_a)


def _b_arrives_over_the_quota(world: World) -> list[str]:
    """8 ml.p3.2xlarge: A (vision, 4) running and admitted; B (speech's execution role, 6) created."""
    world.amt.set_applied_quota(P3, 8)
    enforce(world, f'teams: {{speech: {{execution_roles: ["{SPEECH_EXEC}"]}}}}\n')
    run_first(world, team_a(max_jobs=40))
    stops = stop_calls(world)
    b = team_b(max_jobs=40)
    b["TrainingJobDefinition"]["RoleArn"] = SPEECH_EXEC
    world.env.sagemaker.create_hyper_parameter_tuning_job(**b)
    return stops


def _told(world: World) -> list[str]:
    return [json.dumps(m) for m in world.slack.messages] + [m["Message"] for m in world.env.sns_messages()]


def _created(world: World) -> list[str]:
    created: list[str] = []
    world.env.sagemaker.meta.events.register(
        "provide-client-params.sagemaker.CreateHyperParameterTuningJob",
        lambda params, **_: created.append(params["HyperParameterTuningJobName"]),
    )
    return created


@pytest.mark.parametrize("stopped_event", ["delivered", "lost"])
def test_a_job_stopped_when_its_holder_had_already_ended_is_resumed_once(world: World, stopped_event: str) -> None:
    queue, store = _queue(world), world.env.services.store
    # Given B judged over the quota next to A (4 + 6 > 8), and A ended by the time B's stop call is made
    stops = _b_arrives_over_the_quota(world)
    _a_ends_at_bs_stop_call(world)
    created = _created(world)
    # When everything runs to the end, the sweep and the consumer's schedule every 5 minutes (B's
    # Stopping and Stopped events delivered, or lost and left to the sweep, then delivered hours late)
    lost = _run(world, queue, _stopped_event_of("team-b-hpo" if stopped_event == "lost" else "none"))
    assert bool(lost) == (stopped_event == "lost")
    world.amt.advance(3 * 3600)
    for event in lost:
        _deliver(world, queue, event)
    run_sweep(world.env.services)
    _consume(world, queue, SCHEDULE)
    # Then B was stopped once, found stopped in error, and resumed once as its warm-start resume
    assert stops.count("team-b-hpo") == 1
    [decision] = store.decisions("team-b-hpo")
    assert decision["action"] == "stopped"
    assert f"stopped in error: resumed as {RESUMED}" in decision["action_detail"], decision["action_detail"]
    entry = store.get_request(RESUMED)
    assert entry is not None and entry.team == "speech", "a concurrency stop made in error was not resumed"
    assert created.count(RESUMED) == 1 and set(created) == {RESUMED}
    resumed = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=RESUMED)
    assert resumed["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] < 40
    told = [text for text in _told(world) if f"team-b-hpo was stopped in error: resumed as {RESUMED}" in text]
    assert len(told) == 2, told  # Slack and SNS, once each


def test_a_right_concurrency_stop_is_not_resumed(world: World) -> None:
    queue, store = _queue(world), world.env.services.store
    # Given B judged over the quota next to A, A still running at B's stop call
    stops = _b_arrives_over_the_quota(world)
    created = _created(world)
    # When everything runs to the end
    _run(world, queue, _stopped_event_of("none"))
    # Then B is stopped and stays stopped: on_over_capacity is stop, and the stop was right
    assert stops == ["team-b-hpo"]
    [decision] = store.decisions("team-b-hpo")
    assert decision["action"] == "stopped" and "stopped in error" not in decision["action_detail"]
    assert store.get_request(RESUMED) is None
    assert created == []
