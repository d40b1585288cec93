"""Member credentials on moto: AssumeRole into another account id lands in that account's backends."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
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


class _SlowSts:
    """An STS whose AssumeRole takes a while to answer."""

    def __init__(self) -> None:
        self.calls = 0

    def assume_role(self, **_: Any) -> Any:
        self.calls += 1
        time.sleep(0.05)  # the first caller holds the place's lock while the others reach it
        expiry = datetime.now(UTC) + timedelta(hours=1)
        return {"Credentials": {"AccessKeyId": "A", "SecretAccessKey": "S", "SessionToken": "T", "Expiration": expiry}}


def test_threads_asking_for_one_place_at_once_share_one_assume_role() -> None:
    sts = _SlowSts()
    roles = AssumedRoles(sts, "tg-member")
    start = threading.Barrier(8)

    def ask(region: str) -> str:
        start.wait()  # all eight ask at the same moment
        return roles.credentials(MEMBER, region).session_token

    with ThreadPoolExecutor(max_workers=8) as pool:
        tokens = list(pool.map(ask, ["us-east-1"] * 6 + ["eu-west-1"] * 2))

    # One AssumeRole per place, not one per thread; every thread got the place's credentials
    assert (sts.calls, roles.fetched) == (2, 2)
    assert tokens == ["T"] * 8


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


@pytest.mark.usefixtures("mocked_aws")
def test_in_organisation_mode_the_client_factory_reaches_members_through_their_role(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tuning_governor.adapters import sessions
    from tuning_governor.models.place import Place
    from tuning_governor.settings import get_settings

    home = boto3.client("sts", region_name="us-east-1").get_caller_identity()["Account"]
    monkeypatch.setenv("TOPIC_ARN", f"arn:aws:sns:us-east-1:{home}:reports")
    monkeypatch.setenv("TABLE_NAME", "tuning-governor")
    monkeypatch.setenv("GOVERNOR_ORGANIZATION_ID", "o-exampleorg1")
    monkeypatch.setenv("GOVERNOR_MEMBER_ROLE", "tg-member")
    get_settings.cache_clear()
    sessions.default_clients.cache_clear()
    try:
        clients = sessions.default_clients()
        # When a member's and the home account's clients are asked for, in two regions
        member = clients.client(Place(MEMBER, "eu-west-1"), "sts").get_caller_identity()
        at_home = clients.client(Place(home, "eu-west-1"), "sts").get_caller_identity()
        # Then the member's calls are made as its member role in its account, the home's as itself
        assert member["Account"] == MEMBER
        assert member["Arn"].startswith(f"arn:aws:sts::{MEMBER}:assumed-role/tg-member-eu-west-1/")
        assert at_home["Account"] == home and "assumed-role" not in at_home["Arn"]
    finally:
        get_settings.cache_clear()
        sessions.default_clients.cache_clear()


def test_a_member_session_whose_role_is_denied_raises_the_typed_retried_error() -> None:
    from tuning_governor.adapters.assumed_roles import MemberSessions
    from tuning_governor.models.place import Place

    provider = MemberSessions("123456789012", AssumedRoles(_DenyingSts(), "tg-member"), boto3.session.Session)

    with pytest.raises(MemberUnreachable) as caught:
        provider.session_for(Place(MEMBER, "eu-west-1"))

    assert (caught.value.account, caught.value.region) == (MEMBER, "eu-west-1")
    assert disposition(caught.value) is Disposition.RETRY


@pytest.mark.usefixtures("mocked_aws")
def test_member_sessions_share_one_data_loader_and_still_act_in_their_own_account() -> None:
    from tuning_governor.adapters.assumed_roles import MemberSessions
    from tuning_governor.models.place import Place

    roles = AssumedRoles(boto3.client("sts", region_name="us-east-1"), "tg-member")
    provider = MemberSessions("123456789012", roles, boto3.session.Session)

    # When sessions are made for two members (a botocore session of their own each)
    sessions = {account: provider.session_for(Place(account, "eu-west-1")) for account in (MEMBER, OTHER)}

    # Then they parse the service models once (one loader: ~20 MB a place otherwise, benchmarks/org_calls.py)
    loaders = {id(s._session.get_component("data_loader")) for s in sessions.values()}
    assert len(loaders) == 1
    # And each still acts in its own account
    for account, session in sessions.items():
        assert session.client("sts").get_caller_identity()["Account"] == account
