"""The life of one training job on the virtual clock, computed up front from its plan.

A :class:`TrainingTimeline` is pure data (laid out by :func:`~.layout.build_timeline`): the engine
schedules its transitions and, when someone stops the job, asks it for the billing and objective at the
moment of the stop.

Secondary statuses follow what DescribeTrainingJob shows on AWS: ``Starting`` → ``Downloading`` →
``Training`` (→ ``Interrupted`` → ``Training`` for managed spot) → ``Uploading`` → ``Completed``; or
``Failed``; or ``Stopping`` → ``Stopped``; or ``MaxRuntimeExceeded`` (status ``Stopped``).
``TrainingStartTime`` is when the instances are ready (``Downloading`` begins): AWS bills from
TrainingStartTime to TrainingEndTime.

Warm pools: a job that runs on a reused warm pool (``warm_start``) starts in a tenth of the usual
start-up time and shows ``WarmPoolStatus`` ``InUse`` until it ends; ending ``Completed`` makes its pool
``Available`` again, any other ending terminates it (``ResourceRetainedBillableTimeInSeconds`` 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from .plans import TrialPlan

TrainingJobStatus = Literal["InProgress", "Completed", "Failed", "Stopping", "Stopped"]
TERMINAL_TRAINING_STATUSES: frozenset[str] = frozenset({"Completed", "Failed", "Stopped"})

#: Seconds between ``Stopping`` and ``Stopped`` when the tuner (not a user) stops a job: the algorithm
#: gets SIGTERM and saves its model; built-in algorithms exit quickly.
SYSTEM_STOP_GRACE_S = 10.0

#: Start-up on a reused warm pool, as a share of a cold start (the instances are already provisioned;
#: AWS quotes start-ups in seconds instead of minutes, the exact ratio is ours).
WARM_START_FACTOR = 0.1


@dataclass(frozen=True)
class Transition:
    """One observable change of a training job.

    ``ends_job`` transitions set TrainingEndTime, the billing fields and the final metric (measured at
    ``progress_at``, the moment training stopped advancing). ``warm_pool`` sets ``WarmPoolStatus.Status``;
    for ``Terminated``/``Reused`` the retained billable seconds are ``retained_s`` (default: the job's
    keep-alive) and ``reused_by`` names the job that took the pool over.
    """

    at: datetime
    status: TrainingJobStatus
    secondary: str
    message: str
    starts_training: bool = False
    ends_job: bool = False
    progress_at: datetime | None = None
    failure_reason: str | None = None
    warm_pool: str | None = None
    retained_s: int | None = None
    reused_by: str | None = None


@dataclass
class TrainingTimeline:
    """Times of one job's phases (naive UTC datetimes, as moto stores them)."""

    plan: TrialPlan
    created_at: datetime
    training_start: datetime
    training_phase_start: datetime
    spot: bool
    keep_alive_s: int
    interruption: tuple[datetime, datetime] | None
    transitions: list[Transition] = field(default_factory=list)
    warm_start: bool = False

    def progress_at(self, when: datetime) -> float:
        """Fraction of the full training budget done at ``when`` (0 before Training, 1 when done)."""
        if when <= self.training_phase_start or self.plan.duration_s <= 0:
            return 0.0
        elapsed = (when - self.training_phase_start).total_seconds() - self._interrupted_until(when)
        return min(1.0, max(0.0, elapsed / self.plan.duration_s))

    def objective_at(self, when: datetime) -> float | None:
        """The objective reported by a job whose training stops advancing at ``when`` (None: no metric)."""
        progress = self.progress_at(when)
        if progress <= 0.0:
            return None
        return self.plan.objective_at(progress)

    def billing_until(self, end: datetime) -> tuple[int, int] | None:
        """``(TrainingTimeInSeconds, BillableTimeInSeconds)`` for a job ending at ``end``.

        None when the job never reached TrainingStartTime. On-demand: both equal. Managed spot: the
        billable time excludes interruptions and applies the plan's spot saving, so it is lower.
        """
        if end <= self.training_start:
            return None
        training = max(1, math.ceil((end - self.training_start).total_seconds()))
        if not self.spot:
            return training, training
        running = max(0.0, training - self._interrupted_until(end))
        billable = max(1, math.floor(running * (1.0 - self.plan.spot_savings_fraction)))
        return training, min(billable, training)

    def _interrupted_until(self, when: datetime) -> float:
        if self.interruption is None:
            return 0.0
        start, end = self.interruption
        overlap = (min(end, when) - start).total_seconds()
        return max(0.0, overlap)

    def stop_transitions(
        self, at: datetime, delay_s: float, reason: str, progress_at: datetime | None = None
    ) -> list[Transition]:
        """``Stopping`` now and ``Stopped`` after ``delay_s``, for a stop requested at ``at``.

        ``progress_at`` (default ``at``) is when training stopped advancing, for the reported objective.
        """
        return [
            Transition(at, "Stopping", "Stopping", reason),
            Transition(
                at + timedelta(seconds=delay_s),
                "Stopped",
                "Stopped",
                "The training job was stopped.",
                ends_job=True,
                progress_at=progress_at or at,
                **pool_ends(self.warm_start),
            ),
        ]


def pool_ends(warm_start: bool) -> dict[str, Any]:
    """Transition fields that terminate a reused pool when its job ends other than ``Completed``."""
    return {"warm_pool": "Terminated", "retained_s": 0} if warm_start else {}
