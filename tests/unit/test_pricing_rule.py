"""The pricing rule: a job priced approximately, or not at all, is reported once; never silently $0."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from tests.builders import facts_builder
from tuning_governor.domain.cost import pricing_facts
from tuning_governor.domain.pricing import PriceCatalog, PriceEntry
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.rules import PricingRule, registry
from tuning_governor.policy import parse_policy

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
CATALOG = PriceCatalog(
    {
        "us-east-1": {"ml.m5.xlarge": PriceEntry(usd_per_hour=Decimal("0.23"), source="t", quality="price-list")},
        "ap-south-1": {"ml.m5.xlarge": PriceEntry(usd_per_hour=Decimal("0.242"), source="t", quality="price-list")},
    }
)


facts = facts_builder(max_parallel=4, demand={"ml.m5.xlarge": 12}, completed_objectives=[])


def with_pricing(job: JobFacts, region: str, catalog: PriceCatalog = CATALOG, **recorded: Any) -> JobFacts:
    found = pricing_facts(job.demand, region, catalog, **recorded)
    return job.model_copy(
        update={
            "region": region,
            "unpriced_types": list(found.unpriced_types),
            "approximate_types": list(found.approximate_types),
            "price_notes": found.notes,
        }
    )


def test_pricing_rule_is_registered_for_arrivals_trials_and_sweeps_without_aws_calls() -> None:
    rule = registry.get("pricing")
    assert rule.triggers == {"arrival", "trial", "sweep"}
    assert rule.permissions == frozenset()


def test_a_job_priced_exactly_in_its_region_gets_no_warning() -> None:
    assert PricingRule().evaluate(parse_policy("{}", "t"), with_pricing(facts(), "us-east-1")) is None


def test_a_type_without_a_price_in_the_region_is_judged_at_its_highest_price_and_warned() -> None:
    decision = PricingRule().evaluate(parse_policy("{}", "t"), with_pricing(facts(), "eu-north-1"))

    assert decision is not None
    assert (decision.rule, decision.verdict) == ("pricing", "warning")
    assert decision.numbers["approximate_types"] == ["ml.m5.xlarge"]
    assert decision.numbers["budget_judged"] is True
    assert "ap-south-1" in decision.numbers["prices"]["ml.m5.xlarge"]
    assert "$0.242/h" in decision.message
    assert "eu-north-1" in decision.message


def test_a_type_priced_nowhere_names_the_type_and_says_the_budget_cannot_be_judged() -> None:
    job = with_pricing(facts(demand={"ml.x9.mega": 2}, spent_usd=None), "eu-north-1")

    decision = PricingRule().evaluate(parse_policy("defaults: {budget_usd: 50}", "t"), job)

    assert decision is not None
    assert decision.numbers["unpriced_types"] == ["ml.x9.mega"]
    assert decision.numbers["budget_judged"] is False
    assert decision.numbers["budget_usd"] == Decimal(50)
    assert "ml.x9.mega" in decision.message
    assert "never $0" in decision.message
    assert "$50.00 cannot be judged" in decision.message


def test_types_found_by_recorded_trials_count_too() -> None:
    # A trial ran on a type its demand did not list (e.g. an instance-config fallback).
    job = with_pricing(facts(), "us-east-1", recorded_unpriced=["ml.x9.mega", "unknown"])

    assert job.unpriced_types == ["ml.x9.mega"]
    assert job.approximate_types == []


def test_a_policy_price_for_the_region_removes_the_warning() -> None:
    policy = parse_policy("prices: {eu-north-1: {ml.m5.xlarge: 0.22}}", "t")
    catalog = CATALOG.with_policy_prices(policy.price_overrides(), policy.regional_prices())

    assert PricingRule().evaluate(policy, with_pricing(facts(), "eu-north-1", catalog)) is None
