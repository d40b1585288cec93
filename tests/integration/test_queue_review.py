"""Review of the submission path before it merges (docs/explanation/queue.md, "Review before merge"): defects found
by reading it, each shown here failing first.

The fixture and helpers are test_queue_submission's (two teams on moto's IAM and the AMT stand-in).
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.exceptions import ClientError

from tests.conftest import REGION
from tests.integration import test_queue_submission
from tests.integration.test_queue_submission import created_jobs, record, request, slack_texts
from tuning_governor.adapters.submissions import IamPrincipals
from tuning_governor.app.queue.admission import submit
from tuning_governor.app.queue.requests import build_entry, read_record
from tuning_governor.models.queue import job_name_for

#: The fixture of test_queue_submission, used here under its own name.
queue_world = test_queue_submission.queue_world


class DeniedFor:
    """An IAM client whose GetRole is denied for one role name, as AWS answers a caller whose role may
    not read that role (a role in another account, or outside the consumer's iam:GetRole resources)."""

    def __init__(self, client: Any, denied: str) -> None:
        self._client, self._denied = client, denied

    def get_role(self, RoleName: str) -> Any:
        if RoleName == self._denied:
            error = {"Error": {"Code": "AccessDenied", "Message": "not authorized to perform: iam:GetRole"}}
            raise ClientError(error, "GetRole")  # type: ignore[arg-type]
        return self._client.get_role(RoleName=RoleName)


def test_a_listed_submitter_iam_will_not_describe_does_not_block_the_others(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given the policy also lists, for team cv, a submitter role the consumer may not read (another
    # account's, or a typo in the account id), sorting before nlp's role
    policy = services.policy()
    other = "arn:aws:iam::000000000000:role/aaa-submit"
    cv = policy.teams["cv"].model_copy(update={"submitters": [*policy.teams["cv"].submitters, other]})
    changed = policy.model_copy(update={"teams": {**policy.teams, "cv": cv}})
    services.policy = lambda: changed
    queue.principals = IamPrincipals(DeniedFor(boto3.client("iam", region_name=REGION), "aaa-submit"))
    # When nlp's submitter sends a request that fits
    out = submit(read_record(record(f"{ids['nlp']}:ana", request(), "ok-1")), services, queue)
    # Then it is created: one unreadable listed role is no reason to refuse (or retry) everyone else
    assert out["admitted"][0]["outcome"] == "admitted"
    assert created_jobs(world) == [job_name_for("nlp", "ok-1")]


def test_a_listed_submitters_unreadable_request_is_refused_and_the_owner_told(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given nlp's submitter sends something that is no CreateHyperParameterTuningJob request
    req = request()
    del req["HyperParameterTuningJobConfig"]
    out = submit(read_record(record(f"{ids['nlp']}:ana", req, "broken")), services, queue)
    # Then it is refused, recorded with the reason, and the owner is told (not dropped in a log line)
    assert out["outcome"] == "refused"
    refused = services.store.get_request(job_name_for("nlp", "broken"))
    assert refused is not None and refused.state == "refused"
    assert 'Missing required parameter in input: "HyperParameterTuningJobConfig"' in (refused.reason or "")
    assert any("refused" in t and "HyperParameterTuningJobConfig" in t for t in slack_texts(world))
    assert created_jobs(world) == []


def test_a_queued_request_sagemaker_refuses_on_shape_is_refused_and_does_not_block_the_queue(
    queue_world: Any,
) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given a request already waiting whose shape SageMaker's API model refuses (queued before the
    # submission check existed, or by a path that does not check), ahead of a good one
    bad = build_entry(
        read_record(record(f"{ids['nlp']}:ana", request(), "old-bad")),
        services.policy(),
        queue.principals,
        services.clock(),
    )
    broken = dict(bad.request) | {"HyperParameterTuningJobConfig": {"Strategy": "Bayesian"}}
    services.store.enqueue(bad.model_copy(update={"request": broken}))
    # When admission runs (a good submission arrives)
    submit(read_record(record(f"{ids['nlp']}:ana", request(), "good")), services, queue)
    # Then the bad one is refused with SageMaker's reason, its capacity given back, and the good one created
    refused = services.store.get_request(bad.job_name)
    assert refused is not None and refused.state == "refused" and "ResourceLimits" in (refused.reason or "")
    assert created_jobs(world) == [job_name_for("nlp", "good")]
    assert bad.job_name not in services.store.read_ledger().reservations


def test_the_owner_tag_the_governor_reads_is_the_senders_session_whatever_its_key(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given a stack whose owner tag is not "owner" (OwnerTagKey: created-by)
    services.settings = services.settings.model_copy(update={"owner_tag": "created-by"})
    # When ana's session submits a request that names someone else as its owner under that key
    req = request()
    req["Tags"].append({"Key": "Created-By", "Value": "mallory"})
    submit(read_record(record(f"{ids['nlp']}:ana", req, "owned")), services, queue)
    # Then the job's owner tag, under the stack's key, is the session AWS named, and only that one
    name = job_name_for("nlp", "owned")
    arn = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)[
        "HyperParameterTuningJobArn"
    ]
    tags = [(t["Key"], t["Value"]) for t in world.env.sagemaker.list_tags(ResourceArn=arn)["Tags"]]
    assert [(k, v) for k, v in tags if k.casefold() in {"created-by", "owner"}] == [("created-by", "ana")]


def test_each_report_names_the_submission_the_owner_sent(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given ana submits two requests under her own tokens (the job names are hashes she never sees)
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "churn-monday")), services, queue)
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "churn-tuesday")), services, queue)
    # Then each report says which of her submissions it is about, by her token
    texts = slack_texts(world)
    assert any("churn-monday" in t and "admitted" in t for t in texts)
    assert any("churn-tuesday" in t and "queued, position 1" in t for t in texts)


