"""``defaults.on_over_capacity: requeue`` (issue 20 item 5's trigger): a job stopped on arrival for
concurrency is queued again as its resumed request when its Stopped event reaches the queue consumer
(docs/explanation/queue.md, "Integration"), and created when capacity frees. On moto and the AMT stand-in; every
event goes to the handlers, and a tuning job's end also to the consumer (its EventBridge rule)."""

from __future__ import annotations

import json

import boto3
import queue_submissions

from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import REGION
from tests.integration.conftest import World
from tests.integration.test_governance import P3_2X, record_stop_calls
from tuning_governor.adapters.submissions import IamPrincipals, SageMakerLauncher
from tuning_governor.app.queue.admission import QueueServices
from tuning_governor.domain.resume import resume_name
from tuning_governor.policy import parse_policy

SPEECH_EXEC = "arn:aws:iam::123456789012:role/speech-sagemaker"
POLICY = f"""
mode: enforce
quotas: {{{P3_2X}: 8}}
defaults: {{on_over_capacity: requeue}}
teams:
  speech: {{execution_roles: ["{SPEECH_EXEC}"]}}
"""


def _launch(world: World, b_team: str = "speech") -> None:
    """Team A (vision): 4 parallel x 1; a minute later team B (speech's execution role, tagged ``b_team``): 3 x 2."""
    sm = world.env.sagemaker
    a = seed_tuning_request(
        "team-a-hpo", team="vision", instance_type=P3_2X, instance_count=1, max_parallel=4, max_jobs=8
    )
    sm.create_hyper_parameter_tuning_job(**a)
    world.pump(60)
    b = seed_tuning_request(
        "team-b-hpo", team=b_team, instance_type=P3_2X, instance_count=2, max_parallel=3, max_jobs=6
    )
    b["TrainingJobDefinition"]["RoleArn"] = SPEECH_EXEC
    sm.create_hyper_parameter_tuning_job(**b)


def _requeue_world(world: World) -> QueueServices:
    """The policy above on a quota of 100, and the consumer's services with a stopped-job reader."""
    world.amt.set_applied_quota(P3_2X, 100)
    policy = parse_policy(POLICY, "test")
    world.env.services.policy = lambda: policy
    sm = world.env.sagemaker
    iam = IamPrincipals(boto3.client("iam", region_name=REGION))
    return QueueServices(launcher=SageMakerLauncher(sm), principals=iam, stopped_jobs=SageMakerLauncher(sm))


def _run(world: World, queue: QueueServices) -> None:
    for _ in range(48 * 60):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            deliver_event(event, world.env.services)
            if event["detail"].get("HyperParameterTuningJobStatus") in {"Completed", "Stopped", "Failed"}:
                ctx = FakeLambdaContext("queue-submissions")
                queue_submissions.handler(event, ctx, services=world.env.services, queue=queue)
        if world.amt.idle() and not world.amt.events:
            return


def test_a_job_stopped_on_arrival_is_queued_as_its_resumed_request_and_runs_later(world: World) -> None:
    queue, sm = _requeue_world(world), world.env.sagemaker
    stops = record_stop_calls(world)
    # Given team B's job arrives over the quota (A holds 4 of 8, B wants 6) and is stopped on arrival
    _launch(world)
    _run(world, queue)
    assert stops[:1] == ["team-b-hpo"]
    # Then it was queued again under its resumed name, told to its owner, and created once A ended
    resumed = resume_name("team-b-hpo", 1)
    entry = world.env.services.store.get_request(resumed)
    assert entry is not None and entry.team == "speech" and entry.state == "admitted"
    job = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=resumed)
    assert job["HyperParameterTuningJobStatus"] == "Completed"
    texts = [json.dumps(m) for m in world.slack.messages] + [m["Message"] for m in world.env.sns_messages()]
    assert any(f"stopped on arrival and queued as {resumed}" in t for t in texts)


def test_a_requeued_job_goes_to_the_team_the_governor_judged_it_for_not_its_tag(world: World) -> None:
    queue = _requeue_world(world)
    # Given team B's job runs as speech's execution role but is tagged team=vision
    _launch(world, b_team="vision")
    _run(world, queue)
    # Then it is queued again for speech, the team whose role it runs as (the stop decision's team)
    entry = world.env.services.store.get_request(resume_name("team-b-hpo", 1))
    assert entry is not None and entry.team == "speech"
