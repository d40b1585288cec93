"""The submission path end to end on moto and the AMT stand-in (docs/explanation/queue.md): identity from SQS's
SenderId (a role's unique id from moto's IAM), the queue in the table, the ledger, and
CreateHyperParameterTuningJob on the stand-in.

moto's SQS gives every message one fixed SenderId whoever sends it, so the records here are built in
the shape Lambda's SQS event has, with the SenderId AWS documents for a role session
(``<role unique id>:<session name>``).
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import boto3
import pytest
import queue_submissions

from governor_client.memory import MemoryStore
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from governor_client.simulator.scenarios import ROLE_ARN, seed_tuning_request
from governor_client.submit.submissions import StaticPrincipals, lambda_event, send_submission
from tests.conftest import REGION
from tests.integration.conftest import World
from tuning_governor.adapters.submissions import IamPrincipals, SageMakerLauncher
from tuning_governor.app.queue.admission import QueueServices, admit_waiting, submit
from tuning_governor.app.queue.requests import read_record
from tuning_governor.domain.queue_schedule import QueueDecision
from tuning_governor.errors import RejectedEvent, TransientError
from tuning_governor.models.queue import QUEUE_TOKEN_TAG, job_name_for
from tuning_governor.policy import parse_policy

P3 = "ml.p3.2xlarge"
ACCOUNT = "123456789012"
CV_EXEC = f"arn:aws:iam::{ACCOUNT}:role/cv-sagemaker"


def _role(iam: Any, name: str) -> tuple[str, str]:
    trust = {"Version": "2012-10-17", "Statement": []}
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    return role["Arn"], role["RoleId"]


@pytest.fixture
def queue_world(world: World) -> tuple[World, QueueServices, dict[str, str]]:
    """Two teams, each with a submitter role; nlp may pass the demo execution role, cv its own; an
    account quota of 8 ml.p3.2xlarge, nlp's share 4."""
    world.amt.set_applied_quota(P3, 8)
    iam = boto3.client("iam", region_name=REGION)
    nlp_arn, nlp_id = _role(iam, "nlp-submit")
    cv_arn, cv_id = _role(iam, "cv-submit")
    policy = parse_policy(
        f"""
mode: enforce
quotas: {{{P3}: 8}}
teams:
  nlp: {{submitters: ["{nlp_arn}"], execution_roles: ["{ROLE_ARN}"], instances: {{{P3}: 4}}, max_wait_minutes: 30}}
  cv: {{submitters: ["{cv_arn}"], execution_roles: ["{CV_EXEC}"]}}
""",
        "test",
    )
    world.env.services.policy = lambda: policy
    queue = QueueServices(launcher=SageMakerLauncher(world.env.sagemaker), principals=IamPrincipals(iam))
    return world, queue, {"nlp": nlp_id, "cv": cv_id}


