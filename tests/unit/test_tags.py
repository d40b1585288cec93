"""Governance tags as people write them: budget spellings, bad values and mis-cased keys, each warned about."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from tests.builders import job_facts
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.rules import TagsRule, registry
from tuning_governor.policy import Policy, parse_budget_tag, parse_policy, tag_lookup

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
POLICY = parse_policy("teams: {vision: {budget_usd: 500}}\ndefaults: {budget_usd: 1000}", "test")


@pytest.mark.parametrize(
    ("raw", "amount"),
    [
        ("50", Decimal(50)),
        ("50.00", Decimal("50.00")),
        (" 99.5 ", Decimal("99.5")),
        ("$50", Decimal(50)),
        ("$ 50", Decimal(50)),
        ("50 USD", Decimal(50)),
        ("50USD", Decimal(50)),
        ("USD 50", Decimal(50)),
        ("usd 50", Decimal(50)),
        ("50 usd", Decimal(50)),
        ("1,000", Decimal(1000)),
        ("$1,250,000.50", Decimal("1250000.50")),
        ("USD 1,000", Decimal(1000)),
        ("0", Decimal(0)),
    ],
)
def test_a_budget_tag_is_read_in_every_usual_spelling(raw: str, amount: Decimal) -> None:
    assert parse_budget_tag(raw) == amount


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "lots",
        "-5",
        "$-5",
        "1e3",
        "nan",
        "Infinity",
        "50 EUR",
        "EUR 50",
        "USD 50 USD",
        "$50$",
        "1,00",  # not a thousands grouping: a decimal comma, or a typo
        "50,5",
        "1 000",
        "5O",
        "\u0665\u0660",  # Arabic-Indic digits: int() would take them, a person reading the tag would not
        ".5",
        "50.",
    ],
)
def test_anything_else_is_not_a_budget(raw: str) -> None:
    assert parse_budget_tag(raw) is None


def test_a_bad_budget_value_is_ignored_with_a_warning_naming_the_tag_and_value_and_the_next_source_applies() -> None:
    budget = POLICY.budget_for({"team": "vision", "governance:budget-usd": "fifty"})

    assert (budget.usd, budget.source) == (Decimal(500), "team")
    assert budget.warning is not None
    assert 'governance:budget-usd="fifty"' in budget.warning


def test_a_budget_key_that_matches_only_case_insensitively_is_not_honoured() -> None:
    tags = {"team": "vision", "Governance:Budget-USD": "20"}

    budget = POLICY.budget_for(tags)

    assert (budget.usd, budget.source) == (Decimal(500), "team")
    assert budget.warning is not None
    assert "Governance:Budget-USD" in budget.warning
    assert "governance:budget-usd" in budget.warning


def test_an_exemption_key_that_matches_only_case_insensitively_is_not_honoured() -> None:
    assert not POLICY.is_exempt({"Governance:Exempt": "true"})
    assert POLICY.is_exempt({"governance:exempt": "TRUE"})


def test_tag_lookup_finds_the_exact_key_and_names_near_misses() -> None:
    assert tag_lookup({"governance:exempt": "true"}, "governance:exempt") == ("true", None)
    assert tag_lookup({}, "governance:exempt") == (None, None)
    value, warning = tag_lookup({"GOVERNANCE:EXEMPT": "true"}, "governance:exempt")
    assert value is None
    assert warning is not None
    assert "GOVERNANCE:EXEMPT" in warning
    assert "case-sensitive" in warning


def test_tag_warnings_cover_budget_values_key_spelling_and_exemption_values() -> None:
    warnings = POLICY.tag_warnings({"governance:budget-usd": "50 EUR", "Governance:Exempt": "true", "team": "vision"})
    assert {(w.key, w.value) for w in warnings} == {
        ("governance:budget-usd", "50 EUR"),
        ("Governance:Exempt", "true"),
    }
    [exempt_value] = POLICY.tag_warnings({"governance:exempt": "yes"})
    assert (exempt_value.key, exempt_value.value) == ("governance:exempt", "yes")
    assert POLICY.tag_warnings({"governance:budget-usd": "USD 50", "governance:exempt": "false"}) == []


def facts(tags: dict[str, str]) -> JobFacts:
    return job_facts(team=tags.get("team"), tags=tags, max_trials=10)


def test_the_tags_rule_turns_tag_problems_into_one_warning_decision() -> None:
    rule = registry.get("tags")
    assert isinstance(rule, TagsRule)
    assert rule.evaluate(POLICY, facts({"team": "vision", "governance:budget-usd": "$50"})) is None

    decision = rule.evaluate(POLICY, facts({"governance:budget-usd": "fifty", "Governance:Exempt": "true"}))

    assert decision is not None
    assert (decision.rule, decision.verdict, decision.wants_stop) == ("tags", "warning", False)
    assert {key: row["value"] for key, row in decision.numbers["tags"].items()} == {
        "governance:budget-usd": "fifty",
        "Governance:Exempt": "true",
    }
    assert "fifty" in decision.message
    assert "Governance:Exempt" in decision.message


def test_the_tag_keys_come_from_the_policy() -> None:
    policy: Policy = parse_policy("budget_tag: finops/budget\nexempt_tag: finops/skip", "test")
    assert policy.budget_for({"FinOps/Budget": "20"}).usd is None
    assert [w.key for w in policy.tag_warnings({"FinOps/Budget": "20", "finops/skip": "true"})] == ["FinOps/Budget"]
