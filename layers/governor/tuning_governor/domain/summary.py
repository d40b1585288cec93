"""Finalise a tuning job: best trial, trials by status, cost summary and timing.

Inputs are what SageMaker says about the job (one Describe, one paged List) and the trial records
the governor wrote as trials finished; nothing here calls AWS.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from datetime import datetime, timedelta
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
from tuning_governor.models.sagemaker import TRAINING_TERMINAL
from tuning_governor.models.tuning_job import TrialSummary, TuningJob

EARLY_STOP_METHOD = (
    "Early stopping (Hyperband, or TrainingJobEarlyStoppingType Auto) is credited only for trials with"
    " status Stopped that ended before the tuning job itself was stopped; trials still running at that"
    " stop were cut by it and save nothing (trials_cut_by_job_stop). Each early-stopped trial is counted"
    " as if it had been billed as long as a full-length trial: the median BillableTimeInSeconds of the"
    " completed trials ({reference} s), of the same kind (managed spot or on-demand; a spot trial with"
    " only on-demand references applies its own billable/training ratio). Saving = that x its instances"
    " - its billable instance-seconds, at its price. Job stop: {stop}."
)
#: Trials stopped because their tuning job was stopped get SIGTERM and 120 s to exit, then the tuning job
#: ends; when only the job's end time is known, trials that ended within this window before it are taken
#: as cut by the stop (an early stop ending in that window is then not credited: the figure errs low).
JOB_STOP_WINDOW = timedelta(seconds=180)
TIMING_METHOD = (
    "wall clock = HyperParameterTuningEndTime - CreationTime; full trial = median wall time (CreationTime"
    " to TrainingEndTime, start-up included) of the completed trials; estimate without early stopping ="
    " ceil(trials / MaxParallelTrainingJobs) x full trial; one at a time = trials x full trial; mean trial"
    " = mean wall time of the finished trials."
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


def job_stop_time(
    job: TuningJob, stop_requested_at: datetime | None = None, stopping_at: datetime | None = None
) -> tuple[datetime | None, str | None]:
    """When the tuning job itself was stopped, and how that is known; (None, None) if it was not.

    The earliest of: the governor's own stop (``stop_requested_at``), the job's Stopping transition
    (``stopping_at``), and CreationTime + ResourceLimits.MaxRuntimeInSeconds when the job ran that long.
    Failing all three, a job whose status is Stopped was stopped shortly before it ended: its end time
    less :data:`JOB_STOP_WINDOW` (approximate).
    """
    known: list[tuple[datetime, str]] = []
    if stop_requested_at is not None:
        known.append((stop_requested_at, "governor"))
    if stopping_at is not None:
        known.append((stopping_at, "stopping-transition"))
    limits = job.config.resource_limits if job.config else None
    if limits is not None and limits.max_runtime_in_seconds and job.creation_time is not None:
        deadline = job.creation_time + timedelta(seconds=limits.max_runtime_in_seconds)
        if job.end_time is not None and job.end_time >= deadline:
            known.append((deadline, "max-runtime"))
    if known:
        return min(known, key=lambda item: item[0])
    if job.status in {"Stopped", "Stopping"} and job.end_time is not None:
        return job.end_time - JOB_STOP_WINDOW, "end-time (approximate)"
    return None, None


def _median_int(values: list[int]) -> int | None:
    return round(statistics.median(values)) if values else None


def _full_billable_seconds(record: TrialRecord, references: dict[bool, int | None]) -> int | None:
    """The billable seconds ``record`` would have had at full length, in its own billing (spot or not)."""
    same = references.get(record.spot)
    if same is not None:
        return same
    other = references.get(not record.spot)
    if other is None:
        return None
    if record.spot and record.training_seconds > 0:
        # Only on-demand full trials to compare with: apply this trial's own spot discount.
        return round(other * record.billable_seconds / record.training_seconds)
    return other


def _early_stopping(
    job: TuningJob, records: list[TrialRecord], stopped_at: datetime | None, stop_source: str | None
) -> EarlyStopping:
    completed = [r for r in records if r.status == "Completed" and r.billable_seconds > 0]
    references = {
        spot: _median_int([r.billable_seconds for r in completed if r.spot == spot]) for spot in (False, True)
    }
    stopped = [r for r in records if r.status == "Stopped"]
    # A trial still running when its tuning job was stopped ended at or after that moment.
    cut = [r for r in stopped if stopped_at is not None and (r.end_time is None or r.end_time >= stopped_at)]
    cut_names = {r.training_job_name for r in cut}
    early = [r for r in stopped if job.early_stopping_enabled and r.training_job_name not in cut_names]
    actual = sum(r.billable_instance_seconds for r in records)
    saved_seconds = 0
    saved_usd: Decimal | None = Decimal(0)
    for record in early:
        full = _full_billable_seconds(record, references)
        if full is None:
            continue
        extra = max(0, full * record.instance_count - record.billable_instance_seconds)
        saved_seconds += extra
        if extra == 0:
            continue
        if record.hourly_usd is None:
            saved_usd = None
        elif saved_usd is not None:
            # hourly_usd prices the whole cluster; extra is instance-seconds.
            saved_usd += usd(record.hourly_usd * extra / record.instance_count / SECONDS_PER_HOUR)
    reference = references[False] if references[False] is not None else references[True]
    stop_text = "none" if stopped_at is None else f"{stopped_at.isoformat()} ({stop_source})"
    return EarlyStopping(
        trials_stopped_early=len(early),
        trials_cut_by_job_stop=len(cut),
        job_stopped_at=stopped_at,
        job_stop_source=stop_source,
        reference_billable_seconds=reference,
        saved_billable_instance_seconds=saved_seconds,
        saved_usd=saved_usd,
        billable_instance_seconds_without_early_stopping=actual + saved_seconds,
        method=EARLY_STOP_METHOD.format(reference=reference if reference is not None else "n/a", stop=stop_text),
    )


def cost_summary(
    job: TuningJob,
    records: list[TrialRecord],
    stop_requested_at: datetime | None = None,
    stopping_at: datetime | None = None,
) -> CostSummary:
    """Sum the trials' billed cost; any unpriced trial makes the total 'unpriced' or 'partial'.

    ``stop_requested_at`` / ``stopping_at``: the governor's stop of the job and the job's Stopping
    transition, when known (see :func:`job_stop_time`).
    """
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
        approximate_instance_types=sorted({t for r in records for t in r.approximate_types}),
        early_stopping=_early_stopping(job, records, *job_stop_time(job, stop_requested_at, stopping_at)),
    )


def _wall_seconds(trial: TrialSummary) -> int | None:
    if trial.creation_time is None or trial.training_end_time is None:
        return None
    return round((trial.training_end_time - trial.creation_time).total_seconds())


def timing(job: TuningJob, trials: list[TrialSummary]) -> Timing:
    """Wall clock against the same trials without early stopping (see ``TIMING_METHOD``).

    The baseline needs trials' CreationTime (SageMaker's list has it); without a completed trial that
    has one, the estimates are None rather than a figure without start-up.
    """
    wall: int | None = None
    if job.creation_time and job.end_time:
        wall = round((job.end_time - job.creation_time).total_seconds())
    elif job.consumed_resources and job.consumed_resources.runtime_in_seconds:
        wall = job.consumed_resources.runtime_in_seconds
    finished = [w for t in trials if t.training_job_status in TRAINING_TERMINAL and (w := _wall_seconds(t)) is not None]
    full = _median_int(
        [w for t in trials if t.training_job_status == "Completed" and (w := _wall_seconds(t)) is not None]
    )
    mean = (Decimal(sum(finished)) / len(finished)).quantize(Decimal("0.1")) if finished else None
    n = len(trials)
    return Timing(
        wall_clock_seconds=wall,
        mean_trial_seconds=mean,
        full_trial_seconds=full,
        estimate_without_early_stopping_seconds=math.ceil(n / job.max_parallel) * full if full and n else None,
        one_at_a_time_seconds=n * full if full and n else None,
        method=TIMING_METHOD,
    )


def summary_warnings(costs: CostSummary, unaccounted: list[str], region: str) -> list[str]:
    """What a summary warns about: unpriced and approximately priced types, trials without a record."""
    warnings: list[str] = []
    if costs.unpriced_instance_types:
        warnings.append(
            f"No price for {', '.join(costs.unpriced_instance_types)} in {region}: cost is {costs.status}"
            f" (priced part ${costs.priced_cost_usd:.2f})."
        )
    if costs.approximate_instance_types:
        warnings.append(
            f"No price for {', '.join(costs.approximate_instance_types)} in {region}: priced at the highest"
            " price of the type in any region (approximate)."
        )
    if costs.approximate_prices:
        warnings.append("Some prices are approximate (not from the AWS Price List); refresh the catalog.")
    if unaccounted:
        named = ", ".join(unaccounted[:20]) + (f" and {len(unaccounted) - 20} more" if len(unaccounted) > 20 else "")
        warnings.append(f"{len(unaccounted)} finished trial(s) have no trial record yet; cost excludes them: {named}.")
    return warnings


def best_objective(job: TuningJob, best: TrialSummary | None) -> Objective | None:
    """The job's objective with the best trial's final value (None: the job has no objective)."""
    if job.objective is None:
        return None
    metric = best.final_hyper_parameter_tuning_job_objective_metric if best else None
    return Objective(name=job.objective.metric_name, type=job.objective.type, value=metric.value if metric else None)


def unaccounted_trials(trials: list[TrialSummary], records: list[TrialRecord]) -> list[str]:
    """Trials SageMaker lists as finished that have no trial record, by name."""
    recorded = {r.training_job_name.lower() for r in records}
    return sorted(
        t.training_job_name
        for t in trials
        if t.training_job_status in TRAINING_TERMINAL and t.training_job_name.lower() not in recorded
    )


def summarise(  # noqa: PLR0913 - the job, its trials and records, then keyword-only context
    job: TuningJob,
    trials: list[TrialSummary],
    records: list[TrialRecord],
    *,
    region: str,
    team: str | None,
    owner_tag: str,
    now: datetime,
    stop_requested_at: datetime | None = None,
    stopping_at: datetime | None = None,
) -> JobSummary:
    """Build the final summary. ``trials`` is SageMaker's list; ``records`` the governor's trial records.

    ``team``: the job's team as the policy resolves it (``Policy.team_of``), or as its item records it.
    ``stop_requested_at``: when the governor stopped the job (the store's ``stop_requested_at``);
    ``stopping_at``: when the job went Stopping, if seen. Either separates trials early stopping ended
    from trials cut by the job's stop; without them a Stopped job's end time is used (approximate).
    """
    by_status = Counter(t.training_job_status or "Unknown" for t in trials)
    unaccounted = unaccounted_trials(trials, records)
    best = best_trial(job, trials)
    costs = cost_summary(job, records, stop_requested_at, stopping_at)
    warnings = summary_warnings(costs, unaccounted, region)
    return JobSummary(
        job_key=job.key,
        job_name=job.name,
        region=region,
        status=job.status,
        strategy=job.config.strategy if job.config else None,
        team=team,
        owner=job.tags.get(owner_tag),
        max_parallel=job.max_parallel,
        max_trials=job.max_trials,
        trials_total=len(trials),
        trials_by_status=dict(sorted(by_status.items())),
        best_training_job=best.training_job_name if best else None,
        best_hyperparameters=dict(best.tuned_hyper_parameters) if best else {},
        objective=best_objective(job, best),
        cost=costs,
        timing=timing(job, trials),
        unaccounted_trials=unaccounted,
        failure_reason=job.failure_reason,
        warnings=warnings,
        finalised_at=now,
    )