def test_a_redelivered_submission_that_must_be_refused_is_refused(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given a submission without an instance shape, enqueued by a first delivery that then crashed
    # before refusing it
    req = request()
    del req["TrainingJobDefinition"]["ResourceConfig"]
    sub = read_record(record(f"{ids['nlp']}:ana", req, "shapeless-again"))
    services.store.enqueue(build_entry(sub, services.policy(), queue.principals, services.clock()))
    # When SQS delivers it again
    submit(sub, services, queue)
    # Then it is refused with the reason and its owner told, not left waiting (or created)
    refused = services.store.get_request(job_name_for("nlp", "shapeless-again"))
    assert refused is not None and refused.state == "refused" and "instance type" in (refused.reason or "")
    assert any("shapeless-again" in t and "refused" in t for t in slack_texts(world))
    assert created_jobs(world) == []


def test_a_redelivered_submission_still_waiting_is_reported_queued_once(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given nlp's share is full, and a second submission whose first delivery enqueued it and crashed
    # before telling its owner
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "first")), services, queue)
    sub = read_record(record(f"{ids['nlp']}:ana", request(), "told-late"))
    services.store.enqueue(build_entry(sub, services.policy(), queue.principals, services.clock()))
    # When SQS delivers it again, twice
    submit(sub, services, queue)
    submit(sub, services, queue)
    # Then its owner is told it is queued, once
    told = [t for t in slack_texts(world) if "told-late" in t and "queued, position 1" in t]
    assert len(told) == 1


def test_a_token_already_used_for_another_request_is_told_to_its_sender(queue_world: Any) -> None:
    world, queue, ids = queue_world
    services = world.env.services
    # Given ana's submission "run-1"
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=2), "run-1")), services, queue)
    # When bob, of the same team, sends another request under the same token (twice: SQS redelivers)
    bobs = read_record(record(f"{ids['nlp']}:bob", request(parallel=1), "run-1"))
    out = submit(bobs, services, queue)
    submit(bobs, services, queue)
    # Then bob is told, once, that his token names ana's submission; ana's job is the only one
    told = [t for t in slack_texts(world) if "already names" in t]
    assert out["outcome"] == "token-taken" and len(told) == 1 and "bob" in told[0]
    assert created_jobs(world) == [job_name_for("nlp", "run-1")]
    # And ana's own redelivery stays a silent duplicate
    again = submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=2), "run-1")), services, queue)
    assert again["outcome"] == "duplicate" and len([t for t in slack_texts(world) if "already names" in t]) == 1
