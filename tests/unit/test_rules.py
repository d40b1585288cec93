"""Each rule decides exactly at its boundary and not one trial or second before."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from tests.builders import facts_builder
from tuning_governor.domain.capacity import Holder, Quota, effective_limit
from tuning_governor.governance.capacity import capacity_facts
from tuning_governor.governance.rules import (
    BudgetRule,
    ConcurrencyRule,
    FailedTrialsRule,
    Rule,
    RuntimeRule,
    registry,
)
from tuning_governor.policy import GraceRule, Policy, parse_policy

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


facts = facts_builder(max_parallel=4, demand={"ml.p3.2xlarge": 4})


def policy(text: str) -> Policy:
    return parse_policy(text, "test")


#: The rules the governor ships with, in the order the engine judges them. A new rule is its own module
#: in governance/rules/ and needs no line here: the checks below hold for every registered rule.
SHIPPED = [
    "concurrency",
    "budget",
    "team-budget",
    "runtime",
    "stagnation",
    "tags",
    "large-batch",
    "failed-trials",
    "pricing",
]


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (itself, or inside Annotated, Optional, dict, list)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def _policy_field(path: str) -> Any:
    """The Policy model's field at a dotted policy key (``<team>`` stands for any team)."""
    model: type[BaseModel] | None = Policy
    field: Any = None
    for part in path.split("."):
        if part == "<team>":
            continue
        assert model is not None, f"{path}: {part!r} is below a plain value"
        assert part in model.model_fields, f"{path}: no policy key {part!r} in {model.__name__}"
        field = model.model_fields[part]
        models = _models_in(field.annotation)
        model = models[-1] if models else None
    return field


def test_every_rule_is_registered_with_a_name_triggers_permissions_and_policy_keys() -> None:
    names = [rule.name for rule in registry]
    assert [r.name for r in registry if r.name in SHIPPED] == SHIPPED, "the shipped rules' judging order"
    assert len({rule.order for rule in registry}) == len(names), "two rules declare the same order"
    for rule in registry:
        assert rule.name and rule.description and rule.triggers, rule
        # IAM actions, granted to the functions that judge the rule (tests/template checks the template).
        assert all(re.fullmatch(r"[a-z-]+:[A-Za-z]+", action) for action in rule.permissions), rule.name
        # Its configuration is the Policy model's part at its keys: each key must exist there.
        assert rule.policy_keys, rule.name
        for key in rule.policy_keys:
            assert _policy_field(key) is not None, key
    # Rules that only ever warn need no AWS call; the shipped rules that can breach may stop the job.
    assert {r.name for r in registry if not r.permissions} >= {"pricing", "tags"}


def test_a_policy_key_that_does_not_exist_is_caught() -> None:
    # The check above can fail: a misspelt key is not in the Policy model.
    with pytest.raises(AssertionError, match="no policy key"):
        _policy_field("defaults.max_failed_trial")


def test_every_rule_declares_how_the_engine_runs_it() -> None:
    # What the engine reads instead of a rule's name: its scope, whether the capacity ledger judges
    # it, whether it judges ended jobs, whether a grace period may delay its stop, whether it asks for
    # one-time checks.
    grace_rules = set(get_args(GraceRule))
    for rule in registry:
        assert rule.scope in {"job", "team"}
        assert isinstance(rule.admission_judged, bool)
        assert isinstance(rule.late_ok, bool)
        assert isinstance(rule.schedules_checks, bool)
        # A rule judged through the ledger runs only on arrival; one judged late runs on trials.
        assert not rule.admission_judged or rule.triggers == frozenset({"arrival"})
        assert not rule.late_ok or "trial" in rule.triggers
        # A grace period in the policy is accepted exactly for the rules whose breach may wait.
        assert rule.grace_able == (rule.name in grace_rules), rule.name
        # Only a rule that can ask for a check overrides check_at; team-wide rules act for a team only.
        assert rule.schedules_checks == (type(rule).check_at is not Rule.check_at), rule.name
        assert rule.scope == "job" or not (rule.late_ok or rule.grace_able or rule.admission_judged)
    declared = {
        rule.name: (rule.scope, rule.admission_judged, rule.late_ok, rule.grace_able, rule.schedules_checks)
        for rule in registry
    }
    shipped = {name: declared[name] for name in SHIPPED}
    assert shipped == {
        "concurrency": ("job", True, False, False, False),
        "budget": ("job", False, True, True, True),
        "team-budget": ("team", False, False, False, True),
        "runtime": ("job", False, False, True, False),
        "stagnation": ("job", False, True, True, False),
        "large-batch": ("job", False, False, False, False),
        "tags": ("job", False, False, False, False),
        "failed-trials": ("job", False, True, True, False),
        "pricing": ("job", False, True, False, False),
    }


def test_runtime_triggers_at_the_cap_not_one_second_before() -> None:
    rule, p = RuntimeRule(), policy("defaults: {max_runtime_hours: 2}")
    assert rule.evaluate(p, facts(now=T0 + timedelta(hours=2, seconds=-1))) is None
    decision = rule.evaluate(p, facts(now=T0 + timedelta(hours=2)))
    assert decision is not None
    assert decision.numbers == {"runtime_seconds": 7200, "cap_seconds": 7200}
    assert rule.evaluate(policy("defaults: {max_runtime_hours: 0}"), facts(now=T0 + timedelta(days=30))) is None


