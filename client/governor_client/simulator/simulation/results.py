"""What a simulation run produced: one outcome per delivery, progress snapshots, the run's totals."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from governor_client.simulator.delivery import CopyKind, DeliveryStats, DroppedEvent, ScheduledDelivery


@dataclass(frozen=True)
class DeliveryOutcome:
    """What happened to one delivery: ``outcome`` is the handler's (``recorded``, ``ignored``,
    ``duplicate``, ``finalised``, ``stale``, ``rejected``, ``error``…), ``unrouted``, or ``not-invoked``
    when the simulation runs without handlers; ``result`` is the handler's full return value."""

    seq: int
    delivered_at: datetime
    emitted_at: datetime
    attempt: int
    copy: CopyKind
    event_id: str | None
    detail_type: str | None
    function: str | None
    outcome: str
    result: dict[str, Any]


@dataclass(frozen=True)
class ScheduledRun:
    """One scheduled invocation: ``function`` ``sweep`` or ``budget-check`` at ``at``, and ``decisions``
    it made, each naming its ``job`` (as the handlers' outcomes list them, ``already-decided`` included)."""

    at: datetime
    function: str
    decisions: list[dict[str, Any]]


@dataclass(frozen=True)
class Progress:
    """A snapshot for a progress display; ``done`` is True on the last call of a run."""

    virtual_time: datetime
    virtual_elapsed_s: float
    actions_done: int
    actions_total: int
    events_emitted: int
    deliveries: int
    trial_events_delivered: int
    pending_deliveries: int
    errors: int
    dropped: int
    dead_lettered: int
    done: bool = False


@dataclass
class SimulationResult:
    """Everything a run produced besides the DynamoDB/SNS/Slack state (read that through ``sim.env``).

    ``trial_events_delivered`` counts deliveries of training-job state-change events (retries and
    duplicates included); ``truncated`` is True when the run stopped at ``max_virtual_s``. ``sweeps`` and
    ``budget_checks`` count the scheduled invocations; ``failed_schedules`` says which of them raised;
    ``sweep_step_errors`` counts the steps sweeps logged as failed and left to the next sweep.
    """

    started_at: datetime
    finished_at: datetime
    tuning_jobs: list[str]
    training_jobs: list[str]
    events_emitted: int = 0
    deliveries: int = 0
    trial_events_delivered: int = 0
    outcomes: list[DeliveryOutcome] = field(default_factory=list)
    outcome_counts: Counter[str] = field(default_factory=Counter)
    dropped: list[DroppedEvent] = field(default_factory=list)
    dead_lettered: list[ScheduledDelivery] = field(default_factory=list)
    delivery_stats: DeliveryStats = field(default_factory=DeliveryStats)
    truncated: bool = False
    sweeps: int = 0
    budget_checks: int = 0
    failed_schedules: list[str] = field(default_factory=list)
    sweep_step_errors: int = 0
    scheduled: list[ScheduledRun] = field(default_factory=list)
    """The sweeps and checks that made a decision (kept with ``keep_outcomes``), in time order."""

    @property
    def errors(self) -> int:
        return self.outcome_counts.get("error", 0)
