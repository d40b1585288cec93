"""The stand-in's pure parts: clock, sampling, early stopping, timelines, default behaviour."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governor_client.amt import DefaultTrialBehaviour, HyperbandPolicy, MedianStoppingPolicy, TrialPlan, VirtualClock
from governor_client.amt.layout import build_timeline
from governor_client.amt.sampling import ParameterSpace

from .builders import RANGES, definition, tuning_config

T0 = datetime(2026, 11, 30, 9, 0)


def test_virtual_clock_is_utc_and_monotonic() -> None:
    clock = VirtualClock(datetime(2026, 1, 1, 10, 0, tzinfo=timezone(timedelta(hours=1))))
    assert clock.now() == datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    assert clock.now().tzinfo is UTC
    clock.advance(90.5)
    assert clock.now() == datetime(2026, 1, 1, 9, 1, 30, 500000, tzinfo=UTC)
    clock.advance_to(datetime(2020, 1, 1, tzinfo=UTC))  # the past: ignored
    assert clock.now() == datetime(2026, 1, 1, 9, 1, 30, 500000, tzinfo=UTC)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    assert VirtualClock(datetime(2026, 1, 1)).now().tzinfo is UTC  # naive start is UTC


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_samples_stay_in_range_and_perturbations_too(seed: int) -> None:
    space = ParameterSpace.from_ranges(RANGES)
    rng = random.Random(seed)
    for point in (space.sample(rng), space.perturb(space.sample(rng), rng)):
        assert 3 <= int(point["max_depth"]) <= 10
        assert 0.01 <= float(point["eta"]) <= 0.5
        assert 0.5 <= float(point["subsample"]) <= 1.0
        assert point["booster"] in {"gbtree", "dart"}


def test_log_scaling_favours_small_values() -> None:
    space = ParameterSpace.from_ranges(RANGES)
    rng = random.Random(1)
    etas = [float(space.sample(rng)["eta"]) for _ in range(2000)]
    # Log-uniform on [0.01, 0.5]: the geometric midpoint (~0.07) splits the draws in half.
    below = sum(1 for e in etas if e < (0.01 * 0.5) ** 0.5)
    assert 900 < below < 1100


def test_grid_rejects_numeric_ranges() -> None:
    with pytest.raises(ValueError, match="categorical"):
        ParameterSpace.from_ranges(RANGES).grid()


def test_hyperband_rungs_and_survival() -> None:
    policy = HyperbandPolicy(min_resource=1, max_resource=30, maximize=True)
    assert policy.rungs == [1, 3, 9, 27]
    # The last bracket (trial 5, 10, …) is never cut, whatever its objective.
    assert policy.decide(5, 0.0) is None
    decisions = [policy.decide(i, value) for i, value in enumerate([0.9, 0.8, 0.7, 0.6, 0.95, 0.5], start=1)]
    cut = [d for d in decisions if d is not None]
    assert cut
    assert all(0 < d < 1 for d in cut)
    assert all(d in {r / 30 for r in policy.rungs} for d in cut)


def test_median_rule_stops_trials_worse_than_the_median() -> None:
    policy = MedianStoppingPolicy(maximize=False, min_history=3)
    assert [policy.decide(i, v) for i, v in enumerate([0.3, 0.2, 0.4], start=1)] == [None, None, None]
    assert policy.decide(4, 0.35) == 0.5  # loss above the median 0.3
    assert policy.decide(5, 0.1) is None


def _timeline(plan: TrialPlan, **request: Any) -> Any:
    return build_timeline(plan, T0, request, random.Random(3))


def test_on_demand_billing_equals_training_time() -> None:
    timeline = _timeline(TrialPlan(600.0, 0.9))
    end = timeline.transitions[-1].at
    training, billable = timeline.billing_until(end)
    assert training == billable
    assert training == pytest.approx((end - timeline.training_start).total_seconds(), abs=1)
    assert timeline.billing_until(timeline.training_start) is None


def test_spot_billing_is_lower_and_skips_interruptions() -> None:
    plan = TrialPlan(600.0, 0.9, "Completed", None, 200.0, None, spot_savings_fraction=0.5)
    timeline = _timeline(plan, EnableManagedSpotTraining=True)
    end = next(t for t in timeline.transitions if t.ends_job).at
    training, billable = timeline.billing_until(end)
    assert billable == pytest.approx((training - 200) * 0.5, abs=1)
    assert [t.secondary for t in timeline.transitions].count("Interrupted") == 1
    assert timeline.progress_at(end) == 1.0


def test_early_stop_reports_the_curve_value_at_the_stop() -> None:
    plan = TrialPlan(1000.0, 0.9, objective_curve=lambda f: round(0.5 + 0.4 * f, 6)).stopped_early_at(250.0)
    timeline = _timeline(plan)
    ending = next(t for t in timeline.transitions if t.ends_job)
    assert (ending.status, ending.secondary) == ("Stopped", "Stopped")
    assert timeline.objective_at(ending.progress_at or ending.at) == pytest.approx(0.6)


def test_default_behaviour_is_deterministic_and_hyperparameter_driven() -> None:
    behaviour = DefaultTrialBehaviour(seed=7)
    config = tuning_config()
    spec = definition()
    good = {"max_depth": "6", "eta": "0.1", "subsample": "0.8", "min_child_weight": "3", "booster": "gbtree"}
    plans = [behaviour.plan(config, spec, good, random.Random(1)) for _ in range(2)]
    assert plans[0] == plans[1]
    values = {
        behaviour.plan(config, spec, {**good, "max_depth": str(d)}, random.Random(1)).objective_value
        for d in range(3, 11)
    }
    assert len(values) > 4
    assert all(v is not None and 0.5 <= v <= 0.99 for v in values)
    deep = behaviour.plan(config, spec, {**good, "max_depth": "10"}, random.Random(1))
    shallow = behaviour.plan(config, spec, {**good, "max_depth": "3"}, random.Random(1))
    assert deep.duration_s > shallow.duration_s
    more_rounds = behaviour.plan(config, spec, {**good, "num_round": "400"}, random.Random(1))
    assert more_rounds.duration_s > 2 * plans[0].duration_s


def test_default_behaviour_can_fail_trials() -> None:
    behaviour = DefaultTrialBehaviour(seed=7, failure_rate=1.0)
    plan = behaviour.plan(tuning_config(), definition(), {"max_depth": "5"}, random.Random(2))
    assert plan.outcome == "Failed"
    assert plan.objective_value is None
    assert plan.failure_reason
