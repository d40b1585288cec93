"""The policy's ``prices``: one price for every region, or prices for one region; errors at their path."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tuning_governor.policy import PolicyError, parse_policy


def test_all_region_and_per_region_prices_side_by_side() -> None:
    policy = parse_policy(
        "prices:\n  ml.p3.2xlarge: 3.825\n  eu-west-1:\n    ml.p3.2xlarge: 4.1\n    ml.g5.xlarge: 1.6\n", "t"
    )

    assert policy.price_overrides() == {"ml.p3.2xlarge": Decimal("3.825")}
    assert policy.regional_prices() == {"eu-west-1": {"ml.p3.2xlarge": Decimal("4.1"), "ml.g5.xlarge": Decimal("1.6")}}


def test_a_region_with_no_prices_listed_is_empty() -> None:
    assert parse_policy("prices: {eu-north-1: }", "t").regional_prices() == {"eu-north-1": {}}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("prices: {ml.p3.2xlarge: 0}", 'prices["ml.p3.2xlarge"]: expected a number > 0, got 0'),
        ("prices: {eu-west-1: 4.1}", "prices.eu-west-1: expected a mapping, got 4.1"),
        ("prices: {ml.g5.xlarge: {eu-west-1: 1}}", 'prices["ml.g5.xlarge"]: expected a number, got a mapping'),
        ("prices: {eu-west-1: {ml.g5.xlarge: abc}}", 'prices.eu-west-1["ml.g5.xlarge"]: expected a number, got "abc"'),
        ("prices: {eu-west-1: {ml.g5.xlarge: -1}}", 'prices.eu-west-1["ml.g5.xlarge"]: expected a number > 0, got -1'),
        ("prices: {eu-west-1: {ML.G5.XLARGE: 1}}", 'prices.eu-west-1["ML.G5.XLARGE"]: bad key: expected a SageMaker'),
        (
            "prices: {eu-wset-1: {ml.g5.xlarge: 1}}",
            "prices.eu-wset-1: bad key: unknown region (did you mean eu-west-1?)",
        ),
        ("prices: {p3.2xlarge: 3.8}", 'prices["p3.2xlarge"]: bad key: expected an instance type ml.<family>.<size>'),
        ("prices: [3.8]", "prices: expected a mapping, got a list"),
    ],
)
def test_each_bad_price_is_reported_at_its_path(text: str, problem: str) -> None:
    with pytest.raises(PolicyError) as excinfo:
        parse_policy(text, "t")

    assert len(excinfo.value.problems) == 1
    assert excinfo.value.problems[0].startswith(problem), excinfo.value.problems


def test_every_bad_price_is_reported_not_only_the_first() -> None:
    with pytest.raises(PolicyError) as excinfo:
        parse_policy("prices: {ml.a.b: 0, eu-west-1: {ml.c.d: x}, nowhere: 1}", "t")

    assert len(excinfo.value.problems) == 3
