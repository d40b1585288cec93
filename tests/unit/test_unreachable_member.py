"""A member whose role cannot be assumed: the event is retried (raised), and MembersUnreachable is
counted with the account and region, the metric template.yaml's UnmanagedMemberAlarm watches."""

from __future__ import annotations

import json

import pytest

from tuning_governor.adapters.assumed_roles import MemberUnreachable
from tuning_governor.app.envelope import handle_errors


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