def test_failed_trials_trigger_at_the_limit_not_one_trial_before() -> None:
    rule, p = FailedTrialsRule(), policy("defaults: {max_failed_trials: 3}")
    assert rule.evaluate(p, facts(trials_failed=2)) is None
    decision = rule.evaluate(p, facts(trials_failed=3))
    assert decision is not None
    assert decision.numbers == {"failed": 3, "limit": 3}


# Stagnation (trials, minutes, dollars; direction per definition) is tested in test_stagnation.py.


def test_budget_breach_at_spent_equal_to_budget_not_a_cent_before() -> None:
    rule, p = BudgetRule(), policy("defaults: {budget_usd: 100}")
    assert rule.evaluate(p, facts(spent_usd=Decimal("99.99"), trials_finished=30)) is None
    decision = rule.evaluate(p, facts(spent_usd=Decimal("100.00"), trials_finished=30))
    assert decision is not None
    assert decision.verdict == "breach"


def test_budget_projection_warns_when_remaining_trials_would_exceed_it() -> None:
    rule, p = BudgetRule(), policy("defaults: {budget_usd: 100}")
    # $40 on 10 trials -> $4 a trial, 20 to go -> $120 projected
    decision = rule.evaluate(p, facts(spent_usd=Decimal(40), trials_finished=10))
    assert decision is not None
    assert decision.verdict == "warning"
    assert decision.numbers["projected_usd"] == Decimal("120.00")
    assert rule.evaluate(p, facts(spent_usd=Decimal(30), trials_finished=10)) is None  # $90 projected


def test_budget_is_not_judged_on_unpriced_spend() -> None:
    assert BudgetRule().evaluate(policy("defaults: {budget_usd: 1}"), facts(spent_usd=None, trials_finished=5)) is None


def test_budget_precedence_tag_over_team_over_default() -> None:
    p = policy("defaults: {budget_usd: 1000}\nteams: {vision: {budget_usd: 500}}")
    by_tag = BudgetRule().evaluate(
        p, facts(tags={"team": "vision", "governance:budget-usd": "50"}, spent_usd=Decimal(60))
    )
    by_team = BudgetRule().evaluate(p, facts(spent_usd=Decimal(600)))
    assert by_tag is not None
    assert by_tag.numbers["budget_usd"] == Decimal(50)
    assert by_team is not None
    assert by_team.numbers["budget_source"] == "team vision job budget"


def _capacity(usage: dict[str, int], demand: dict[str, int], quota: int | None, policy_quota: int | None = None) -> Any:
    holders = [Holder(key="other", kind="tuning-job", team="speech", instances=usage)]
    sq = {
        t: Quota(code="L-TEST0001", name=f"{t} for training job usage", value=quota) if quota is not None else None
        for t in demand
    }
    return capacity_facts(
        job_key="job",
        team="vision",
        demand=demand,
        holders=holders,
        policy_quotas=dict.fromkeys(demand, policy_quota) if policy_quota is not None else {},
        service_quotas=sq,
        team_limits={},
    )


def test_concurrency_fits_exactly_at_the_limit_and_breaches_one_instance_over() -> None:
    rule, p = ConcurrencyRule(), policy("mode: enforce")
    fits = _capacity({"ml.p3.2xlarge": 4}, {"ml.p3.2xlarge": 4}, quota=8)
    assert rule.evaluate(p, facts(demand={"ml.p3.2xlarge": 4}), fits) is None
    over = _capacity({"ml.p3.2xlarge": 4}, {"ml.p3.2xlarge": 5}, quota=8)
    decision = rule.evaluate(p, facts(demand={"ml.p3.2xlarge": 5}), over)
    assert decision is not None
    row = decision.numbers["instance_types"]["ml.p3.2xlarge"]
    assert (row["usage"], row["demand"], row["limit"], row["headroom"]) == (4, 5, 8, 4)


def test_the_job_itself_is_never_counted_in_usage() -> None:
    holders = [Holder(key="job", kind="tuning-job", team="vision", instances={"ml.p3.2xlarge": 8})]
    capacity = capacity_facts(
        job_key="job", team="vision", demand={"ml.p3.2xlarge": 8}, holders=holders,
        policy_quotas={"ml.p3.2xlarge": 8}, service_quotas={}, team_limits={},
    )  # fmt: skip
    assert ConcurrencyRule().evaluate(policy("{}"), facts(demand={"ml.p3.2xlarge": 8}), capacity) is None


@pytest.mark.parametrize(
    ("policy_quota", "service_quota", "expected"),
    [
        (8, 10, (8, "policy quotas")),
        (12, 10, (10, "Service Quota")),
        (None, 10, (10, "Service Quota")),
        (8, None, (8, "policy quotas")),
    ],
)
def test_effective_limit_is_the_lower_with_its_source(
    policy_quota: int | None, service_quota: int | None, expected: tuple[int, str]
) -> None:
    quota = Quota(code="L-X", name="n", value=service_quota) if service_quota is not None else None
    limit = effective_limit(policy_quota, quota)
    assert limit is not None
    assert limit.limit == expected[0]
    assert limit.source.startswith(expected[1])


def test_no_limit_known_is_reported_not_invented() -> None:
    capacity = _capacity({}, {"ml.x9.mega": 2}, quota=None)
    assert capacity.unknown_limits == ["ml.x9.mega"]
    assert ConcurrencyRule().evaluate(policy("{}"), facts(demand={"ml.x9.mega": 2}), capacity) is None
