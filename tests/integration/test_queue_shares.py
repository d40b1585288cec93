"""The queue's admission loop on the shares core (docs/queue.md, "Integration: the queue on the
shares core"): on moto and the AMT stand-in, through ``submit`` as the consumer runs it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from governor_sim.scenarios import ROLE_ARN
from tests.conftest import REGION
from tests.integration.conftest import World
from tests.integration.test_queue_submission import CV_EXEC, P3, _role, created_jobs, record, request, slack_texts
from tuning_governor.adapters.submissions import IamPrincipals, SageMakerLauncher
from tuning_governor.app.queue_admission import QueueServices, submit
from tuning_governor.app.queue_requests import read_record
from tuning_governor.models.queue import job_name_for
from tuning_governor.policy import parse_policy


@pytest.fixture
def shares_world(world: World) -> tuple[World, QueueServices, dict[str, str]]:
    """A quota of 8 ml.p3.2xlarge: nlp's RESERVE share 4, cv no share (the pool: the other 4)."""
    world.amt.set_applied_quota(P3, 8)
    iam = boto3.client("iam", region_name=REGION)
    nlp_arn, nlp_id = _role(iam, "nlp-submit")
    cv_arn, cv_id = _role(iam, "cv-submit")
    policy = parse_policy(
        f"""
mode: enforce
quotas: {{{P3}: 8}}
teams:
  nlp:
    submitters: ["{nlp_arn}"]
    execution_roles: ["{ROLE_ARN}"]
    share: {{capacity_limits: {{{P3}: 4}}, resource_sharing: RESERVE}}
  cv: {{submitters: ["{cv_arn}"], execution_roles: ["{CV_EXEC}"]}}
""",
        "test",
    )
    world.env.services.policy = lambda: policy
    queue = QueueServices(launcher=SageMakerLauncher(world.env.sagemaker), principals=IamPrincipals(iam))
    return world, queue, {"nlp": nlp_id, "cv": cv_id}


def test_a_reserved_share_stays_for_its_team_while_another_team_waits(shares_world: Any) -> None:
    world, queue, ids = shares_world
    services = world.env.services
    # Given cv (no share) holds the pool's 4 instances
    submit(
        read_record(record(f"{ids['cv']}:bo", request(parallel=4, team="cv", role=CV_EXEC), "cv-1")), services, queue
    )
    # When cv asks for 2 more while nlp's reserved share of 4 is idle
    out = submit(
        read_record(record(f"{ids['cv']}:bo", request(parallel=2, team="cv", role=CV_EXEC), "cv-2")), services, queue
    )
    # Then cv's second request waits: nlp's RESERVE share is kept for nlp
    assert out["admitted"] == []
    assert created_jobs(world) == [job_name_for("cv", "cv-1")]
    # And nlp's request is created on its share at once
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "nlp-1")), services, queue)
    assert created_jobs(world) == sorted([job_name_for("cv", "cv-1"), job_name_for("nlp", "nlp-1")])
    assert any("admitted on its share" in t for t in slack_texts(world))


def test_a_request_above_what_its_team_can_ever_hold_is_refused_with_the_reason(shares_world: Any) -> None:
    world, queue, ids = shares_world
    out = submit(
        read_record(record(f"{ids['cv']}:bo", request(parallel=6, team="cv", role=CV_EXEC), "cv-big")),
        world.env.services,
        queue,
    )
    assert out["outcome"] == "queued" and out["admitted"][0]["outcome"] == "refused"
    assert "above the 4 team cv can ever hold" in out["admitted"][0]["reason"]
    assert created_jobs(world) == []
