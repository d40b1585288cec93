"""`make demo` shows the seed job's table in the seed's terms, with figures of the seed's shape (issue 7, 11).

The seed reports, for 30 Hyperband trials, 4 in parallel, 3 x ml.m5.xlarge: about 30 billable minutes
against about 90 without early stopping, and 12 minutes of wall clock against the ~22-24 minutes
expected without it (ceil(30 / 4) rounds x a full 3-minute trial); a Hyperband trial lasts about a
minute, a full-length trial about 3 minutes with its start-up. The demo's stand-in is calibrated to
that; the tolerances below are what "the seed's shape" means here.
"""

from __future__ import annotations

import io
import math
from typing import Any

import pytest

from governor_client.demo import acts as demo_acts
from governor_client.demo import run as demo
from tuning_governor.models.records import JobSummary

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("demo_seed_table")

MIN = 60


@pytest.fixture(scope="module")
def printed_and_seed() -> tuple[str, JobSummary]:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            mp.setenv(key, "testing")
        data: dict[str, Any] = demo.run(out=out)
    return out.getvalue(), data["summaries"][demo_acts.SEED_JOB]


def test_billable_time_has_the_seeds_shape(printed_and_seed: tuple[str, JobSummary]) -> None:
    _, seed = printed_and_seed
    cost, es = seed.cost, seed.cost.early_stopping
    assert seed.trials_total == 30 and seed.max_parallel == 4
    assert es.trials_stopped_early == seed.trials_by_status.get("Stopped", 0) > 0
    assert es.trials_cut_by_job_stop == 0
    # About 30 billable minutes (Σ BillableTimeInSeconds) against about 90 without early stopping
    assert 22 * MIN <= cost.billable_seconds <= 40 * MIN
    without = es.billable_instance_seconds_without_early_stopping / 3
    assert 70 * MIN <= without <= 100 * MIN
    assert 0.25 <= cost.billable_seconds / without <= 0.45
    # every trial ran on 3 instances: instance-minutes are three times the billable minutes
    assert cost.billable_instance_seconds == 3 * cost.billable_seconds


def test_wall_clock_has_the_seeds_shape(printed_and_seed: tuple[str, JobSummary]) -> None:
    _, seed = printed_and_seed
    timing = seed.timing
    assert timing.wall_clock_seconds is not None
    assert timing.full_trial_seconds is not None and timing.mean_trial_seconds is not None
    # a Hyperband trial about 1 minute, a full-length trial about 3 minutes, start-up included
    assert 0.75 * MIN <= timing.mean_trial_seconds <= 1.5 * MIN
    assert 2.75 * MIN <= timing.full_trial_seconds <= 3.25 * MIN
    # about 12 minutes against the ~22-24 expected without early stopping: early stopping is faster
    assert 9 * MIN <= timing.wall_clock_seconds <= 15 * MIN
    assert timing.estimate_without_early_stopping_seconds == math.ceil(30 / 4) * timing.full_trial_seconds
    assert 22 * MIN <= timing.estimate_without_early_stopping_seconds <= 26 * MIN
    assert timing.wall_clock_seconds < 0.7 * timing.estimate_without_early_stopping_seconds
    assert timing.one_at_a_time_seconds == 30 * timing.full_trial_seconds


def test_the_printed_table_is_in_the_seeds_terms(printed_and_seed: tuple[str, JobSummary]) -> None:
    text, seed = printed_and_seed
    cost, es, timing = seed.cost, seed.cost.early_stopping, seed.timing
    assert "sequential" not in text.lower()
    table = text.split(f"=== The seed job: {demo_acts.SEED_JOB} ===")[1].split("===")[0]
    assert "with early stopping" in table and "without (estimate)" in table
    assert f"{cost.billable_seconds / MIN:.1f}" in table
    assert f"~{es.billable_instance_seconds_without_early_stopping / 3 / MIN:.1f}" in table
    assert f"{cost.billable_instance_seconds / MIN:.1f}" in table
    assert f"~{es.billable_instance_seconds_without_early_stopping / MIN:.1f}" in table
    assert timing.wall_clock_seconds is not None and timing.estimate_without_early_stopping_seconds is not None
    assert f"{timing.wall_clock_seconds / MIN:.1f}" in table
    assert f"~{timing.estimate_without_early_stopping_seconds / MIN:.1f}" in table
    assert "ceil(30 / 4) = 8 rounds" in table
