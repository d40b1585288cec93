"""What the governor writes to DynamoDB: one record per finished trial, one summary per finished job."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Literal

from pydantic import ConfigDict

from tuning_governor.model_base import GovernorModel

CostStatus = Literal["priced", "partial", "unpriced"]


class Record(GovernorModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class TrialRecord(Record):
    """A finished trial (training job launched by a tuning job), written once at its terminal status."""

    job_key: str
    training_job_name: str
    status: str
    secondary_status: str | None = None
    failure_reason: str | None = None
    region: str
    instances: dict[str, int]
    instance_count: int
    spot: bool
    training_seconds: int
    billable_seconds: int
    billable_instance_seconds: int
    warm_pool_seconds: int
    warm_pool_instance_seconds: int
    hourly_usd: Decimal | None
    cost_usd: Decimal | None
    warm_pool_cost_usd: Decimal | None
    spot_savings_usd: Decimal | None
    unpriced_types: list[str] = []
    approximate_price: bool = False
    approximate_types: list[str] = []
    """Types priced on the fallback (their highest price in another region): the cost is approximate."""
    objective_name: str | None = None
    objective_value: float | None = None
    hyperparameters: dict[str, str] = {}
    start_time: datetime | None = None
    end_time: datetime | None = None
    event_id: str
    event_time: datetime


class Objective(Record):
    name: str
    type: str
    value: float | None


class EarlyStopping(Record):
    """What AMT's early stopping (Hyperband, or TrainingJobEarlyStoppingType Auto) saved.

    Only trials early stopping ended count; trials cut short because the whole tuning job was stopped
    (by its owner, the governor or ResourceLimits.MaxRuntimeInSeconds) are counted apart and save nothing.
    """

    trials_stopped_early: int
    trials_cut_by_job_stop: int = 0
    job_stopped_at: datetime | None = None
    """When the tuning job itself was stopped (None: it was not); separates the two kinds above."""
    job_stop_source: str | None = None
    """governor, stopping-transition, max-runtime, or end-time (approximate)."""
    reference_billable_seconds: int | None = None
    """BillableTimeInSeconds of a typical full-length trial (the median completed one)."""
    saved_billable_instance_seconds: int
    saved_usd: Decimal | None
    billable_instance_seconds_without_early_stopping: int
    method: str


class CostSummary(Record):
    status: CostStatus
    cost_usd: Decimal | None
    """Total (trials + warm pools) when every trial is priced; None otherwise (never $0 for unknown)."""
    priced_cost_usd: Decimal
    """What the priced trials cost; equals cost_usd when status is 'priced'."""
    trial_cost_usd: Decimal
    warm_pool_cost_usd: Decimal
    spot_savings_usd: Decimal
    billable_seconds: int
    billable_instance_seconds: int
    billable_instance_hours: Decimal
    warm_pool_instance_seconds: int
    spot_trials: int
    unpriced_instance_types: list[str]
    approximate_prices: bool
    approximate_instance_types: list[str] = []
    """Types with no price in the job's region, priced at their highest price in any region."""
    early_stopping: EarlyStopping


class Timing(Record):
    """Wall clock against what the same trials would have taken without early stopping."""

    wall_clock_seconds: int | None
    mean_trial_seconds: Decimal | None
    """Mean wall time of the finished trials, CreationTime to TrainingEndTime (start-up included)."""
    full_trial_seconds: int | None = None
    """Wall time of a typical full-length trial (the median completed one), CreationTime to TrainingEndTime."""
    estimate_without_early_stopping_seconds: int | None = None
    """ceil(trials / MaxParallelTrainingJobs) x full_trial_seconds."""
    one_at_a_time_seconds: int | None
    """trials x full_trial_seconds."""
    method: str


class JobSummary(Record):
    """The final record of a tuning job: best trial, cost and timing, and what could not be counted."""

    job_key: str
    job_name: str
    region: str
    status: str
    strategy: str | None
    team: str | None
    owner: str | None
    max_parallel: int
    max_trials: int | None
    trials_total: int
    trials_by_status: dict[str, int]
    best_training_job: str | None
    best_hyperparameters: dict[str, str]
    objective: Objective | None
    cost: CostSummary
    timing: Timing
    unaccounted_trials: list[str]
    """Trials SageMaker lists as finished but whose trial event has not been recorded (cost excludes them)."""
    failure_reason: str | None = None
    warnings: list[str] = []
    finalised_at: datetime
