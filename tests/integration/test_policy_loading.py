"""Loading the policy from an SSM parameter (moto) through Powertools' SSMProvider: caching, reload on
change, and an invalid update that keeps the last good policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import SSMProvider

from tests.conftest import REGION
from tuning_governor.policy import PolicyError, PolicyUnavailable, SsmPolicySource, load_policy, policy_source

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient

PARAMETER = "/tuning-governor/policy"
VISION = "mode: enforce\nteams:\n  vision:\n    instances: {ml.p3.2xlarge: 4}\n    budget_usd: 500\n"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ssm(mocked_aws: None) -> SSMClient:
    return boto3.client("ssm", region_name=REGION)


@pytest.fixture
def put(ssm: SSMClient) -> Callable[..., None]:
    def put(value: str, kind: str = "String") -> None:
        ssm.put_parameter(Name=PARAMETER, Value=value, Type=kind, Overwrite=True)  # type: ignore[arg-type]

    return put


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def source(ssm: SSMClient, clock: Clock) -> SsmPolicySource:
    source = policy_source(parameter=PARAMETER, ssm=SSMProvider(boto3_client=ssm), max_age_seconds=300, clock=clock)
    assert isinstance(source, SsmPolicySource)
    return source


@pytest.mark.parametrize("kind", ["String", "SecureString"])
def test_the_policy_is_read_from_a_parameter(put: Callable[..., None], source: SsmPolicySource, kind: str) -> None:
    put(VISION, kind)

    loaded = load_policy(source)

    assert loaded.source == f"ssm:{PARAMETER}"
    assert loaded.policy.enforcing
    assert loaded.policy.team_limit("vision", "ml.p3.2xlarge") == 4
    assert loaded.error is None and not loaded.stale


def test_a_json_parameter_is_read_too(put: Callable[..., None], source: SsmPolicySource) -> None:
    put('{"mode": "enforce", "quotas": {"ml.g5.xlarge": 16}}')

    assert load_policy(source).policy.account_limit("ml.g5.xlarge") == 16


def test_a_change_applies_after_max_age(put: Callable[..., None], source: SsmPolicySource, clock: Clock) -> None:
    # Given a loaded policy
    put(VISION)
    assert load_policy(source).policy.mode == "enforce"

    # When an operator switches to monitor mode
    put(VISION.replace("mode: enforce", "mode: monitor"))

    # Then the cached policy applies until max_age, and the new one from then on
    clock.now = 299
    assert load_policy(source).policy.mode == "enforce"
    clock.now = 300
    assert load_policy(source).policy.mode == "monitor"


def test_an_unchanged_parameter_is_not_parsed_again(
    put: Callable[..., None], source: SsmPolicySource, clock: Clock
) -> None:
    put(VISION)
    first = load_policy(source)

    put(VISION)  # a new parameter version with the same text
    clock.now = 301
    again = load_policy(source)

    assert again.policy is first.policy
    assert again.digest == first.digest


def test_an_invalid_update_keeps_the_last_good_policy(
    put: Callable[..., None], source: SsmPolicySource, clock: Clock
) -> None:
    put(VISION)
    good = load_policy(source)

    # When someone saves a policy with a negative team limit
    put(VISION.replace("{ml.p3.2xlarge: 4}", "{ml.p3.2xlarge: -4}"))
    clock.now = 300
    reported = load_policy(source)
    clock.now = 600
    later = load_policy(source)

    # Then governance goes on under the last good policy; the problem is surfaced once, with its path
    assert reported.policy is good.policy and later.policy is good.policy
    assert isinstance(reported.error, PolicyError)
    assert str(reported.error) == (
        f"policy ssm:{PARAMETER} is invalid:\n"
        '  - teams.vision.instances["ml.p3.2xlarge"]: expected a number >= 0, got -4'
    )
    assert later.error is None
    assert reported.stale and later.stale

    # When it is fixed, the fix applies at the next refresh
    put(VISION.replace("budget_usd: 500", "budget_usd: 800"))
    clock.now = 900
    fixed = load_policy(source)
    assert fixed.policy.budget_for({"team": "vision"}).usd == 800
    assert not fixed.stale and fixed.error is None


def test_an_invalid_parameter_with_no_good_policy_raises(put: Callable[..., None], source: SsmPolicySource) -> None:
    put("mode: enforce\ndefaults:\n  max_runtime_hours: -1\n")

    with pytest.raises(PolicyError, match=r"defaults\.max_runtime_hours: expected a number >= 0, got -1"):
        load_policy(source)


def test_a_missing_parameter_raises_a_transient_error(source: SsmPolicySource) -> None:
    with pytest.raises(PolicyUnavailable, match="ParameterNotFound"):
        load_policy(source)


def test_a_deleted_parameter_keeps_the_last_good_policy(
    put: Callable[..., None], ssm: SSMClient, source: SsmPolicySource, clock: Clock
) -> None:
    put(VISION)
    good = load_policy(source)

    ssm.delete_parameter(Name=PARAMETER)
    clock.now = 300
    loaded = load_policy(source)

    assert loaded.policy is good.policy and loaded.stale
    assert isinstance(loaded.error, PolicyUnavailable)
