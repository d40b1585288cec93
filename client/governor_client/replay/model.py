"""The result of ``tuning-governor replay``, and the savings formula it reports. Pure: no AWS.

``ReplayResult`` is what the command writes as JSON (``--out``); its JSON Schema is checked in as
``docs/replay-result.schema.json`` and regenerated with::

    .venv/bin/python -m governor_client.replay.schema > docs/replay-result.schema.json

Callers may rely on: every object in the result has exactly the keys listed here (no others); times
are ISO-8601 UTC strings; money is USD as a JSON number rounded to micro-dollars, and ``null`` where
the figure is unknown (an instance type without a price), never 0 for "unknown".
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from tuning_governor.domain.cost import usd
from tuning_governor.models.records import TrialRecord

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

SAVINGS_METHOD = (
    "For each tuning job the replay stopped (its first accepted stop, at decision time T): the sum over"
    " the job's recorded trials of their billed training cost after T. A trial that started at or after T"
    " counts fully; a trial running at T counts cost x (end - T) / (end - start); a trial that ended by T"
    " counts nothing. Not counted: warm-pool retention, the time SageMaker takes to stop running trials"
    " (the stop is taken to act at T), trials whose terminal event is not in the history, and any effect"
    " of the stop on other jobs. A job whose counted trials include an unpriced one has savings null;"
    " usd sums the priced jobs."
)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ObjectiveResult(_Out):
    """The tuning objective and the best value reached (null when no trial reported it)."""

    name: str
    type: str | None = Field(description="Maximize or Minimize")
    value: float | None


class DecisionResult(_Out):
    """One governance decision the rules made on the job (at most one per rule and verdict)."""

    rule: str = Field(description="concurrency, budget, runtime, stagnation or failed-trials")
    verdict: str = Field(
        description=(
            "breach (the rule wants the job stopped), warning (report only) or grace (a breach noticed first:"
            " numbers.stop_at says when the job is stopped if the breach still holds)"
        )
    )
    mode: str = Field(description="the policy mode in force: enforce or monitor")
    action: str = Field(
        description="stopped, would-stop (monitor mode), exempt (exemption tag), warned, grace (a notice),"
        " already-ended, or pending (unfinished)"
    )
    at: datetime = Field(description="time of the event that decided (its EventBridge envelope time)")
    message: str
    numbers: dict[str, Any] = Field(
        description="the figures that decided it, as the governor stored them with the decision (e.g. for"
        " budget: spent, spent finished / accrued, limit and its source; for concurrency: usage, demand and"
        " limit per instance type); money in USD, times ISO-8601"
    )


class EarlyStoppingResult(_Out):
    """What AMT's early stopping saved (the DynamoDB summary's ``cost.early_stopping``, same names)."""

    trials_stopped_early: int = Field(
        description="trials early stopping (Hyperband, or TrainingJobEarlyStoppingType Auto) ended"
    )
    trials_cut_by_job_stop: int = Field(
        description="trials cut short because the tuning job itself was stopped (its owner, the governor or"
        " ResourceLimits.MaxRuntimeInSeconds); not counted as savings"
    )
    saved_billable_instance_seconds: int = Field(
        description="for each trial stopped early: a full-length trial's billable seconds x its instances,"
        " less its own billable instance-seconds"
    )
    billable_instance_seconds_without_early_stopping: int = Field(
        description="billable_instance_seconds + saved_billable_instance_seconds"
    )


class TimingResult(_Out):
    """Wall clock against the same trials without early stopping (the DynamoDB summary's ``timing``)."""

    wall_clock_seconds: int | None = Field(description="HyperParameterTuningEndTime - CreationTime")
    estimate_without_early_stopping_seconds: int | None = Field(
        description="ceil(trials / MaxParallelTrainingJobs) x the wall time (CreationTime to TrainingEndTime)"
        " of a full-length trial; null without a completed trial whose times are known"
    )
    one_at_a_time_seconds: int | None = Field(description="trials x the same full-length trial")


class JobResult(_Out):
    """One tuning job: what the captured history says about it, and what the policy decided."""

    status: str = Field(
        description="the job's status in the history (the latest known; Unknown when only its trials were seen)."
        " A stop issued by the replay does not change it: the history goes on as it happened."
    )
    summary: Literal["final", "provisional"] = Field(
        description="final: the governor's own summary, written when the job's terminal event was processed;"
        " provisional: the history ends before the job does, figures are from the trials recorded so far"
    )
    best_training_job: str | None
    best_hyperparameters: dict[str, str]
    objective: ObjectiveResult | None
    trials_by_status: dict[str, int]
    billable_instance_seconds: int
    cost_usd: float | None = Field(description="trials + warm pools; null when any trial is unpriced")
    cost_status: Literal["priced", "partial", "unpriced"]
    spot_savings_usd: float | None = Field(description="managed spot savings; null when the cost is not priced")
    stop_requested_at: datetime | None = Field(description="when the replay stopped the job, if it did")
    early_stopping: EarlyStoppingResult
    timing: TimingResult
    decisions: list[DecisionResult]


class ActionResult(_Out):
    """A StopHyperParameterTuningJob call the replay made and SageMaker would have accepted."""

    job: str
    action: Literal["stop"]
    rule: str
    at: datetime


class NotificationResult(_Out):
    """A report the governor would have sent (recorded, never sent)."""

    channel: str = Field(description="sns or slack")
    job: str
    kind: str = Field(description="summary-<outcome> or decision-<rule>-<verdict>")
    subject: str


class LineProblem(_Out):
    """A line of the events file that the replay did not use, and why."""

    line: int = Field(ge=1, description="1-based line number in the events file")
    reason: str


class EventCounts(_Out):
    lines: int = Field(description="non-blank lines read")
    processed: int = Field(description="events delivered to the handlers")
    rejected: int
    failed: int = Field(description="valid events on which a handler raised (EventBridge would have retried them)")
    first_at: datetime | None
    last_at: datetime | None


class PolicyInfo(_Out):
    source: str
    mode: Literal["enforce", "monitor"]


class Savings(_Out):
    """What the stops would have avoided of the cost the history incurred (see ``method``)."""

    usd: float = Field(description="sum of the priced jobs in by_job")
    by_job: dict[str, float | None] = Field(description="per stopped job; null when it cannot be priced")
    complete: bool = Field(description="false when some stopped job's savings could not be priced")
    method: str


class SweepInfo(_Out):
    """The scheduled sweep the replay ran on the event timeline (``--sweep-every``)."""

    every_seconds: int | None = Field(description="the interval; null when no sweep ran (--sweep-every 0)")
    runs: int = Field(description="sweep times between the first and the last event (multiples of the interval, UTC)")
    budget_checks: int = Field(
        default=0,
        description="one-time budget checks run at a job's projected budget crossing (as EventBridge Scheduler would)",
    )


class IncompleteFacts(_Out):
    """A tuning job the governor was answered about without a fact the deployed governor would have had."""

    job: str
    missing: list[Literal["configuration", "instances", "tags"]] = Field(
        description=(
            "configuration: no HyperParameterTuningJobConfig (MaxParallel judged as 1, no objective or trial"
            " limit); instances: no training definition with an instance shape (no demand); tags: no Tags"
        )
    )
    first_at: datetime = Field(description="when the governor first asked for a fact the replay could not give")
    completed_at: datetime | None = Field(
        description="when a later event of the job carried every missing fact; null if none did"
    )


class FactsInfo(_Out):
    """Where the facts of each job came from, and the jobs judged on incomplete facts (never silently)."""

    table: str | None = Field(description="--facts-from-table: the deployed governor's table read; null if none")
    jobs_from_table: int = Field(description="jobs of the history that had an item in that table")
    incomplete: list[IncompleteFacts] = Field(description="in the order first noted; empty when every fact was known")


class ReplayResult(_Out):
    """Everything a replay found: per-job results, stops, notifications, unusable lines and savings."""

    policy: PolicyInfo
    events: EventCounts
    sweeps: SweepInfo
    jobs: dict[str, JobResult] = Field(description="tuning jobs by name, in the order first seen")
    actions: list[ActionResult] = Field(
        description="stops issued, in time order; none in monitor mode or for exempt jobs"
    )
    notifications: list[NotificationResult] = Field(description="in the order they would have been sent")
    rejected_events: list[LineProblem] = Field(description="lines that are not valid events")
    failed_events: list[LineProblem] = Field(description="valid events a handler raised on")
    savings: Savings
    facts: FactsInfo
    # Not in the JSON: the instance types the history's trials ran on, per region (what the replay priced),
    # for the summary's approximate prices.
    _trial_types: dict[str, set[str]] = PrivateAttr(default_factory=dict)

    @property
    def trial_types(self) -> dict[str, set[str]]:
        """The instance types the history's trials ran on, by the region of their events (not in the JSON)."""
        return self._trial_types


# -- the savings formula -------------------------------------------------------------------------------------
def trial_interval(record: TrialRecord) -> tuple[datetime, datetime]:
    """The billed interval of a trial: TrainingStartTime .. TrainingEndTime.

    A trial without TrainingEndTime ends at its event's time; without TrainingStartTime it starts its
    billable seconds before its end.
    """
    end = record.end_time or record.event_time
    start = record.start_time or end - timedelta(seconds=record.billable_seconds)
    return start, end


def avoidable_cost(record: TrialRecord, stop_at: datetime) -> Decimal | None:
    """The part of a trial's billed training cost that falls after ``stop_at`` (see ``SAVINGS_METHOD``).

    0 for a trial that ended by ``stop_at``; its full cost if it started at or after ``stop_at``; otherwise
    cost x (end - stop_at) / (end - start), rounded to micro-dollars. None when that part is not zero and
    the trial is unpriced. Warm-pool cost is never included.
    """
    start, end = trial_interval(record)
    if end <= stop_at:
        return Decimal(0)
    if record.cost_usd is None:
        return None
    if start >= stop_at or end <= start:
        return record.cost_usd
    after = Decimal(str((end - stop_at).total_seconds()))
    whole = Decimal(str((end - start).total_seconds()))
    return usd(record.cost_usd * after / whole)


def stopped_job_savings(records: list[TrialRecord], stop_at: datetime) -> Decimal | None:
    """Sum of ``avoidable_cost`` over a job's trials; None when any non-zero part is unpriced."""
    total = Decimal(0)
    for record in records:
        part = avoidable_cost(record, stop_at)
        if part is None:
            return None
        total += part
    return total


def result_schema() -> dict[str, Any]:
    """The JSON Schema of ``ReplayResult`` as serialised (what ``docs/replay-result.schema.json`` holds)."""
    schema = ReplayResult.model_json_schema(mode="serialization")
    return {**schema, "$schema": SCHEMA_DIALECT, "title": "tuning-governor replay result"}


def schema_text() -> str:
    """``result_schema()`` rendered exactly as the checked-in file: 2-space JSON, sorted keys, final newline."""
    return json.dumps(result_schema(), indent=2, sort_keys=True) + "\n"