def record(
    sender: str, request: dict[str, Any], token: str, body_extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One record of a Lambda SQS event, as AWS sends it."""
    body = {"request": request, "client_token": token, **(body_extra or {})}
    return {
        "messageId": f"m-{token}",
        "body": json.dumps(body),
        "attributes": {"SenderId": sender, "SentTimestamp": "1764579600000", "ApproximateReceiveCount": "1"},
        "eventSource": "aws:sqs",
    }


def request(
    name: str = "ignored", *, count: int = 1, parallel: int = 2, role: str = ROLE_ARN, team: str = "nlp"
) -> dict[str, Any]:
    req = seed_tuning_request(
        name, team=team, instance_type=P3, instance_count=count, max_parallel=parallel, max_jobs=4
    )
    req["TrainingJobDefinition"]["RoleArn"] = role
    return req


def created_jobs(world: World) -> list[str]:
    return sorted(
        j["HyperParameterTuningJobName"]
        for j in world.env.sagemaker.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]
    )


def slack_texts(world: World) -> list[str]:
    return [json.dumps(m) for m in world.slack.messages]


def test_a_request_that_fits_is_created_under_its_derived_name_with_the_team_the_sender_names(queue_world: Any) -> None:
    world, queue, ids = queue_world
    # Given nlp's submitter sends a request whose tags and body claim team cv and an exemption
    req = request(team="cv")
    req["Tags"].append({"Key": "Governance:Exempt", "Value": "true"})
    sub = read_record(record(f"{ids['nlp']}:ana@example.com", req, "tok-1", {"team": "cv"}))
    # When it is submitted
    outcome = submit(sub, world.env.services, queue)
    # Then the job is created for nlp, by its derived name, without the exemption
    name = job_name_for("nlp", "tok-1")
    assert outcome["admitted"] == [{"job_name": name, "outcome": "admitted", "create": "created"}]
    assert created_jobs(world) == [name]
    arn = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)[
        "HyperParameterTuningJobArn"
    ]
    tags = {t["Key"]: t["Value"] for t in world.env.sagemaker.list_tags(ResourceArn=arn)["Tags"]}
    assert tags["team"] == "nlp" and tags["owner"] == "ana@example.com" and "Governance:Exempt" not in tags
    assert world.env.services.store.read_ledger().reservations[name].team == "nlp"
    assert any("queued, position 1" in t for t in slack_texts(world))
    assert any("admitted" in t for t in slack_texts(world))


def test_a_submitter_cannot_reach_another_teams_share(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given nlp holds its whole share (4) with one job
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "first")), services, queue)
    # When nlp's submitter sends a request claiming cv (tag and body), cv's share being idle
    second = submit(
        read_record(record(f"{ids['nlp']}:ana", request(team="cv"), "second", {"team": "cv"})), services, queue
    )
    # Then it waits in nlp's share, and nothing more is created
    assert second["admitted"] == []
    waiting = services.store.get_request(second["job_name"])
    assert waiting is not None and (waiting.team, waiting.state) == ("nlp", "queued")
    assert created_jobs(world) == [job_name_for("nlp", "first")]


def test_an_unlisted_execution_role_is_refused_with_the_role_named(queue_world: Any) -> None:
    world, queue, ids = queue_world
    # nlp's submitter asks for cv's execution role
    out = submit(read_record(record(f"{ids['nlp']}:ana", request(role=CV_EXEC), "steal")), world.env.services, queue)
    assert out["outcome"] == "refused"
    refused = world.env.services.store.get_request(out["job_name"])
    assert refused is not None and refused.state == "refused" and CV_EXEC in (refused.reason or "")
    assert created_jobs(world) == []
    assert any("refused" in t and "cv-sagemaker" in t for t in slack_texts(world))


def test_a_sender_who_is_no_listed_submitter_is_refused_and_nothing_is_queued(queue_world: Any) -> None:
    world, queue, _ = queue_world
    with pytest.raises(RejectedEvent, match="not a listed submitter"):
        submit(read_record(record("AROAUNKNOWNROLE000000:mallory", request(), "x")), world.env.services, queue)
    assert world.env.services.store.waiting_requests() == []


def test_a_request_that_can_never_fit_is_refused_with_the_reason(queue_world: Any) -> None:
    world, queue, ids = queue_world
    out = submit(
        read_record(record(f"{ids['nlp']}:ana", request(count=3, parallel=2), "huge")), world.env.services, queue
    )
    refused = world.env.services.store.get_request(out["job_name"])
    assert refused is not None and refused.state == "refused"
    assert "can never run" in (refused.reason or "")


def test_a_waiting_request_expires_after_its_teams_max_wait(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "first")), services, queue)
    waiting = submit(read_record(record(f"{ids['nlp']}:ana", request(), "later")), services, queue)
    world.amt.clock.advance(timedelta(minutes=31).total_seconds())
    admit_waiting(services, queue)
    expired = services.store.get_request(waiting["job_name"])
    assert expired is not None and expired.state == "expired"
    assert any("expired" in t for t in slack_texts(world))


class CrashAfterCreate(SageMakerLauncher):
    """The consumer dies right after CreateHyperParameterTuningJob returned, before recording it."""

    crashes = 1

    def create_tuning_job(self, request: dict[str, Any]) -> Any:
        result = super().create_tuning_job(request)
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("Lambda timed out")
        return result


def test_a_crash_between_create_and_recording_creates_the_job_once(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    queue.launcher = CrashAfterCreate(world.env.sagemaker)
    sub = read_record(record(f"{ids['nlp']}:ana", request(), "once"))
    with pytest.raises(RuntimeError):
        submit(sub, services, queue)
    # SQS delivers the message again; the claim is still leased: nothing happens yet
    assert submit(sub, services, queue)["admitted"] == [
        {"job_name": job_name_for("nlp", "once"), "outcome": "claimed-elsewhere"}
    ]
    # After the lease, the next pass (a capacity event, the sweep, or the redelivery) finishes it
    world.amt.clock.advance(timedelta(minutes=6).total_seconds())
    [outcome] = admit_waiting(services, queue)
    assert outcome == {"job_name": job_name_for("nlp", "once"), "outcome": "admitted", "create": "exists"}
    assert created_jobs(world) == [job_name_for("nlp", "once")]
    assert list(services.store.read_ledger().reservations) == [job_name_for("nlp", "once")]


def admit_everything(entries: Any, holdings: Any, shares: Any, capacity: Any) -> list[QueueDecision]:
    """A scheduler as wrong as a stale view can make one: it proposes every request."""
    return [QueueDecision(e.job_name, "admit", "stale view") for e in entries]


def submit_at_once(subs: list[Any], services: Any, queue: QueueServices) -> list[dict[str, Any]]:
    """Each submission on its own thread, all released together (a barrier): concurrent consumers."""
    barrier = threading.Barrier(len(subs))

    def go(sub: Any) -> dict[str, Any]:
        barrier.wait()
        return submit(sub, services, queue)

    with ThreadPoolExecutor(max_workers=len(subs)) as pool:
        return list(pool.map(go, subs))


@pytest.mark.parametrize("stale", [False, True], ids=["fifo", "stale-scheduler"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_concurrent_submissions_never_over_admit(
    queue_world: Any, atomic_moto_requests: None, seed: int, stale: bool
) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    if stale:  # the ledger's serialized commit alone must hold the quota and the shares
        queue.scheduler = admit_everything
    # Given 10 submissions from both teams at once (1 to 3 instances each), quota 8, nlp's share 4
    sizes = [(seed * 7 + i * 3) % 3 + 1 for i in range(10)]
    subs = [
        read_record(
            record(
                f"{ids['nlp' if i % 2 else 'cv']}:u{i}",
                request(parallel=n, role=ROLE_ARN if i % 2 else CV_EXEC),
                f"c{seed}-{i}",
            )
        )
        for i, n in enumerate(sizes)
    ]
    submit_at_once(subs, services, queue)
    admit_waiting(services, queue)
    # Then what was created fits the quota and nlp's share, and each was created once
    ledger = services.store.read_ledger()
    created = created_jobs(world)
    assert created and sorted(ledger.reservations) == created
    assert sum(sum(r.on_demand.values()) for r in ledger.reservations.values()) <= 8
    assert sum(sum(r.on_demand.values()) for r in ledger.reservations.values() if r.team == "nlp") <= 4


class Throttled(SageMakerLauncher):
    def create_tuning_job(self, request: dict[str, Any]) -> Any:
        raise TransientError("CreateHyperParameterTuningJob: ThrottlingException")


def test_the_consumer_handler_creates_what_fits_drops_the_unreadable_and_returns_the_rest(queue_world: Any) -> None:
    world, queue, ids = queue_world
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="tuning-governor-submissions")["QueueUrl"]
    # Given a data scientist sends a request with the CLI's equivalent, and someone sends junk
    send_submission(sqs, url, request(), "cli-1")
    sqs.send_message(QueueUrl=url, MessageBody="not json")
    event = lambda_event(sqs, url, sender_id=f"{ids['nlp']}:ana")
    # When the consumer handles the batch
    out = queue_submissions.handler(
        event, FakeLambdaContext("queue-submissions"), services=world.env.services, queue=queue
    )
    # Then the request's job exists, and the junk is dropped, not retried
    assert out == {"batchItemFailures": []}
    assert created_jobs(world) == [job_name_for("nlp", "cli-1")]
    # And a throttled creation leaves its record to be delivered again
    queue.launcher = Throttled(world.env.sagemaker)
    send_submission(sqs, url, request(), "cli-2")
    event = lambda_event(sqs, url, sender_id=f"{ids['nlp']}:ana")
    out = queue_submissions.handler(
        event, FakeLambdaContext("queue-submissions"), services=world.env.services, queue=queue
    )
    assert out == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}


def test_a_job_ending_admits_the_request_waiting_for_its_capacity(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given nlp's first job holds its whole share and a second request waits
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "first")), services, queue)
    second = submit(read_record(record(f"{ids['nlp']}:ana", request(), "second")), services, queue)["job_name"]
    assert created_jobs(world) == [job_name_for("nlp", "first")]
    # When the first job ends and its terminal event reaches the consumer (EventBridge rule)
    ended: list[dict[str, Any]] = []
    for _ in range(48 * 60):
        world.amt.advance(60)
        ended += [
            e
            for e in world.amt.drain_events()
            if e["detail"].get("HyperParameterTuningJobStatus") in {"Completed", "Stopped", "Failed"}
        ]
        if ended:
            break
    assert ended, "the first job never ended"
    out = queue_submissions.handler(ended[0], FakeLambdaContext("queue-submissions"), services=services, queue=queue)
    # Then the waiting request is created, and its owner told
    assert out["admitted"] == [{"job_name": second, "outcome": "admitted", "create": "created"}]
    assert created_jobs(world) == sorted([job_name_for("nlp", "first"), second])
    assert list(services.store.read_ledger().reservations) == [second]


def test_the_simulator_runs_the_queue_on_the_memory_store_without_iam(world: World) -> None:
    # Given the in-memory store (replays, the simulator) and role ids known without IAM
    services = world.env.services
    services.store = MemoryStore()
    world.amt.set_applied_quota(P3, 8)
    submitter = f"arn:aws:iam::{ACCOUNT}:role/nlp-submit"
    policy = parse_policy(
        f"teams: {{nlp: {{submitters: ['{submitter}'], execution_roles: ['{ROLE_ARN}']}}}}\nquotas: {{{P3}: 8}}\n",
        "test",
    )
    services.policy = lambda: policy
    queue = QueueServices(SageMakerLauncher(world.env.sagemaker), StaticPrincipals({"AROASIMULATED0000001": submitter}))
    # When a request is submitted
    out = submit(read_record(record("AROASIMULATED0000001:sim", request(), "sim-1")), services, queue)
    # Then the stand-in runs it
    assert out["admitted"][0]["outcome"] == "admitted"
    assert created_jobs(world) == [job_name_for("nlp", "sim-1")]


class CrashAfterReserve(SageMakerLauncher):
    """The consumer dies after reserving the job's capacity, before CreateHyperParameterTuningJob."""

    crashes = 1

    def create_tuning_job(self, request: dict[str, Any]) -> Any:
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("Lambda timed out")
        return super().create_tuning_job(request)


def test_a_crash_after_reserving_is_finished_though_its_own_reservation_fills_the_share(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    queue.launcher = CrashAfterReserve(world.env.sagemaker)
    # Given a request of nlp's whole share (4) whose admission crashed after reserving it
    sub = read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "full"))
    with pytest.raises(RuntimeError):
        submit(sub, services, queue)
    assert created_jobs(world) == []
    # When its claim has lapsed and admission runs again
    world.amt.clock.advance(timedelta(minutes=6).total_seconds())
    [outcome] = admit_waiting(services, queue)
    # Then it is created on the reservation it holds, not kept waiting behind itself
    assert outcome == {"job_name": job_name_for("nlp", "full"), "outcome": "admitted", "create": "created"}
    assert created_jobs(world) == [job_name_for("nlp", "full")]


