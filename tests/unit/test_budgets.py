"""Budgets on accrued spend (finished + running trials) and team monthly budgets: pure rules and arithmetic."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import facts_builder
from tuning_governor.domain.pricing import PriceCatalog, PriceEntry
from tuning_governor.domain.spend import (
    MAX_CROSSING_SECONDS,
    RunningTrial,
    accrue,
    budget_crossing,
    month_bounds,
    running_trials,
    split_by_month,
    spot_factor,
)
from tuning_governor.governance.facts import JobFacts, TeamMonthFacts
from tuning_governor.governance.rules import BudgetRule, TeamBudgetRule
from tuning_governor.policy import Budget, FilePolicySource, Policy, PolicyError, parse_policy
from tuning_governor.policy.fields import MAX_BUDGET_USD

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
P3_8X = "ml.p3.8xlarge"
CATALOG = PriceCatalog(
    {"us-east-1": {P3_8X: PriceEntry(usd_per_hour=Decimal("14.688"), source="test", quality="price-list")}}
)


facts = facts_builder(
    team="nlp", tags={"team": "nlp"}, max_parallel=4, max_trials=4, demand={P3_8X: 32}, completed_objectives=[]
)


def policy(text: str) -> Policy:
    return parse_policy(text, "test")


def trial(name: str, start: datetime, **changes: Any) -> RunningTrial:
    values: dict[str, Any] = {
        "job_key": "job",
        "trial": name,
        "start": start,
        "instances": {P3_8X: 8},
        "region": "us-east-1",
    }
    return RunningTrial.model_validate(values | changes)


# -- accrual --------------------------------------------------------------------------------------------
def test_running_trials_accrue_elapsed_times_instances_times_price() -> None:
    # Given the job: 4 parallel trials of 8 x ml.p3.8xlarge, started 6 minutes ago
    running = [trial(f"t{i}", T0) for i in range(4)]
    accrual = accrue(running, T0 + timedelta(minutes=6), CATALOG, default_region=None, spot_discount=None)
    # Then each accrued 8 x $14.688 x 0.1 h, and the four together $47.0016
    assert accrual.per_trial == [Decimal("11.750400")] * 4
    assert accrual.usd == Decimal("47.001600")
    assert accrual.trials == 4


def test_a_spot_trial_accrues_at_the_discount_observed_on_finished_spot_trials() -> None:
    running = [trial("spot", T0, spot=True), trial("on-demand", T0)]
    # finished spot trials were billed $30 for $100 of on-demand time: a 70 % discount
    discount = spot_factor(Decimal(30), Decimal(100))
    assert discount == Decimal("0.3")
    accrual = accrue(running, T0 + timedelta(hours=1), CATALOG, default_region=None, spot_discount=discount)
    assert accrual.per_trial == [Decimal("35.251200"), Decimal("117.504000")]
    # with no spot trial finished yet, spot accrues at the on-demand price (never less than it may cost)
    assert spot_factor(0, 0) is None
    undiscounted = accrue(running, T0 + timedelta(hours=1), CATALOG, default_region=None, spot_discount=None)
    assert undiscounted.usd == Decimal("235.008000")


def test_accrual_stops_at_the_trials_stopping_condition_and_never_goes_negative() -> None:
    capped = trial("capped", T0, max_seconds=1800)
    future = trial("future", T0 + timedelta(hours=2))  # started after the deciding event's time
    accrual = accrue([capped, future], T0 + timedelta(hours=1), CATALOG, default_region=None, spot_discount=None)
    assert accrual.per_trial == [Decimal("58.752000"), Decimal("0.000000")]


def test_an_unpriced_running_trial_makes_the_accrual_unknown_never_zero() -> None:
    unknown = trial("odd", T0, instances={"ml.x9.mega": 2})
    accrual = accrue([unknown], T0 + timedelta(hours=1), CATALOG, default_region=None, spot_discount=None)
    assert accrual.usd is None
    assert accrual.unpriced_types == ["ml.x9.mega"]


def test_running_entries_are_read_from_a_job_map_and_from_team_attributes() -> None:
    entry = trial("a", T0).to_item()
    assert running_trials({"running": {"a": entry}}) == [trial("a", T0)]
    assert running_trials({"running#job#a": entry, "team": "nlp"}) == [trial("a", T0)]
    assert running_trials(None) == []


# -- the job budget -------------------------------------------------------------------------------------
def test_accrued_spend_breaches_the_job_budget_before_any_trial_finishes() -> None:
    decision = BudgetRule().evaluate(
        policy("defaults: {job_budget_usd: 50}"),
        facts(
            spent_usd=Decimal("50.01"),
            spent_finished_usd=Decimal(0),
            spent_accrued_usd=Decimal("50.01"),
            running_trials=4,
        ),
    )
    assert decision is not None
    assert decision.verdict == "breach"
    assert decision.numbers == {
        "spent_usd": Decimal("50.01"),
        "spent_finished_usd": Decimal(0),
        "spent_accrued_usd": Decimal("50.01"),
        "budget_usd": Decimal(50),
        "budget_source": "policy default job budget",
        "trials_finished": 0,
        "running_trials": 4,
        "burn_usd_per_hour": Decimal("0.00"),
        "stop_lead_seconds": 120,
        "at_stop_usd": Decimal("50.01"),
    }
    assert "$0.00 finished + $50.01 accrued by 4 running trials" in decision.message


def test_the_burn_counts_running_trials_until_their_stopping_condition() -> None:
    running = [trial("a", T0), trial("b", T0, spot=True), trial("capped", T0, max_seconds=1800)]
    accrual = accrue(running, T0 + timedelta(hours=1), CATALOG, default_region=None, spot_discount=Decimal("0.3"))
    # a: 8 x 14.688; b: the same at the observed spot discount; capped: ended by SageMaker at 30 min
    assert accrual.burn_usd_per_hour == Decimal("117.504") + Decimal("117.504") * Decimal("0.3")


def running_job(spent: str, burn: str) -> JobFacts:
    return facts(
        spent_usd=Decimal(spent),
        spent_finished_usd=Decimal(0),
        spent_accrued_usd=Decimal(spent),
        running_trials=4,
        burn_usd_per_hour=Decimal(burn),
    )


def test_the_budget_is_breached_when_what_a_stop_still_bills_would_reach_it() -> None:
    # Given $470.02/h burning (4 x 8 x ml.p3.8xlarge) and the default 120 s a stop takes: $15.67 more
    budget = policy("defaults: {job_budget_usd: 50}")
    # When $34.34 is spent, billing would end at $50.01 once stopped: stop now
    decision = BudgetRule().evaluate(budget, running_job("34.34", "470.016"))
    assert decision is not None and decision.verdict == "breach"
    assert decision.numbers["at_stop_usd"] == Decimal("50.01")
    assert "+ $15.67 billed while a stop takes effect (120 s at $470.02/h)" in decision.message
    # a cent less spent, and the bill would end under the budget: not yet
    assert BudgetRule().evaluate(budget, running_job("34.32", "470.016")) is None
    # with the lead set to 0 the budget itself is the line again
    at_budget = policy("defaults: {job_budget_usd: 50, budget_stop_lead_seconds: 0}")
    assert BudgetRule().evaluate(at_budget, running_job("49.99", "470.016")) is None
    assert BudgetRule().evaluate(at_budget, running_job("50", "470.016")) is not None


def test_the_next_check_falls_where_the_burn_meets_the_budget_less_the_stop_lead() -> None:
    budget = policy("defaults: {job_budget_usd: 50}")
    # $20 spent at $60/h: $2 of the remaining $30 goes to the stop's 120 s, $28 takes 28 minutes
    assert BudgetRule().check_at(budget, running_job("20", "60")) == T0 + timedelta(minutes=28)
    # nothing burning, no budget, or spend unknown: no check
    assert BudgetRule().check_at(budget, running_job("20", "0")) is None
    assert BudgetRule().check_at(policy("mode: monitor"), running_job("20", "60")) is None
    unknown = facts(spent_usd=None, spent_accrued_usd=None, burn_usd_per_hour=Decimal(60))
    assert BudgetRule().check_at(budget, unknown) is None
    # already past it: the check is now (the rule itself breaches)
    assert BudgetRule().check_at(budget, running_job("49", "60")) == T0


@given(
    spent=st.decimals(min_value=0, max_value=1000, places=2),
    burn=st.decimals(min_value=1, max_value=5000, places=2),
    lead=st.integers(min_value=0, max_value=600),
)
def test_at_the_check_time_the_rule_breaches_and_a_second_before_it_does_not(
    spent: Decimal, burn: Decimal, lead: int
) -> None:
    # The check is scheduled where the rule, judged with the spend grown at the burn, turns to breach.
    budget = policy(f"defaults: {{job_budget_usd: 1000, budget_stop_lead_seconds: {lead}}}")
    at = BudgetRule().check_at(budget, running_job(str(spent), str(burn)))
    assert at is not None

    def judged(when: datetime) -> bool:
        grown = spent + burn * Decimal(str((when - T0).total_seconds())) / 3600
        job = running_job(str(grown), str(burn)).model_copy(update={"now": when})
        decision = BudgetRule().evaluate(budget, job)
        return decision is not None and decision.verdict == "breach"

    # (to the second: the check time is a float number of seconds away)
    assert judged(at + timedelta(seconds=1))
    if at - timedelta(seconds=1) > T0:
        assert not judged(at - timedelta(seconds=1))


def test_spend_with_an_unpriced_running_trial_is_not_judged() -> None:
    decision = BudgetRule().evaluate(
        policy("defaults: {job_budget_usd: 1}"),
        facts(spent_usd=None, spent_finished_usd=Decimal(5), spent_accrued_usd=None, running_trials=1),
    )
    assert decision is None


def test_the_projection_counts_each_running_trial_at_the_mean_or_what_it_accrued() -> None:
    # $40 finished on 10 trials ($4 each); two running have accrued $1 and $6; 30 trials in all
    job = facts(
        max_trials=30,
        trials_finished=10,
        spent_usd=Decimal(47),
        spent_finished_usd=Decimal(40),
        spent_accrued_usd=Decimal(7),
        running_trials=2,
        running_accrued_usd=[Decimal(1), Decimal(6)],
    )
    decision = BudgetRule().evaluate(policy("defaults: {job_budget_usd: 121}"), job)
    # 47 spent + (4 - 1) still to come from the first running trial + 18 not started x $4 = 122
    assert decision is not None
    assert decision.verdict == "warning"
    assert decision.numbers["projected_usd"] == Decimal("122.00")
    assert BudgetRule().evaluate(policy("defaults: {job_budget_usd: 122}"), job) is None


# -- the team's month -----------------------------------------------------------------------------------
def month_facts(finished: str, accrued: str, **changes: Any) -> TeamMonthFacts:
    start, end = month_bounds(T0)
    values: dict[str, Any] = {
        "team": "nlp",
        "month": "2026-11",
        "month_start": start,
        "month_end": end,
        "finished_usd": Decimal(finished),
        "accrued_usd": Decimal(accrued),
        "running_trials": 3,
    }
    return TeamMonthFacts.model_validate(values | changes)


TEAM_POLICY = "teams: {nlp: {monthly_budget_usd: 1000}}"


def test_the_team_months_next_check_falls_where_its_burn_meets_the_monthly_budget() -> None:
    # A team $6 short of its month, burning $120/h: checked in 3 minutes, not at its next event
    rule, team = TeamBudgetRule(), policy(TEAM_POLICY)
    burning = month_facts("900", "94", burn_usd_per_hour=Decimal(120))
    assert rule.check_at(team, facts(now=T0, team_month=burning)) == T0 + timedelta(minutes=3)
    assert rule.evaluate(team, facts(now=T0 + timedelta(minutes=3), team_month=month_facts("900", "100"))) is not None
    # A crossing further off than the next sweep is left to the sweeps
    assert (
        rule.check_at(team, facts(now=T0, team_month=month_facts("900", "40", burn_usd_per_hour=Decimal(120)))) is None
    )
    # Nothing burning, a spend that is a lower bound, or no monthly budget: no check asked for
    assert rule.check_at(team, facts(now=T0, team_month=month_facts("900", "94"))) is None
    unpriced = month_facts("900", "94", burn_usd_per_hour=Decimal(120), unpriced_trials=1)
    assert rule.check_at(team, facts(now=T0, team_month=unpriced)) is None
    assert rule.check_at(policy("mode: enforce"), facts(now=T0, team_month=burning)) is None


def test_the_team_budget_breaches_when_finished_plus_accrued_reaches_it() -> None:
    rule = TeamBudgetRule()
    below = rule.evaluate(policy(TEAM_POLICY), facts(team_month=month_facts("900", "99.99")))
    assert below is not None
    assert below.verdict == "warning"  # a cent below: only the projection speaks
    decision = rule.evaluate(policy(TEAM_POLICY), facts(team_month=month_facts("900", "100")))
    assert decision is not None
    assert decision.verdict == "breach"
    numbers = decision.numbers
    assert (numbers["spent_finished_usd"], numbers["spent_accrued_usd"], numbers["spent_usd"]) == (900, 100, 1000)
    assert (numbers["team"], numbers["month"], numbers["budget_source"]) == (
        "nlp",
        "2026-11",
        "teams.nlp.monthly_budget_usd",
    )
    # a team without a monthly budget, or no team facts, is not judged
    assert rule.evaluate(policy("teams: {nlp: {job_budget_usd: 5}}"), facts(team_month=month_facts("9e9", "0"))) is None
    assert rule.evaluate(policy(TEAM_POLICY), facts()) is None


def test_the_team_projection_is_linear_in_the_month_with_at_least_a_day_elapsed() -> None:
    rule = TeamBudgetRule()
    # 30-day November; 9 h into day 30 = 29.375 days elapsed: $980 projects to $1000.85
    late = facts(now=T0, team_month=month_facts("900", "80"))
    decision = rule.evaluate(policy(TEAM_POLICY), late)
    assert decision is not None
    assert decision.verdict == "warning"
    assert decision.numbers["projected_usd"] == Decimal("1000.85")
    # one hour into the month, $20 counts as one day's spend: $600 projected, no warning
    start, _ = month_bounds(T0)
    early = facts(now=start + timedelta(hours=1), team_month=month_facts("0", "20"))
    assert rule.evaluate(policy(TEAM_POLICY), early) is None
    # while a trial of the month is unpriced the spend is a lower bound: no projection, but a breach still
    unknown = facts(team_month=month_facts("900", "80", unpriced_trials=1))
    assert rule.evaluate(policy(TEAM_POLICY), unknown) is None
    over = rule.evaluate(policy(TEAM_POLICY), facts(team_month=month_facts("1000", "0", unpriced_trials=1)))
    assert over is not None
    assert over.numbers["lower_bound"] is True


@given(
    start=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 1), timezones=st.just(UTC)),
    hours=st.floats(min_value=0.001, max_value=24 * 70),
    cents=st.integers(min_value=0, max_value=10**9),
)
def test_a_cost_split_over_months_adds_up_exactly(start: datetime, hours: float, cents: int) -> None:
    amount = Decimal(cents) / 100
    end = start + timedelta(hours=hours)
    parts = split_by_month(start, end, amount)
    assert sum(parts.values()) == amount
    assert list(parts) == sorted(parts)
    assert len(parts) <= 4
    assert all(part >= 0 for part in parts.values())


def test_a_trial_across_midnight_of_a_new_month_is_split_pro_rata() -> None:
    start = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)
    assert split_by_month(start, start + timedelta(hours=4), Decimal(100)) == {
        "2026-11": Decimal("25.000000"),
        "2026-12": Decimal("75.000000"),
    }
    assert split_by_month(None, start, Decimal(3)) == {"2026-11": Decimal(3)}


# -- policy keys ----------------------------------------------------------------------------------------
def test_job_budget_usd_is_the_per_job_budget_and_monthly_budget_usd_the_teams_month() -> None:
    p = policy(
        "teams: {nlp: {job_budget_usd: 200, monthly_budget_usd: 5000}, cv: {monthly_budget_usd: 0}}\n"
        "defaults: {job_budget_usd: 100}"
    )
    assert p.budget_for({"team": "nlp"}) == Budget(usd=Decimal(200), source="team")
    assert p.budget_for({"team": "other"}) == Budget(usd=Decimal(100), source="default")
    assert p.team_monthly_budget("nlp") == Decimal(5000)
    assert p.team_monthly_budget("cv") is None  # 0 = none
    assert p.team_monthly_budget(None) is None
    assert p.warnings() == []


def test_the_old_budget_usd_keys_still_work_with_a_warning() -> None:
    p = policy("teams: {nlp: {budget_usd: 200}}\ndefaults: {budget_usd: 100}")
    assert p.budget_for({"team": "nlp"}) == Budget(usd=Decimal(200), source="team")
    assert p.budget_for({}) == Budget(usd=Decimal(100), source="default")
    assert p.warnings() == [
        "defaults.budget_usd is deprecated: rename it to defaults.job_budget_usd (a budget per tuning job;"
        " teams.<team>.monthly_budget_usd is a team's budget for the month); the old name is read until the"
        " next release",
        "teams.nlp.budget_usd is deprecated: rename it to teams.nlp.job_budget_usd (a budget per tuning job;"
        " teams.<team>.monthly_budget_usd is a team's budget for the month); the old name is read until the"
        " next release",
    ]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("teams: {nlp: {budget_usd: 1, job_budget_usd: 2}}", "teams.nlp"),
        ("defaults: {budget_usd: 1, job_budget_usd: 2}", "defaults"),
    ],
)
def test_old_and_new_name_together_is_an_error(text: str, path: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "test")
    assert caught.value.problems == (
        f"{path}: set job_budget_usd only: budget_usd is its deprecated old name, and both are set",
    )


def test_a_policy_with_deprecated_keys_loads_and_logs_its_warnings_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a policy file still using the old per-job budget name
    path = tmp_path / "policy.yaml"
    path.write_text("teams: {nlp: {budget_usd: 200}}\n")
    source = FilePolicySource(path, max_age_seconds=0)
    # When it is loaded (twice: the second read finds the same text)
    with caplog.at_level(logging.WARNING):
        first = source.load()
        second = source.load()
    # Then it governs as before, says what to rename, and logs that once
    assert first.policy.budget_for({"team": "nlp"}) == Budget(usd=Decimal(200), source="team")
    assert (
        first.warnings
        == second.warnings
        == [
            "teams.nlp.budget_usd is deprecated: rename it to teams.nlp.job_budget_usd (a budget per tuning job;"
            " teams.<team>.monthly_budget_usd is a team's budget for the month); the old name is read until the"
            " next release"
        ]
    )
    logged = [r for r in caplog.records if r.getMessage() == "policy loaded with warnings"]
    assert len(logged) == 1


@settings(max_examples=300, deadline=None)
@given(
    budget=st.decimals(min_value=0, max_value=MAX_BUDGET_USD, allow_nan=False, places=2),
    spent=st.decimals(min_value=0, max_value=MAX_BUDGET_USD, allow_nan=False, places=2),
    burn=st.decimals(min_value=Decimal("0.000001"), max_value=Decimal(10**7), allow_nan=False, places=6),
    lead=st.integers(min_value=0, max_value=3600),
)
def test_a_crossing_is_within_a_year_or_none_for_every_budget_in_range(
    budget: Decimal, spent: Decimal, burn: Decimal, lead: int
) -> None:
    # Any budget the policy or a tag may set, any spend and any burn: never an OverflowError (issue 18,
    # finding 6: a $100,000,000 tag at $117/h crossed in the year 2124... then past datetime's range)
    now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    at = budget_crossing(spent=spent, burn_usd_per_hour=burn, budget=budget, lead_seconds=lead, now=now)
    assert at is None or now <= at <= now + timedelta(seconds=int(MAX_CROSSING_SECONDS))
