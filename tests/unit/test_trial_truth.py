"""Which running jobs the trial reconciliation asks SageMaker about, and when it lists their trials."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tuning_governor.domain.job import JobState
from tuning_governor.governance.trial_truth import counts_differ, trial_rules
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.policy import Defaults, Policy, TeamPolicy

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC).isoformat()


def job(*, recorded: int = 0, running: int = 0, tags: dict[str, str] | None = None) -> JobState:
    entries = {
        f"j-{i:03d}": {"job_key": "j", "trial": f"j-{i:03d}", "start": START, "instances": {"ml.m5.xlarge": 1}}
        for i in range(running)
    }
    item: dict[str, Any] = {"pk": "JOB#j", "status": "InProgress", "trials_recorded": recorded, "running": entries}
    return JobState.from_item(item | {"tags": tags or {}})


def described(**counters: int) -> TuningJob:
    return TuningJob.model_validate(
        {
            "HyperParameterTuningJobName": "j",
            "HyperParameterTuningJobStatus": "InProgress",
            "TrainingJobStatusCounters": {
                "Completed": 0,
                "InProgress": 0,
                "RetryableError": 0,
                "NonRetryableError": 0,
                "Stopped": 0,
            }
            | counters,
        }
    )


@pytest.mark.parametrize(
    ("state", "counters", "differ"),
    [
        (job(recorded=5, running=2), {"Completed": 3, "NonRetryableError": 1, "Stopped": 1, "InProgress": 2}, False),
        # a trial ended whose event was lost: still running on the item, not recorded
        (job(recorded=4, running=3), {"Completed": 3, "NonRetryableError": 1, "Stopped": 1, "InProgress": 2}, True),
        # recorded, but a running entry SageMaker no longer runs (a phantom)
        (job(recorded=5, running=3), {"Completed": 4, "RetryableError": 1, "InProgress": 2}, True),
        # fewer running entries than SageMaker runs: progress events late (or a trial still Starting,
        # which the listing shows without a TrainingStartTime): listed, so running spend is SageMaker's
        (job(recorded=2, running=1), {"Completed": 2, "InProgress": 3}, True),
        # as many running entries as SageMaker runs, every end recorded: nothing to ask
        (job(recorded=2, running=3), {"Completed": 2, "InProgress": 3}, False),
    ],
)
def test_the_trials_are_listed_only_when_the_table_disagrees_with_the_status_counters(
    state: JobState, counters: dict[str, int], differ: bool
) -> None:
    assert counts_differ(state, described(**counters)) is differ


def test_the_rules_that_read_a_jobs_trials_are_named() -> None:
    assert trial_rules(Policy(), job()) == []
    policy = Policy(
        defaults=Defaults(stagnation_minutes=30, max_failed_trials=3),
        teams={"nlp": TeamPolicy(monthly_budget_usd=100)},
    )
    assert trial_rules(policy, job(tags={"team": "nlp", "governance:budget-usd": "50"})) == [
        "budget",
        "team-budget",
        "stagnation",
        "failed-trials",
    ]
    assert trial_rules(policy, job(tags={"team": "cv"})) == ["stagnation", "failed-trials"]
