"""Member credentials on moto: AssumeRole into another account id lands in that account's backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tuning_governor.adapters.assumed_roles import AssumedRoles, MemberUnreachable
from tuning_governor.errors import Disposition, disposition

MEMBER = "111111111111"
OTHER = "222222222222"


@pytest.mark.usefixtures("mocked_aws")
def test_credentials_act_in_the_member_account_and_are_cached_per_account_and_region() -> None:
    roles = AssumedRoles(boto3.client("sts", region_name="us-east-1"), "tg-member")

    # When a client is made from the member's credentials in two regions
    for region in ("us-east-1", "eu-west-1"):
        sts = boto3.session.Session(**roles.session_kwargs(MEMBER, region)).client("sts")
        # Then its calls land in the member account, never the hub's
        assert sts.get_caller_identity()["Account"] == MEMBER
    boto3.session.Session(**roles.session_kwargs(OTHER, "us-east-1")).client("sts")
    for _ in range(10):
        roles.credentials(MEMBER, "us-east-1")

    # And one AssumeRole per (account, region), however many events follow
    assert roles.fetched == 3
    assert roles.role_arn(MEMBER, "eu-west-1") == "arn:aws:iam::111111111111:role/tg-member-eu-west-1"


@pytest.mark.usefixtures("mocked_aws")
def test_credentials_are_fetched_again_shortly_before_they_expire() -> None:
    now = [datetime.now(UTC)]
    roles = AssumedRoles(boto3.client("sts", region_name="us-east-1"), "tg-member", clock=lambda: now[0])
    roles.credentials(MEMBER, "us-east-1")

    now[0] += timedelta(minutes=56)  # within 5 minutes of the hour's expiry
    roles.credentials(MEMBER, "us-east-1")

    assert roles.fetched == 2


class _DenyingSts:
    def assume_role(self, **_: Any) -> Any:
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not trusted"}}, "AssumeRole")


def test_a_denied_assume_role_is_a_typed_retried_error_naming_the_member() -> None:
    roles = AssumedRoles(_DenyingSts(), "tg-member")

    with pytest.raises(MemberUnreachable) as caught:
        roles.credentials(MEMBER, "us-east-1")

    assert (caught.value.account, caught.value.region, caught.value.reason) == (MEMBER, "us-east-1", "AccessDenied")
    assert disposition(caught.value) is Disposition.RETRY
    assert roles.fetched == 0
