"""Names nobody else can take (docs/explanation/queue.md, "Names"): a job found under a queued request's name is
taken as the request's own only when it carries the request's governed tags (team, owner, token);
otherwise the request is refused as a name conflict, counted and alarmed, and nothing runs on its
reservation. A submission's warm start may name only its own team's tuning jobs. On moto and the AMT
stand-in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tests.integration.test_queue_requeue import _launch, _requeue_world, _run
from tests.integration.test_queue_submission import P3, created_jobs, queue_world, record, request
from tuning_governor.app.queue.admission import QueueServices, submit
from tuning_governor.app.queue.requests import read_record
from tuning_governor.domain.resume import resume_name
from tuning_governor.models.queue import QUEUE_TOKEN_TAG, job_name_for, token_tag

__all__ = ["queue_world"]  # the fixture, shared with the submission tests


def _squat(world: World, name: str, team: str, owner: str = "mallory") -> None:
    """Someone else creates a tuning job under ``name`` first, tagged as they like."""
    squat = seed_tuning_request(name, team=team, owner=owner, instance_type=P3, instance_count=1, max_parallel=1)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**squat)


def _parent(world: World, name: str, team: str) -> None:
    """A finished tuning job of ``team`` (a warm start's parents must have ended)."""
    _squat(world, name, team)
    world.env.sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    world.pump(600)


def _tags(world: World, name: str) -> dict[str, str]:
    sm = world.env.sagemaker
    arn = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)["HyperParameterTuningJobArn"]
    return {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}


def _texts(world: World) -> list[str]:
    return [json.dumps(m) for m in world.slack.messages] + [m["Message"] for m in world.env.sns_messages()]


@pytest.mark.parametrize("squatter_team", ["nlp", "cv"])
def test_a_submissions_name_squatted_is_refused_as_a_name_conflict(queue_world: Any, squatter_team: str) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    name = job_name_for("nlp", "tok-squat")
    # Given someone (of the submitter's team or another) created a job under the submission's name first
    _squat(world, name, squatter_team)
    # When nlp's submitter sends the request with that token
    outcome = submit(read_record(record(f"{ids['nlp']}:ana", request(), "tok-squat")), services, queue)
    # Then it is refused as a name conflict, its reservation is given back, and its owner is told
    [admitted] = outcome["admitted"]
    assert admitted["outcome"] == "refused", admitted
    assert "name conflict" in admitted["reason"]
    entry = services.store.get_request(name)
    assert entry is not None and entry.state == "refused"
    assert name.lower() not in services.store.read_ledger().reservations
    assert any("name conflict" in t for t in _texts(world))


def test_the_created_job_carries_the_submissions_governed_tags(queue_world: Any) -> None:
    world, queue, ids = queue_world
    submit(read_record(record(f"{ids['nlp']}:ana", request(), "tok-own")), world.env.services, queue)
    # The tags a job found under the name must carry to be taken as this submission's own
    tags = _tags(world, job_name_for("nlp", "tok-own"))
    assert (tags["team"], tags["owner"], tags[QUEUE_TOKEN_TAG]) == ("nlp", "ana", token_tag("nlp", "tok-own"))


def test_names_depend_on_the_stacks_secret_key(queue_world: Any) -> None:
    world, queue, ids = queue_world
    # Given the consumer holds the stack's secret name key
    keyed = QueueServices(queue.launcher, queue.principals, name_key="stack-secret-0123456789abcdef")
    outcome = submit(read_record(record(f"{ids['nlp']}:ana", request(), "tok-keyed")), world.env.services, keyed)
    # Then the job's name is not the one the open recipe gives for (team, token), and still 32 chars at most
    name = outcome["job_name"]
    assert name != job_name_for("nlp", "tok-keyed")
    assert name == job_name_for("nlp", "tok-keyed", "stack-secret-0123456789abcdef")
    assert name.startswith("q-") and len(name) <= 32
    assert created_jobs(world) == [name]
    # And resume names too: not computable without the key
    assert resume_name(name, 1, "stack-secret-0123456789abcdef") != resume_name(name, 1)


def test_a_resume_name_squatted_is_refused_as_a_name_conflict(world: World) -> None:
    queue = _requeue_world(world)
    # Given someone creates the name team B's job would be resumed under, before it is stopped
    _squat(world, resume_name("team-b-hpo", 1), "speech")
    # When team B's job is stopped on arrival and queued again (on_over_capacity: requeue)
    _launch(world)
    _run(world, queue)
    # Then its resumed request is refused as a name conflict; the squatter's job is not taken for it
    entry = world.env.services.store.get_request(resume_name("team-b-hpo", 1))
    assert entry is not None and entry.state == "refused", entry
    assert entry.reason and "name conflict" in entry.reason


def test_a_warm_start_from_another_teams_job_is_refused_with_the_reason(queue_world: Any) -> None:
    world, queue, ids = queue_world
    _parent(world, "cv-parent", "cv")
    _parent(world, "nlp-parent", "nlp")
    # Given nlp's submitter asks to warm-start from a cv job (and one of its own)
    req = request()
    req["WarmStartConfig"] = {
        "ParentHyperParameterTuningJobs": [
            {"HyperParameterTuningJobName": "nlp-parent"},
            {"HyperParameterTuningJobName": "cv-parent"},
        ],
        "WarmStartType": "IdenticalDataAndAlgorithm",
    }
    outcome = submit(read_record(record(f"{ids['nlp']}:ana", req, "tok-warm")), world.env.services, queue)
    # Then it is refused, the reason naming the job and its team; nothing is created under its name
    assert outcome["outcome"] == "refused", outcome
    entry = world.env.services.store.get_request(job_name_for("nlp", "tok-warm"))
    assert entry is not None and entry.reason is not None
    assert "cv-parent" in entry.reason and "team cv" in entry.reason
    assert job_name_for("nlp", "tok-warm") not in created_jobs(world)


def test_a_warm_start_from_the_teams_own_job_is_created(queue_world: Any) -> None:
    world, queue, ids = queue_world
    _parent(world, "nlp-parent", "nlp")
    req = request()
    req["WarmStartConfig"] = {
        "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": "nlp-parent"}],
        "WarmStartType": "TransferLearning",
    }
    outcome = submit(read_record(record(f"{ids['nlp']}:ana", req, "tok-warm-own")), world.env.services, queue)
    assert [o["outcome"] for o in outcome["admitted"]] == ["admitted"]
