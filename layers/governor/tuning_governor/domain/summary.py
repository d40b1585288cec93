"""Finalise a tuning job: best trial, trials by status, cost summary and timing.

Inputs are what SageMaker says about the job (one Describe, one paged List) and the trial records
the governor wrote as trials finished; nothing here calls AWS.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime
from decimal import Decimal

from tuning_governor.domain.cost import SECONDS_PER_HOUR, usd
from tuning_governor.models.records import (
    CostSummary,
    EarlyStopping,
    JobSummary,
    Objective,
    Timing,
    TrialRecord,
)
from tuning_governor.models.sagemaker import TRAINING_TERMINAL, TrialSummary, TuningJob

EARLY_STOP_METHOD = (
    "Each trial that early stopping ended (status Stopped, before any stop of the tuning job) is counted"
    " as if it had run as long as the longest trial that completed ({reference} s); the difference,"
    " times its instances and price, is the saving."
)
TIMING_METHOD = (
    "sequential estimate = ceil(trials / MaxParallelTrainingJobs) x mean trial training time;"
    " one-at-a-time = trials x mean trial training time; wall clock = HyperParameterTuningEndTime -"
    " CreationTime."
)


def best_trial(job: TuningJob, trials: list[TrialSummary]) -> TrialSummary | None:
    """SageMaker's BestTrainingJob when it names one; else the best completed trial by the objective."""
    if job.best_training_job is not None and job.best_training_job.final_hyper_parameter_tuning_job_objective_metric:
        return job.best_training_job
    scored = [
        t
        for t in trials
        if t.training_job_status == "Completed" and t.final_hyper_parameter_tuning_job_objective_metric
    ]
    if not scored:
        return job.best_training_job
    minimize = job.objective is not None and job.objective.type == "Minimize"

    def value(t: TrialSummary) -> float:
        metric = t.final_hyper_parameter_tuning_job_objective_metric
        assert metric is not None
        return metric.value

    return min(scored, key=value) if minimize else max(scored, key=value)


def _early_stopping(job: TuningJob, records: list[TrialRecord], stop_requested_at: datetime | None) -> EarlyStopping:
    completed = [r.training_seconds for r in records if r.status == "Completed" and r.training_seconds > 0]
    reference = max(completed) if completed else None
    actual = sum(r.billable_instance_seconds for r in records)
    early = [
        r
        for r in records
        if job.early_stopping_enabled
        and r.status == "Stopped"
        and (stop_requested_at is None or r.end_time is None or r.end_time < stop_requested_at)
    ]
    saved_seconds = 0
    saved_usd: Decimal | None = Decimal(0)
    for record in early:
        if reference is None:
            break
        extra = max(0, reference - record.billable_seconds)
        saved_seconds += extra * record.instance_count
        if record.hourly_usd is None:
            saved_usd = None
        elif saved_usd is not None:
            saved_usd += usd(record.hourly_usd * extra / SECONDS_PER_HOUR)
    return EarlyStopping(
        trials_stopped_early=len(early),
        reference_trial_seconds=reference,
        saved_billable_instance_seconds=saved_seconds,
        saved_usd=saved_usd,
        billable_instance_seconds_without_early_stopping=actual + saved_seconds,
        method=EARLY_STOP_METHOD.format(reference=reference if reference is not None else "n/a"),
    )


def cost_summary(job: TuningJob, records: list[TrialRecord], stop_requested_at: datetime | None = None) -> CostSummary:
    """Sum the trials' billed cost; any unpriced trial makes the total 'unpriced' or 'partial'."""
    priced = [r for r in records if r.cost_usd is not None]
    unpriced_types = sorted({t for r in records for t in r.unpriced_types})
    trial_cost = sum((r.cost_usd for r in priced if r.cost_usd is not None), Decimal(0))
    warm_cost = sum((r.warm_pool_cost_usd for r in priced if r.warm_pool_cost_usd is not None), Decimal(0))
    if not unpriced_types:
        status = "priced"
    elif priced:
        status = "partial"
    else:
        status = "unpriced"
    instance_seconds = sum(r.billable_instance_seconds for r in records)
    return CostSummary(
        status=status,
        cost_usd=trial_cost + warm_cost if status == "priced" else None,
        priced_cost_usd=trial_cost + warm_cost,
        trial_cost_usd=trial_cost,
        warm_pool_cost_usd=warm_cost,
        spot_savings_usd=sum((r.spot_savings_usd or Decimal(0) for r in records), Decimal(0)),
        billable_seconds=sum(r.billable_seconds for r in records),
        billable_instance_seconds=instance_seconds,
        billable_instance_hours=(Decimal(instance_seconds) / SECONDS_PER_HOUR).quantize(Decimal("0.0001")),
        warm_pool_instance_seconds=sum(r.warm_pool_instance_seconds for r in records),
        spot_trials=sum(1 for r in records if r.spot),
        unpriced_instance_types=unpriced_types,
        approximate_prices=any(r.approximate_price for r in records),
        early_stopping=_early_stopping(job, records, stop_requested_at),
    )


