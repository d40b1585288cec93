"""Near-miss tag keys (issue 17, mechanism 10): a key one slip away from a governance key is reported,
naming the key it is close to; common unrelated keys are not."""

from __future__ import annotations

import pytest

from tuning_governor.policy import parse_policy
from tuning_governor.policy.tags import edit_distance

POLICY = parse_policy("defaults: {job_budget_usd: 1000}", "test")


@pytest.mark.parametrize(
    ("key", "close_to"),
    [
        ("governance:budget_usd", "governance:budget-usd"),  # underscore for hyphen
        ("Governance:Budget-USD", "governance:budget-usd"),  # case
        ("Governance:Budget_USD", "governance:budget-usd"),  # both
        (" governance:budget-usd ", "governance:budget-usd"),  # surrounding spaces
        ("governance:budgt-usd", "governance:budget-usd"),  # one letter dropped
        ("governance:budegt-usd", "governance:budget-usd"),  # two letters swapped
        ("governance:exmept", "governance:exempt"),
        ("governance_exempt", "governance:exempt"),
        ("governance:exemptt", "governance:exempt"),
        ("Team", "team"),
        ("team ", "team"),
    ],
)
def test_a_key_one_slip_from_a_governance_key_is_warned_about_naming_that_key(key: str, close_to: str) -> None:
    # Given a job tagged with a misspelt governance key
    warnings = POLICY.tag_warnings({key: "50"})
    # Then one warning names the tag as written and the key it is close to, and it is not honoured
    assert [w.key for w in warnings] == [key]
    assert close_to in warnings[0].problem
    assert warnings[0].problem.startswith("ignored")
    if "budget" in close_to:
        assert POLICY.budget_for({key: "50"}).source == "default"
    if "exempt" in close_to:
        assert not POLICY.is_exempt({key: "true"})


@pytest.mark.parametrize(
    "key",
    [
        "Name",
        "name",
        "team",
        "teams",
        "term",
        "project",
        "owner",
        "cost-center",
        "CostCenter",
        "env",
        "governance",
        "governance:owner",
        "governance:budget-eur-cents",
        "aws:cloudformation:stack-name",
        "sagemaker:domain-arn",
    ],
)
def test_unrelated_keys_get_no_warning(key: str) -> None:
    assert POLICY.tag_warnings({key: "50"}) == []


def test_the_exact_keys_get_no_near_miss_warning() -> None:
    assert POLICY.tag_warnings({"governance:budget-usd": "50", "governance:exempt": "false", "team": "x"}) == []


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("", "", 0),
        ("abc", "abc", 0),
        ("abc", "", 3),
        ("budget", "budgt", 1),
        ("budget", "budegt", 1),
        ("kitten", "sitting", 3),
        ("ab", "ba", 1),
        ("ca", "abc", 3),
    ],
)
def test_edit_distance_counts_insertions_deletions_substitutions_and_adjacent_swaps(
    a: str, b: str, distance: int
) -> None:
    assert edit_distance(a, b) == distance
    assert edit_distance(b, a) == distance
