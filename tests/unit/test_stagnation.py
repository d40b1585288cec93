"""Stagnation: AMT's 1 % rule, the direction per definition, and trials / minutes / dollars since the last
improvement, judged from the state kept on the job item."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import facts_builder
from tests.conftest import load_event
from tuning_governor.domain.stagnation import (
    StagnationState,
    improves,
    objectives_from_item,
    resolve_objective,
    trials_since_improvement,
)
from tuning_governor.governance.rules import StagnationRule
from tuning_governor.models.objectives import DefinitionObjective, ObjectiveSpec
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.policy import parse_policy

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
MIN = ObjectiveSpec(metric="validation:rmse", type="Minimize")
MAX = ObjectiveSpec(metric="validation:auc", type="Maximize")


def fold(
    values: list[float], objective: ObjectiveSpec = MIN, step: timedelta = timedelta(minutes=5)
) -> StagnationState:
    state = StagnationState()
    for i, value in enumerate(values):
        state = state.advance(value, objective, T0 + step * i)
    return state


facts = facts_builder(max_trials=30, demand={"ml.m5.xlarge": 1}, objective_type=None)


# -- AMT's 1 % -----------------------------------------------------------------------------------------
def test_an_improvement_of_exactly_one_percent_counts_as_an_improvement() -> None:
    assert improves(99.0, 100.0, minimize=True)
    assert improves(0.808, 0.8, minimize=False)  # 0.8 * 1.01 is 0.8080000000000001 in floats
    assert improves(98.01, 99.0, minimize=True)
    assert not improves(99.01, 100.0, minimize=True)
    assert not improves(0.8079, 0.8, minimize=False)


def test_the_margin_is_one_percent_of_the_absolute_best_for_negative_objectives() -> None:
    assert improves(-101.0, -100.0, minimize=True)
    assert not improves(-100.5, -100.0, minimize=True)
    assert improves(-99.0, -100.0, minimize=False)
    assert not improves(-99.5, -100.0, minimize=False)


def test_a_best_of_zero_has_a_relative_margin_of_zero() -> None:
    # Any strictly better value improves on 0; an equal one does not.
    assert improves(-1e-9, 0.0, minimize=True)
    assert not improves(0.0, 0.0, minimize=True)
    assert improves(1e-9, 0.0, minimize=False)
    assert not improves(0.0, 0.0, minimize=False)


def test_trials_since_improvement_counts_exact_one_percent_steps_as_improvements() -> None:
    assert trials_since_improvement([100.0, 99.0, 98.01, 97.0299], minimize=True) == 0
    assert trials_since_improvement([1.0, 0.995, 0.992], minimize=True) == 2


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=40), st.booleans())
def test_the_incremental_state_counts_like_the_whole_history(values: list[float], minimize: bool) -> None:
    objective = MIN if minimize else MAX
    state = fold(values, objective)
    assert state.trials_seen == len(values)
    assert state.trials_since == trials_since_improvement(values, minimize=minimize)
    assert 0 <= state.trials_since < len(values)


@given(st.lists(st.floats(min_value=0.01, max_value=1.0), min_size=1, max_size=50))
def test_the_count_is_reset_only_by_a_new_best_of_one_percent_or_more(values: list[float]) -> None:
    since = trials_since_improvement(values, minimize=False)
    tail = values[len(values) - since - 1 :]
    assert all(not improves(v, tail[0], minimize=False) for v in tail[1:])
    assert all(v < tail[0] * 1.01 + 1e-12 for v in tail[1:])


# -- direction per definition ----------------------------------------------------------------------------
TWO_DEFINITIONS = [
    DefinitionObjective(definition="xgb", metric="validation:rmse", type="Minimize"),
    DefinitionObjective(definition="linear", metric="validation:r2", type="Maximize"),
]


def test_a_trial_is_judged_on_its_own_definitions_objective() -> None:
    # By the definition name when the trial carries it (AMT's trial summaries do)
    assert resolve_objective(TWO_DEFINITIONS, definition_name="linear") == ObjectiveSpec(
        metric="validation:r2", type="Maximize"
    )
    # By the metric AMT names in the trial's hyperparameters
    assert resolve_objective(TWO_DEFINITIONS, hyperparameters={"_tuning_objective_metric": "validation:rmse"}) == (
        ObjectiveSpec(metric="validation:rmse", type="Minimize")
    )
    # By the objective metric the trial reported
    assert resolve_objective(TWO_DEFINITIONS, reported_metrics={"train:r2", "validation:r2"}) == ObjectiveSpec(
        metric="validation:r2", type="Maximize"
    )
    # Nothing ties the trial to one definition: not judged rather than judged the wrong way round
    assert resolve_objective(TWO_DEFINITIONS) is None


def test_a_per_definition_objective_is_read_from_the_job_and_wins_over_nothing_at_the_top() -> None:
    job = TuningJob.model_validate(load_event("tuning-multi-definition-inprogress.json")["detail"])
    assert job.objective is None  # no top-level HyperParameterTuningJobObjective
    objectives = objectives_from_item([o.model_dump() for o in job.objectives()])
    assert {(o.definition, o.metric, o.type) for o in objectives} == {
        ("xgb-cpu", "validation:auc", "Maximize"),
        ("xgb-gpu", "validation:auc", "Maximize"),
    }
    assert resolve_objective(objectives) == ObjectiveSpec(metric="validation:auc", type="Maximize")


def test_a_definition_without_its_own_objective_takes_the_top_level_one() -> None:
    detail = load_event("tuning-inprogress.json")["detail"]
    job = TuningJob.model_validate(detail)
    [objective] = job.objectives()
    assert job.objective is not None
    assert (objective.metric, objective.type) == (job.objective.metric_name, job.objective.type)


# -- the incremental state -------------------------------------------------------------------------------
def test_the_state_follows_a_minimize_objective_that_keeps_improving() -> None:
    state = fold([0.9, 0.8, 0.7, 0.6])
    assert (state.trials_since, state.best_objective, state.direction) == (0, 0.6, "Minimize")
    assert state.improved_at == T0 + timedelta(minutes=15)


def test_a_late_trial_that_ended_before_the_last_improvement_is_not_counted_since_it() -> None:
    state = fold([0.9, 0.8])
    late = state.advance(0.85, MIN, T0 + timedelta(minutes=1))
    assert (late.trials_seen, late.trials_since) == (3, 0)
    assert late.advance(0.85, MIN, T0 + timedelta(minutes=20)).trials_since == 1


def test_definitions_with_different_metrics_keep_a_best_each() -> None:
    r2 = ObjectiveSpec(metric="validation:r2", type="Maximize")
    state = StagnationState().advance(0.5, MIN, T0).advance(0.3, r2, T0 + timedelta(minutes=1))
    # 0.3 is the first r2: a best of its own, not a worse rmse
    assert (state.trials_since, state.bests) == (0, {"Minimize:validation:rmse": 0.5, "Maximize:validation:r2": 0.3})
    state = state.advance(0.299, r2, T0 + timedelta(minutes=2))
    assert state.trials_since == 1


def test_the_state_survives_the_round_trip_through_the_job_item() -> None:
    state = fold([0.9, 0.8, 0.85]).model_copy(update={"spent_at_improvement": Decimal("12.34")})
    item = state.to_item()
    # As DynamoDB gives it back: numbers as Decimal, times as ISO strings
    stored = item | {
        "bests": {k: Decimal(str(v)) for k, v in item["bests"].items()},
        "best_objective": Decimal(str(item["best_objective"])),
        "improved_at": item["improved_at"].isoformat(),
    }
    assert StagnationState.from_item(stored) == state
    assert StagnationState.from_item(None) is None


# -- the rule: trials, minutes, dollars -----------------------------------------------------------------
def test_an_improving_minimize_job_is_not_stopped() -> None:
    rule, p = StagnationRule(), parse_policy("defaults: {stagnation_trials: 2}", "test")
    state = fold([0.9, 0.8, 0.7, 0.6, 0.5])
    assert rule.evaluate(p, facts(stagnation=state, now=T0 + timedelta(minutes=20))) is None


def test_trials_measure_trips_at_the_limit_not_one_trial_before() -> None:
    rule, p = StagnationRule(), parse_policy("defaults: {stagnation_trials: 3}", "test")
    assert rule.evaluate(p, facts(stagnation=fold([0.5, 0.6, 0.7]))) is None
    decision = rule.evaluate(p, facts(stagnation=fold([0.5, 0.6, 0.7, 0.5])))
    assert decision is not None
    assert decision.numbers["measure"] == "trials"
    assert decision.numbers["trials_without_improvement"] == 3
    assert decision.numbers["limit"] == 3
    assert decision.numbers["best_objective"] == 0.5
    assert decision.numbers["direction"] == "Minimize"
    assert decision.numbers["objective_metric"] == "validation:rmse"


def test_minutes_measure_trips_at_the_limit_not_one_second_before() -> None:
    rule, p = StagnationRule(), parse_policy("defaults: {stagnation_minutes: 30}", "test")
    state = fold([0.5])
    assert rule.evaluate(p, facts(stagnation=state, now=T0 + timedelta(minutes=30, seconds=-1))) is None
    decision = rule.evaluate(p, facts(stagnation=state, now=T0 + timedelta(minutes=30)))
    assert decision is not None
    assert (decision.numbers["measure"], decision.numbers["limit"]) == ("minutes", 30)
    assert decision.numbers["minutes_since_improvement"] == 30


def test_dollars_measure_trips_at_the_limit_not_a_cent_before() -> None:
    rule, p = StagnationRule(), parse_policy("defaults: {stagnation_usd: 25}", "test")
    state = fold([0.5]).model_copy(update={"spent_at_improvement": Decimal("10.00")})
    assert rule.evaluate(p, facts(stagnation=state, spent_usd=Decimal("34.99"))) is None
    decision = rule.evaluate(p, facts(stagnation=state, spent_usd=Decimal("35.00")))
    assert decision is not None
    assert (decision.numbers["measure"], decision.numbers["limit"]) == ("usd", Decimal(25))
    assert decision.numbers["usd_since_improvement"] == Decimal("25.00")
    # Unknown spend (an unpriced trial, or the spend at the improvement not yet read) is never judged
    assert rule.evaluate(p, facts(stagnation=state, spent_usd=None)) is None
    unknown = state.model_copy(update={"spent_at_improvement": None})
    assert rule.evaluate(p, facts(stagnation=unknown, spent_usd=Decimal(1000))) is None


@pytest.mark.parametrize(
    "text", ["defaults: {}", "defaults: {stagnation_trials: 0, stagnation_minutes: 0, stagnation_usd: 0}"]
)
def test_every_measure_is_off_at_zero(text: str) -> None:
    state = fold([0.5, 0.6, 0.7, 0.8, 0.9]).model_copy(update={"spent_at_improvement": Decimal(0)})
    later = facts(stagnation=state, now=T0 + timedelta(days=3), spent_usd=Decimal(10**6))
    assert StagnationRule().evaluate(parse_policy(text, "test"), later) is None


def test_nothing_is_judged_before_the_first_objective() -> None:
    p = parse_policy("defaults: {stagnation_trials: 1, stagnation_minutes: 1, stagnation_usd: 1}", "test")
    assert StagnationRule().evaluate(p, facts(stagnation=None, now=T0 + timedelta(days=1))) is None
    assert StagnationRule().evaluate(p, facts(stagnation=StagnationState(), now=T0 + timedelta(days=1))) is None


def test_the_policy_keys_are_validated() -> None:
    policy = parse_policy("defaults: {stagnation_minutes: 90.5, stagnation_usd: 40}", "test")
    assert (policy.defaults.stagnation_minutes, policy.defaults.stagnation_usd) == (90.5, Decimal(40))
    for bad in ("stagnation_minutes: -1", "stagnation_usd: -1", "stagnation_minutes: yes"):
        with pytest.raises(ValueError, match="stagnation_"):
            parse_policy(f"defaults: {{{bad}}}", "test")
