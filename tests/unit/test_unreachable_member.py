"""A member whose role cannot be assumed: the event is retried (raised), and MembersUnreachable is
counted with the account and region, the metric template.yaml's UnmanagedMemberAlarm watches."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from tuning_governor.adapters.assumed_roles import MemberUnreachable
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.app.envelope import handle_errors
from tuning_governor.errors import Disposition, PlaceDenied, PlaceUnreachable, disposition
from tuning_governor.models.place import Place


def test_an_unreachable_member_is_retried_and_counted_with_its_account(capsys: pytest.CaptureFixture[str]) -> None:
    def run() -> dict[str, str]:
        raise MemberUnreachable("111111111111", "eu-west-1", "AccessDenied")

    # When an event's processing cannot assume the member role
    with pytest.raises(MemberUnreachable):
        handle_errors("tuning", {"id": "e-1"}, run)

    # Then the metric names the account and region (its own EMF line, beside the service dimension)
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"MembersUnreachable"' in x]
    assert [(m["account"], m["region"], m["service"], m["MembersUnreachable"]) for m in lines] == [
        ("111111111111", "eu-west-1", "tuning-governor", [1.0])
    ]


class _DenyingSageMaker:
    """A SageMaker client whose caller's policy allows nothing (AWS's AccessDeniedException)."""

    def _deny(self, **_: object) -> None:
        error = {"Error": {"Code": "AccessDeniedException", "Message": "explicit deny"}}
        raise ClientError(error, "StopHyperParameterTuningJob")  # type: ignore[arg-type]

    stop_hyper_parameter_tuning_job = _deny
    describe_hyper_parameter_tuning_job = _deny


def test_a_member_role_refusing_a_call_is_a_retried_place_error_and_at_home_stays_the_aws_error() -> None:
    member = SageMakerGateway(_DenyingSageMaker(), place=Place("111111111111", "eu-west-1"))  # type: ignore[arg-type]
    home = SageMakerGateway(_DenyingSageMaker())  # type: ignore[arg-type]

    for call in (member.stop_tuning_job, member.describe_tuning_job):
        with pytest.raises(PlaceDenied) as caught:
            call("hpo")
        assert (caught.value.account, caught.value.region) == ("111111111111", "eu-west-1")
        assert disposition(caught.value) is Disposition.RETRY
        assert isinstance(caught.value, PlaceUnreachable)  # counted as MembersUnreachable by handle_errors
    with pytest.raises(ClientError):
        home.stop_tuning_job("hpo")