def test_a_request_without_an_instance_shape_is_refused_with_the_reason(queue_world: Any) -> None:
    world, queue, ids = queue_world
    req = request()
    del req["TrainingJobDefinition"]["ResourceConfig"]
    out = submit(read_record(record(f"{ids['nlp']}:ana", req, "shapeless")), world.env.services, queue)
    refused = world.env.services.store.get_request(out["job_name"])
    assert refused is not None and refused.state == "refused" and "instance type" in (refused.reason or "")


def test_a_standalone_training_job_ending_admits_the_request_waiting_for_its_instances(queue_world: Any) -> None:
    from governor_client.simulator.requests import training_job_request

    world, queue, ids = queue_world
    services = world.env.services
    # Given a standalone training job holds 6 of the 8 ml.p3.2xlarge, recorded by the governor
    world.env.sagemaker.create_training_job(
        **training_job_request("solo", team="cv", instance_type=P3, instance_count=6)
    )
    world.pump(60)
    # And nlp's request for 4 waits for them
    waiting = submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "after-solo")), services, queue)
    assert waiting["admitted"] == [] and created_jobs(world) == []
    # When the training job ends: the governor records it, then its end reaches the consumer (its rule)
    ended: list[dict[str, Any]] = []
    while not ended:
        world.amt.advance(60)
        for event in world.amt.drain_events():
            deliver_event(event, services)
            ended += [event] if event["detail"].get("TrainingJobStatus") == "Completed" else []
    out = queue_submissions.handler(ended[0], FakeLambdaContext("queue-submissions"), services=services, queue=queue)
    # Then the waiting request is created
    assert [o["outcome"] for o in out["admitted"]] == ["admitted"]
    assert created_jobs(world) == [job_name_for("nlp", "after-solo")]


def test_a_submission_cannot_write_the_resume_chain_and_a_comma_in_the_session_is_no_refusal(queue_world: Any) -> None:
    world, queue, ids = queue_world
    # Given a request carrying the governor's resume-chain tags, from a session whose name has a comma
    req = request()
    req["Tags"] += [{"Key": "governance:trials-used", "Value": "0"}, {"Key": "Governance:Resume-Root", "Value": "x"}]
    outcome = submit(read_record(record(f"{ids['nlp']}:ana,lab", req, "tok-chain")), world.env.services, queue)
    # Then the job is created without them, its owner tag a valid tag value
    name = job_name_for("nlp", "tok-chain")
    assert [o["outcome"] for o in outcome["admitted"]] == ["admitted"]
    arn = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)[
        "HyperParameterTuningJobArn"
    ]
    tags = {t["Key"]: t["Value"] for t in world.env.sagemaker.list_tags(ResourceArn=arn)["Tags"]}
    assert {k for k in tags if k.lower().startswith("governance:")} == {QUEUE_TOKEN_TAG}  # the governor's own
    assert tags["owner"] == "ana_lab"
