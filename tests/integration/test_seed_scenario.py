"""The seed scenario end to end: SageMaker's events in; a correct DynamoDB record, one SNS and one Slack report out."""

from __future__ import annotations

import math
import random
from decimal import Decimal
from typing import Any

import pytest

from governor_client.simulator.runner import deliver_all, deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World

JOB = "xgb-churn-hb"
M5_XLARGE_USD_PER_HOUR = Decimal("0.230")  # the bundled catalog's price-list figure, us-east-1


def _trials(world: World) -> list[dict[str, Any]]:
    sm = world.env.sagemaker
    names = [
        s["TrainingJobName"]
        for page in sm.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job").paginate(
            HyperParameterTuningJobName=JOB
        )
        for s in page["TrainingJobSummaries"]
    ]
    return [sm.describe_training_job(TrainingJobName=name) for name in names]


def test_seed_job_summary_matches_the_trials_own_numbers(world: World) -> None:
    # Given the seed job: 30 trials of 3 x ml.m5.xlarge, Hyperband, 4 in parallel
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request(JOB))
    # When SageMaker's events reach the handlers until the job is done
    world.run_until_idle()
    # Then the summary holds what the trials themselves say
    summary = world.env.services.store.get_summary(JOB)
    assert summary is not None
    trials = _trials(world)
    assert len(trials) == 30
    assert summary.status == "Completed"
    assert summary.trials_total == 30
    assert sum(summary.trials_by_status.values()) == 30
    expected_cost = sum(
        (Decimal(t["BillableTimeInSeconds"]) * t["ResourceConfig"]["InstanceCount"] * M5_XLARGE_USD_PER_HOUR / 3600)
        for t in trials
    )
    assert summary.cost.status == "priced"
    assert summary.cost.cost_usd is not None
    assert abs(summary.cost.cost_usd - expected_cost) < Decimal("0.0001")
    assert summary.cost.billable_instance_seconds == sum(
        t["BillableTimeInSeconds"] * t["ResourceConfig"]["InstanceCount"] for t in trials
    )
    completed = [t for t in trials if t["TrainingJobStatus"] == "Completed"]
    best = max(completed, key=lambda t: t["FinalMetricDataList"][0]["Value"])
    assert summary.best_training_job == best["TrainingJobName"]
    tuned = {k: v for k, v in best["HyperParameters"].items() if k in summary.best_hyperparameters}
    assert summary.best_hyperparameters == tuned
    assert set(summary.best_hyperparameters) >= {"eta", "max_depth"}
    assert summary.objective is not None
    assert summary.objective.value == pytest.approx(best["FinalMetricDataList"][0]["Value"])
    assert summary.unaccounted_trials == []
    # Hyperband stopped some trials early (nothing stopped the job); the saving is stated with its method.
    assert summary.cost.early_stopping.trials_stopped_early == summary.trials_by_status.get("Stopped", 0)
    assert summary.cost.early_stopping.trials_cut_by_job_stop == 0
    assert "median BillableTimeInSeconds of the completed trials" in summary.cost.early_stopping.method
    # Without early stopping: ceil(30 / 4) rounds of a full-length trial, start-up included
    full = max(
        (t["TrainingEndTime"] - t["CreationTime"]).total_seconds()
        for t in trials
        if t["TrainingJobStatus"] == "Completed"
    )
    assert summary.timing.full_trial_seconds is not None and summary.timing.full_trial_seconds <= full
    assert (
        summary.timing.estimate_without_early_stopping_seconds == math.ceil(30 / 4) * summary.timing.full_trial_seconds
    )
    assert summary.timing.one_at_a_time_seconds == 30 * summary.timing.full_trial_seconds
    # And exactly one report went to each channel
    assert len(world.slack.messages) == 1
    assert JOB in world.slack.messages[0]["blocks"][0]["text"]["text"]
    sns = world.env.sns_messages()
    assert len(sns) == 1
    assert sns[0]["MessageAttributes"]["outcome"]["Value"] == "completed"
    assert sns[0]["MessageAttributes"]["team"]["Value"] == "churn"
    assert f"${summary.cost.cost_usd:,.2f}" in sns[0]["Message"]


