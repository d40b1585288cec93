"""Worst-case and typical cost of a tuning request, before it runs.

Worst case: each of MaxNumberOfTrainingJobs trials bills its definition's full
StoppingCondition.MaxRuntimeInSeconds (SageMaker's default of one day when absent) on its dearest
cluster (prioritized InstanceConfigs: the dearest of them), and no more than the job's own
ResourceLimits.MaxRuntimeInSeconds allows MaxParallel trials to run. Managed spot bills at most the
training seconds (MaxRuntimeInSeconds), priced here at on-demand (an upper bound; the spot discount is
seen only once trials bill), while MaxWaitTimeInSeconds bounds each trial's wall clock. Hyperband's
MaxResource bounds a trial in epochs (AWS: "Once a job reaches the MaxResource value, it is stopped"),
not in seconds, so it tightens nothing here without a time per epoch: it is reported, and ``trial_minutes``
(the expected length of a trial that reaches MaxResource) gives the typical cost, capped by
ResourceLimits.MaxRuntimeInSeconds as the worst case is (the typical is never above it). An unpriced type
makes a cost unknown (None), never $0.
"""

from __future__ import annotations

import math
from decimal import Decimal

from governor_client.check.result import CostEstimate
from tuning_governor.domain.cost import SECONDS_PER_HOUR, cluster_rate
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.models.tuning_job import TrainingJobDefinition, TuningJob

#: SageMaker's StoppingCondition.MaxRuntimeInSeconds when a request sets none: one day.
DEFAULT_MAX_RUNTIME_S = 86_400
CENTS = Decimal("0.01")


def trial_runtime(definition: TrainingJobDefinition) -> int:
    stopping = definition.stopping_condition
    runtime = stopping.max_runtime_in_seconds if stopping else None
    return int(runtime) if runtime else DEFAULT_MAX_RUNTIME_S


def trial_wall_clock(definition: TrainingJobDefinition) -> int:
    stopping = definition.stopping_condition
    wait = stopping.max_wait_time_in_seconds if stopping else None
    if definition.enable_managed_spot_training and wait:
        return int(wait)
    return trial_runtime(definition)


def _rates(job: TuningJob, region: str, catalog: PriceCatalog) -> tuple[list[Decimal | None], list[str]]:
    """Per definition, its dearest cluster's hourly price (None: a type of it has no price), and the unpriced types."""
    rates: list[Decimal | None] = []
    unpriced: set[str] = set()
    for definition in job.definitions():
        options = [cluster_rate(shape, region, catalog) for shape in definition.alternatives()]
        unpriced.update(t for o in options for t in o.unpriced_types)
        known = [o.hourly_usd for o in options if o.hourly_usd is not None]
        rates.append(max(known) if known and len(known) == len(options) else None)
    return rates, sorted(unpriced)


def _cap_hours(job: TuningJob) -> Decimal | None:
    limits = job.config.resource_limits if job.config else None
    cap = limits.max_runtime_in_seconds if limits else None
    return Decimal(cap) / SECONDS_PER_HOUR if cap else None


def estimate(job: TuningJob, region: str, catalog: PriceCatalog, trial_minutes: Decimal | None = None) -> CostEstimate:
    """The cost bounds of ``job`` (a parsed request) in ``region`` at ``catalog``'s prices (see the module)."""
    definitions = job.definitions()
    rates, unpriced = _rates(job, region, catalog)
    runtimes = [trial_runtime(d) for d in definitions] or [DEFAULT_MAX_RUNTIME_S]
    walls = [trial_wall_clock(d) for d in definitions] or [DEFAULT_MAX_RUNTIME_S]
    trials, parallel, cap = job.max_trials, job.max_parallel, _cap_hours(job)
    per_trial = [
        r * Decimal(s) / SECONDS_PER_HOUR if r is not None else None for r, s in zip(rates, runtimes, strict=True)
    ]
    priced = bool(per_trial) and None not in per_trial
    dearest = max(p for p in per_trial if p is not None) if priced else None
    hourly = max(r for r in rates if r is not None) if priced else None
    bounds: list[Decimal] = []
    if dearest is not None and trials:
        bounds.append(dearest * trials)
    if hourly is not None and cap is not None:
        bounds.append(hourly * parallel * cap)
    worst = min(bounds).quantize(CENTS) if bounds else None
    typical = _typical(rates, runtimes, trials, parallel, cap, trial_minutes) if priced else None
    wall = Decimal(math.ceil(trials / parallel) * max(walls)) / SECONDS_PER_HOUR if trials else None
    if cap is not None:
        wall = min(wall, cap) if wall is not None else cap
    return CostEstimate(
        worst_case_usd=worst,
        typical_usd=typical,
        trial_minutes=trial_minutes,
        max_trials=trials,
        max_parallel=parallel,
        max_trial_runtime_seconds=max(runtimes),
        max_concurrent_instances=job.demand(),
        worst_case_wall_clock_hours=wall,
        hourly_usd_per_trial=hourly,
        hyperband_max_resource=_max_resource(job),
        spot=any(d.enable_managed_spot_training for d in definitions),
        unpriced_types=unpriced,
        assumptions=_assumptions(job, trials, cap),
    )


def _typical(
    rates: list[Decimal | None],
    runtimes: list[int],
    trials: int | None,
    parallel: int,
    cap: Decimal | None,
    trial_minutes: Decimal | None,
) -> Decimal | None:
    """Trials x the expected trial length (each at most its MaxRuntime) at the definitions' mean price,
    capped like the worst case: MaxParallel trials for ResourceLimits.MaxRuntimeInSeconds at most."""
    if trial_minutes is None or not trials:
        return None
    seconds = [min(Decimal(s), trial_minutes * 60) for s in runtimes]
    known = [r for r in rates if r is not None]
    mean_trial = sum((r * s for r, s in zip(known, seconds, strict=True)), Decimal(0)) / len(known)
    typical = mean_trial / SECONDS_PER_HOUR * trials
    if cap is not None:
        typical = min(typical, sum(known, Decimal(0)) / len(known) * parallel * cap)
    return typical.quantize(CENTS)


def _max_resource(job: TuningJob) -> int | None:
    strategy = job.config.strategy_config if job.config else None
    hyperband = strategy.hyperband_strategy_config if strategy else None
    return int(hyperband.max_resource) if hyperband and hyperband.max_resource else None


def _assumptions(job: TuningJob, trials: int | None, cap: Decimal | None) -> list[str]:
    notes = (
        ["spot trials priced at on-demand (the discount is only known once they bill)"]
        if any(d.enable_managed_spot_training for d in job.definitions())
        else []
    )
    if not trials and cap is None:
        notes.append("no MaxNumberOfTrainingJobs and no ResourceLimits.MaxRuntimeInSeconds: nothing bounds the cost")
    if len(job.definitions()) > 1:
        notes.append("several definitions: every trial priced at the dearest definition in the worst case")
    return notes
