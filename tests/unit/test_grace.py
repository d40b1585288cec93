"""Grace periods: the policy key, and what a breach becomes before, at and after its notice's time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tuning_governor.governance import grace
from tuning_governor.models.decisions import Decision
from tuning_governor.policy import PolicyError, parse_policy

T = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def breach(at: datetime = T, verdict: str = "breach", rule: str = "budget") -> Decision:
    return Decision(
        rule=rule,
        verdict=verdict,  # type: ignore[arg-type]
        job_key="job",
        job_name="Job",
        team="nlp",
        message="spent $51.00 >= budget $50.00 (tag governance:budget-usd)",
        numbers={"spent_usd": 51, "budget_usd": 50},
        at=at,
    )


def test_grace_minutes_are_read_per_rule_and_zero_or_absent_means_none() -> None:
    policy = parse_policy("defaults: {grace_minutes: {budget: 30, runtime: 0, failed-trials: 2.5}}", "test")
    assert policy.grace_for("budget") == timedelta(minutes=30)
    assert policy.grace_for("failed-trials") == timedelta(minutes=2.5)
    assert policy.grace_for("runtime") is None
    assert policy.grace_for("stagnation") is None
    assert parse_policy("{}", "test").grace_for("budget") is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "defaults: {grace_minutes: {concurrency: 10}}",
            "defaults.grace_minutes: concurrency: concurrency is judged once, when the job arrives",
        ),
        ("defaults: {grace_minutes: {team-budget: 10}}", "defaults.grace_minutes: team-budget: team-budget stops"),
        (
            "defaults: {grace_minutes: {budgets: 10}}",
            "defaults.grace_minutes.budgets: bad key: did you mean \"budget\"? expected 'budget', 'runtime',"
            " 'stagnation' or 'failed-trials'",
        ),
        ("defaults: {grace_minutes: {budget: -1}}", "defaults.grace_minutes.budget: expected a number >= 0, got -1"),
        ("defaults: {grace_minutes: {budget: yes}}", "defaults.grace_minutes.budget: expected a number, got true"),
        ("defaults: {grace_minutes: {budget: 50000}}", "defaults.grace_minutes.budget: "),
        ("defaults: {grace_minutes: 30}", "defaults.grace_minutes: expected a mapping, got 30"),
    ],
)
def test_a_bad_grace_period_is_refused_with_its_path_and_why(text: str, problem: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "test")
    assert any(p.startswith(problem) for p in caught.value.problems), caught.value.problems


def test_a_first_breach_becomes_a_notice_with_the_stop_time_and_the_breach_figures() -> None:
    policy = parse_policy("{}", "test")
    step = grace.step(breach(), timedelta(minutes=30), None, policy)
    assert step.check_at == T + timedelta(minutes=30)
    assert step.decision is not None
    assert step.decision.verdict == "grace" and not step.decision.wants_stop
    assert step.decision.numbers == {
        "spent_usd": 51,
        "budget_usd": 50,
        "grace_minutes": 30,
        "stop_at": "2026-11-30T09:30:00+00:00",
    }
    assert step.decision.message.endswith(
        "stop at 2026-11-30T09:30:00+00:00 unless its budget is raised (tag governance:budget-usd, or the"
        " team's or default job budget in the policy), or it is tagged governance:exempt=true"
    )


def stored(notice: Decision) -> dict[str, Any]:
    # As the store hands a decision row back: times as ISO strings.
    return notice.model_dump(mode="json")


def test_a_breach_before_the_notice_time_waits_and_one_at_or_after_it_is_acted_on() -> None:
    policy = parse_policy("{}", "test")
    period = timedelta(minutes=30)
    first = grace.step(breach(), period, None, policy).decision
    assert first is not None
    waiting = grace.step(breach(T + timedelta(minutes=29, seconds=59)), period, stored(first), policy)
    assert waiting.decision is None and waiting.check_at == T + period
    due = grace.step(breach(T + period), period, stored(first), policy)
    assert due.check_at is None and due.decision is not None
    assert due.decision.verdict == "breach"
    assert due.decision.numbers["grace_stop_at"] == "2026-11-30T09:30:00+00:00"
    assert due.decision.numbers["noticed_at"].startswith("2026-11-30T09:00:00")
    later = grace.step(breach(T + timedelta(hours=5)), period, stored(first), policy)
    assert later.decision is not None and later.decision.verdict == "breach"


def test_warnings_and_rules_without_grace_pass_through_unchanged() -> None:
    policy = parse_policy("{}", "test")
    warning = breach(verdict="warning")
    assert grace.step(warning, timedelta(minutes=30), None, policy) == grace.GraceStep(warning)
    assert grace.step(breach(), None, None, policy) == grace.GraceStep(breach())