def timing(job: TuningJob, trials_total: int, records: list[TrialRecord]) -> Timing:
    durations = [r.training_seconds for r in records if r.training_seconds > 0]
    wall: int | None = None
    if job.creation_time and job.end_time:
        wall = round((job.end_time - job.creation_time).total_seconds())
    elif job.consumed_resources and job.consumed_resources.runtime_in_seconds:
        wall = job.consumed_resources.runtime_in_seconds
    if not durations or trials_total == 0:
        return Timing(
            wall_clock_seconds=wall,
            mean_trial_seconds=None,
            sequential_estimate_seconds=None,
            one_at_a_time_seconds=None,
            method=TIMING_METHOD,
        )
    mean = Decimal(sum(durations)) / len(durations)
    rounds = math.ceil(trials_total / job.max_parallel)
    return Timing(
        wall_clock_seconds=wall,
        mean_trial_seconds=mean.quantize(Decimal("0.1")),
        sequential_estimate_seconds=round(mean * rounds),
        one_at_a_time_seconds=round(mean * trials_total),
        method=TIMING_METHOD,
    )


def summarise(
    job: TuningJob,
    trials: list[TrialSummary],
    records: list[TrialRecord],
    *,
    region: str,
    team_tag: str,
    owner_tag: str,
    now: datetime,
    stop_requested_at: datetime | None = None,
) -> JobSummary:
    """Build the final summary. ``trials`` is SageMaker's list; ``records`` the governor's trial records."""
    by_status = Counter(t.training_job_status or "Unknown" for t in trials)
    recorded = {r.training_job_name.lower() for r in records}
    unaccounted = sorted(
        t.training_job_name
        for t in trials
        if t.training_job_status in TRAINING_TERMINAL and t.training_job_name.lower() not in recorded
    )
    best = best_trial(job, trials)
    objective = None
    if job.objective is not None:
        metric = best.final_hyper_parameter_tuning_job_objective_metric if best else None
        objective = Objective(
            name=job.objective.metric_name, type=job.objective.type, value=metric.value if metric else None
        )
    costs = cost_summary(job, records, stop_requested_at)
    warnings: list[str] = []
    if costs.unpriced_instance_types:
        warnings.append(
            f"No price for {', '.join(costs.unpriced_instance_types)} in {region}: cost is {costs.status}"
            f" (priced part ${costs.priced_cost_usd:.2f})."
        )
    if costs.approximate_prices:
        warnings.append("Some prices are approximate (not from the AWS Price List); refresh the catalog.")
    if unaccounted:
        warnings.append(f"{len(unaccounted)} finished trial(s) have no trial record yet; cost excludes them.")
    return JobSummary(
        job_key=job.key,
        job_name=job.name,
        region=region,
        status=job.status,
        strategy=job.config.strategy if job.config else None,
        team=job.tags.get(team_tag),
        owner=job.tags.get(owner_tag),
        max_parallel=job.max_parallel,
        max_trials=job.max_trials,
        trials_total=len(trials),
        trials_by_status=dict(sorted(by_status.items())),
        best_training_job=best.training_job_name if best else None,
        best_hyperparameters=dict(best.tuned_hyper_parameters) if best else {},
        objective=objective,
        cost=costs,
        timing=timing(job, len(trials), records),
        unaccounted_trials=unaccounted,
        failure_reason=job.failure_reason,
        warnings=warnings,
        finalised_at=now,
    )
