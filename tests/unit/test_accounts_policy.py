"""accounts.<id> in the policy, and whether an event's source account is a governed member."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from tuning_governor.policy.accounts import AccountPolicy, Accounts, Place, membership

HOME = Place("123456789012", "us-east-1")
ACCOUNTS = {
    "111111111111": AccountPolicy(team="vision", mode="enforce"),
    "222222222222": AccountPolicy(team="vision", regions=["eu-west-1"]),
}


def _event(account: str, region: str = "eu-west-1", **detail: Any) -> dict[str, Any]:
    return {"account": account, "region": region, "resources": [], "detail": detail}


def test_accounts_are_validated_with_clear_errors() -> None:
    parse = TypeAdapter(Accounts).validate_python
    assert parse({"111111111111": {"team": "vision"}})["111111111111"].mode == "monitor"
    with pytest.raises(ValidationError, match="12-digit AWS account id"):
        parse({"12345": {}})
    with pytest.raises(ValidationError, match="region such as eu-west-1"):
        parse({"111111111111": {"regions": ["Europe"]}})
    with pytest.raises(ValidationError, match="enforce"):
        parse({"111111111111": {"mode": "stop"}})


def test_a_listed_member_is_governed_in_its_mode_and_team() -> None:
    verdict = membership(_event("111111111111"), ACCOUNTS, HOME, policy_enforcing=True)
    assert (verdict.governed, verdict.team, verdict.enforcing) == (True, "vision", True)
    assert verdict.place == Place("111111111111", "eu-west-1")
    # monitor by default; and a monitoring policy enforces nowhere
    assert membership(_event("222222222222"), ACCOUNTS, HOME, policy_enforcing=True).enforcing is False
    assert membership(_event("111111111111"), ACCOUNTS, HOME, policy_enforcing=False).enforcing is False


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (_event("333333333333"), "not listed under accounts"),
        (_event("222222222222", "us-east-1"), "not among account 222222222222's regions"),
        (_event("11111111111x"), "no 12-digit account"),
        (
            _event(
                "111111111111",
                HyperParameterTuningJobArn="arn:aws:sagemaker:eu-west-1:222222222222:hyper-parameter-tuning-job/x",
            ),
            "names another account",
        ),
    ],
)
def test_an_event_from_outside_the_membership_is_rejected_with_a_reason(event: dict[str, Any], reason: str) -> None:
    verdict = membership(event, ACCOUNTS, HOME, policy_enforcing=True)
    assert not verdict.governed
    assert reason in verdict.reason


def test_without_accounts_only_the_home_account_is_governed() -> None:
    assert membership(_event(HOME.account, HOME.region), {}, HOME, policy_enforcing=True).governed
    assert not membership(_event("111111111111"), {}, HOME, policy_enforcing=True).governed


def test_the_home_account_is_governed_in_the_policys_mode_unless_it_is_listed() -> None:
    # Given accounts that do not list the home account: its events are still governed, as the policy says
    verdict = membership(_event(HOME.account, HOME.region), ACCOUNTS, HOME, policy_enforcing=True)
    assert (verdict.governed, verdict.enforcing) == (True, True)
    # And listed, it takes its own terms
    listed = ACCOUNTS | {HOME.account: AccountPolicy(mode="monitor")}
    assert membership(_event(HOME.account, HOME.region), listed, HOME, policy_enforcing=True).enforcing is False


def test_accounts_is_a_policy_key_and_an_unquoted_id_is_refused_with_a_reason() -> None:
    from tuning_governor.policy import PolicyError, parse_policy

    policy = parse_policy('accounts:\n  "111111111111": {team: vision, mode: enforce}\n  "222222222222":\n', "test")
    assert policy.accounts["111111111111"] == AccountPolicy(team="vision", mode="enforce")
    assert policy.accounts["222222222222"] == AccountPolicy()
    with pytest.raises(PolicyError, match="as a quoted string"):
        parse_policy("accounts: {111111111111: {}}", "test")
    with pytest.raises(PolicyError, match='did you mean "mode"'):
        parse_policy('accounts: {"111111111111": {mod: enforce}}', "test")