def test_finalising_costs_at_most_ceil_n_over_100_plus_3_sagemaker_calls(world: World) -> None:
    held = world.run_holding_terminal(seed_tuning_request(JOB))
    calls: list[str] = []
    world.env.sagemaker.meta.events.register("before-call.sagemaker.*", lambda model, **_: calls.append(model.name))
    outcome = deliver_event(held[-1], world.env.services).outcome
    assert outcome["outcome"] == "finalised"
    assert len(calls) <= math.ceil(30 / 100) + 3, calls
    assert "DescribeTrainingJob" not in calls


def test_duplicated_and_reordered_events_never_double_count(world: World) -> None:
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request(JOB))
    captured: list[dict[str, Any]] = []
    for _ in range(48 * 60):
        world.amt.advance(60)
        captured.extend(world.amt.drain_events())
        if world.amt.idle():
            break
    # Every event twice, trial events shuffled, the job's terminal event last (then again).
    rng = random.Random(11)
    terminal = [e for e in captured if e["detail"].get("HyperParameterTuningJobStatus") == "Completed"]
    others = [e for e in captured if e not in terminal]
    noisy = others + others
    rng.shuffle(noisy)
    late_in_progress = [e for e in captured if e["detail"].get("HyperParameterTuningJobStatus") == "InProgress"][:1]
    assert late_in_progress
    results = deliver_all(noisy + terminal + terminal + late_in_progress, world.env.services)
    assert results[-1].outcome["outcome"] == "stale"
    assert not [r for r in results if r.outcome["outcome"] == "error"]
    summary = world.env.services.store.get_summary(JOB)
    assert summary is not None
    trials = _trials(world)
    assert summary.cost.billable_instance_seconds == sum(
        t["BillableTimeInSeconds"] * t["ResourceConfig"]["InstanceCount"] for t in trials
    )
    meta = world.env.services.store.get_job(JOB)
    assert meta is not None
    assert meta["trials_recorded"] == 30
    assert meta["status"] == "Completed"  # a late InProgress never regressed it
    duplicates = [r for r in results if r.outcome["outcome"] == "duplicate"]
    assert len(duplicates) == 30
    assert len(world.slack.messages) == 1
    assert len(world.env.sns_messages()) == 1


def test_a_trial_event_arriving_after_the_job_was_finalised_is_already_counted(world: World) -> None:
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request(JOB, max_jobs=8, max_parallel=2))
    captured: list[dict[str, Any]] = []
    for _ in range(48 * 60):
        world.amt.advance(60)
        captured.extend(world.amt.drain_events())
        if world.amt.idle():
            break
    late = next(e for e in captured if e["detail"].get("TrainingJobStatus") == "Completed")
    on_time = [e for e in captured if e is not late]
    # Given the job finalised while one trial's Completed event was still on its way
    deliver_all(on_time, world.env.services)
    # Then the finaliser recorded that trial itself (SageMaker lists it finished; one Describe), so
    # the summary, and its one report, count it already (issue 8: finalising waits for the trials)
    early = world.env.services.store.get_summary(JOB)
    assert early is not None
    assert early.unaccounted_trials == []
    trial = late["detail"]["TrainingJobName"]
    assert trial.lower() in {r.training_job_name.lower() for r in world.env.services.store.trial_records(JOB)}
    # When that event arrives it is a duplicate: counted once, the report is not sent again
    outcome = deliver_event(late, world.env.services).outcome
    assert outcome["outcome"] == "duplicate"
    final = world.env.services.store.get_summary(JOB)
    assert final is not None
    assert final.model_dump(exclude={"finalised_at"}) == early.model_dump(exclude={"finalised_at"})
    assert len(world.env.sns_messages()) == 1
    assert len(world.slack.messages) == 1
