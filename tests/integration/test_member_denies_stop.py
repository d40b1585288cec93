"""A member whose role refuses the stop (issue 29): an alarmed, retried failure that loses nothing.

The member's role is assumed (moto STS), but its policy was changed in the member account to deny
sagemaker:StopHyperParameterTuningJob. moto does not enforce IAM policies by default, so the denial is
what AWS answers (the common error AccessDeniedException), raised by a botocore hook (``provide-client-params``, before the request is sent) on
the governor's client for that account and region only. The event that needs the stop fails with a
retried error (``PlaceDenied``, Disposition RETRY) and a metric and a log line naming the account; no
decision is recorded as stopped meanwhile; redelivered once the role is fixed, the stop is made once.
(An event from an unregistered account and a forged event: tests/integration/test_membership.py.)
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

import training_events
import tuning_events
from governor_client.simulator.runner import FakeLambdaContext
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tuning_governor.adapters.assumed_roles import AssumedRoles
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.sessions import Clients
from tuning_governor.errors import Disposition, PlaceDenied, disposition
from tuning_governor.models.events import TRAINING_DETAIL_TYPE
from tuning_governor.models.place import Place
from tuning_governor.policy import parse_policy

HOME = Place("123456789012", "us-east-1")
MEMBER = Place("111111111111", "eu-west-1")
NAME = "p3-budget"
KEY = f"{MEMBER.account}/{MEMBER.region}/{NAME}"
POLICY = (
    f"mode: enforce\ndefaults: {{budget_stop_lead_seconds: 0}}\naccounts: {{'{MEMBER.account}': {{mode: enforce}}}}\n"
)


class MemberRoles:
    """Credentials of the member role, assumed on moto (one AssumeRole per account and region)."""

    def __init__(self, role: str) -> None:
        self.roles = AssumedRoles(boto3.client("sts", region_name=HOME.region), role)

    def session_for(self, place: Place) -> Any:
        return boto3.session.Session(**self.roles.session_kwargs(place.account, place.region))


class MemberRole:
    """The governor's SageMaker in the member place, whose role denies the stop while ``denies``."""

    def __init__(self, world: World) -> None:
        self.denies = True
        self.refused: list[str] = []
        self.stopped: list[str] = []
        clients = Clients(HOME.region, HOME.account, provider=MemberRoles("tg-member"))

        @cache
        def sagemaker_at(place: Place) -> SageMakerGateway:
            client = clients.for_place(place).sagemaker
            client.meta.events.register("provide-client-params.sagemaker.StopHyperParameterTuningJob", self._deny)
            client.meta.events.register("after-call.sagemaker.StopHyperParameterTuningJob", self._made)
            return SageMakerGateway(client, sleep=lambda _s: None, place=place)

        world.env.services.sagemaker_at = sagemaker_at
        policy = parse_policy(POLICY, "test")
        world.env.services.policy = lambda: policy

    def _deny(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["stop_of"] = params["HyperParameterTuningJobName"]
        if self.denies:
            self.refused.append(params["HyperParameterTuningJobName"])
            message = "not authorized to perform: sagemaker:StopHyperParameterTuningJob with an explicit deny"
            raise ClientError(
                {"Error": {"Code": "AccessDeniedException", "Message": message}}, "StopHyperParameterTuningJob"
            )

    def _made(self, context: dict[str, Any], **_: Any) -> None:
        self.stopped.append(context["stop_of"])


def _handle(event: dict[str, Any], world: World) -> BaseException | None:
    """The handler template.yaml routes ``event`` to, as Lambda runs it: what it raised, if anything."""
    kind, handler = (
        ("training-events", training_events.handler)
        if event["detail-type"] == TRAINING_DETAIL_TYPE
        else ("tuning-events", tuning_events.handler)
    )
    try:
        handler(event, FakeLambdaContext(kind), services=world.env.services)
    except Exception as exc:  # EventBridge retries it: held here for redelivery
        return exc
    return None


def _run(world: World, failed: list[tuple[dict[str, Any], BaseException]], minutes: int, after: int = 0) -> None:
    """Deliver what the stand-in emits minute by minute, until idle or ``after`` minutes past a failure."""
    for _ in range(minutes):
        if after and failed:
            after -= 1
            if not after:
                return
        world.amt.advance(60)
        for event in world.amt.drain_events():
            if (error := _handle(event, world)) is not None:
                failed.append((event, error))
        if world.amt.idle():
            return


def _stopped_decisions(world: World) -> list[dict[str, Any]]:
    items = world.env.services.store.items(KEY)
    return [i for i in items if str(i["sk"]).startswith("DECISION#") and i.get("action") == "stopped"]


@pytest.mark.usefixtures("roomy_quota")
def test_a_member_role_denying_the_stop_is_retried_alarmed_and_the_stop_made_once_when_fixed(
    world: World, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    role = MemberRole(world)
    member = MemberRoles("member-team").session_for(MEMBER).client("sagemaker", region_name=MEMBER.region)
    # Given a member's job that crosses its $50 budget while the member role denies the stop
    member.create_hyper_parameter_tuning_job(
        **seed_tuning_request(
            NAME,
            team="nlp",
            instance_type="ml.p3.8xlarge",
            instance_count=8,
            max_parallel=2,
            max_jobs=50,
            extra_tags={"governance:budget-usd": "50"},
        )
    )
    failed: list[tuple[dict[str, Any], BaseException]] = []
    _run(world, failed, minutes=48 * 60, after=10)

    # Then every event that needed the stop failed with a retried error naming the member's place
    assert failed and role.refused and role.stopped == []
    assert all(isinstance(error, PlaceDenied) for _, error in failed), [type(e) for _, e in failed]
    assert all(disposition(error) is Disposition.RETRY for _, error in failed)
    first = failed[0][1]
    assert isinstance(first, PlaceDenied)
    assert (first.account, first.region) == (MEMBER.account, MEMBER.region)
    assert "AccessDeniedException on StopHyperParameterTuningJob" in str(first)
    # And a metric and a log line name the account
    emitted = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{") and "_aws" in x]
    unreachable = [m for m in emitted if "MembersUnreachable" in m]
    assert len(unreachable) == len(failed)
    assert {(m["account"], m["region"]) for m in unreachable} == {(MEMBER.account, MEMBER.region)}
    lines = [r for r in caplog.records if r.getMessage().endswith("event's member is unreachable")]
    assert len(lines) == len(failed)
    assert all(getattr(r, "account", None) == MEMBER.account for r in lines)
    # And nothing is recorded as stopped, in SageMaker or in the table
    assert _status(member) == "InProgress"
    assert _stopped_decisions(world) == []

    # When the member's role is fixed and EventBridge redelivers the failed events (then the rest flow)
    role.denies = False
    still_failing = [error for event, error in failed if _handle(event, world) is not None]
    _run(world, [], minutes=48 * 60)

    # Then the stop is made once, in the member's place, and recorded once as stopped
    assert still_failing == []
    assert role.stopped == [NAME]
    assert _status(member) == "Stopped"
    [decision] = _stopped_decisions(world)
    assert decision["sk"] == "DECISION#budget#breach"
    assert _status(world.env.sagemaker, missing_ok=True) == "missing"  # nothing done at home


def _status(client: Any, *, missing_ok: bool = False) -> str:
    try:
        described = client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=NAME)
    except ClientError:
        if missing_ok:
            return "missing"
        raise
    return str(described["HyperParameterTuningJobStatus"])
