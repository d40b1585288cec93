"""The life of one training job on the virtual clock, computed up front from its plan.

A :class:`TrainingTimeline` is pure data: the engine schedules its transitions and, when someone
stops the job, asks it for the billing and objective at the moment of the stop.

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
import random
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
                **_pool_ends(self.warm_start),
            ),
        ]


def _pool_ends(warm_start: bool) -> dict[str, Any]:
    """Transition fields that terminate a reused pool when its job ends other than ``Completed``."""
    return {"warm_pool": "Terminated", "retained_s": 0} if warm_start else {}


def build_timeline(
    plan: TrialPlan,
    created_at: datetime,
    request: dict[str, Any],
    rng: random.Random,
    *,
    warm_start: bool = False,
) -> TrainingTimeline:
    """Lay out every transition of a job created at ``created_at`` from its ``plan``.

    ``request`` carries the job's ``EnableManagedSpotTraining``, ``ResourceConfig.KeepAlivePeriodInSeconds``
    and ``StoppingCondition.MaxRuntimeInSeconds``. Start-up, download and upload delays come from ``rng``
    (the same draws whether or not ``warm_start``, so a reused pool changes nothing else of the run).
    ``warm_start``: the job runs on a reused warm pool (shorter start-up, ``WarmPoolStatus`` ``InUse``).
    """
    spot = bool(request.get("EnableManagedSpotTraining"))
    keep_alive = int((request.get("ResourceConfig") or {}).get("KeepAlivePeriodInSeconds") or 0)
    max_runtime = (request.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")

    # Instance provisioning dominates the start-up; spot capacity can take longer to find.
    startup = rng.uniform(60.0, 180.0) + (rng.uniform(0.0, 120.0) if spot else 0.0)
    download = rng.uniform(15.0, 60.0)
    upload = rng.uniform(5.0, 20.0)
    # A calibrated plan fixes its own phases; the draws above happen anyway so the stream stays the same.
    startup = plan.startup_s if plan.startup_s is not None else startup
    download = plan.download_s if plan.download_s is not None else download
    upload = plan.upload_s if plan.upload_s is not None else upload
    if warm_start:
        startup *= WARM_START_FACTOR
    t = created_at
    ts = t + timedelta(seconds=startup)
    tt = ts + timedelta(seconds=download)
    pool_ends = _pool_ends(warm_start)

    if plan.outcome == "Failed" and plan.failure_phase != "Training":
        return _failed_before_training(
            plan, t, ready_at=ts, download_s=download, spot=spot, keep_alive=keep_alive, warm_start=warm_start
        )
    if plan.outcome == "Failed":
        work, ending = plan.duration_s, "Failed"
    elif plan.early_stop_at_s is not None and plan.early_stop_at_s < plan.duration_s:
        work, ending = max(0.0, plan.early_stop_at_s), "EarlyStopped"
    else:
        work, ending = plan.duration_s, "Completed"

    interruption: tuple[datetime, datetime] | None = None
    transitions = [
        Transition(
            t,
            "InProgress",
            "Starting",
            "Preparing the instances for training",
            warm_pool="InUse" if warm_start else None,
        ),
        Transition(ts, "InProgress", "Downloading", "Downloading input data", starts_training=True),
        Transition(tt, "InProgress", "Training", "Training image download completed. Training in progress."),
    ]
    if spot and plan.spot_interrupted_s > 0 and work > 0:
        cut = tt + timedelta(seconds=0.4 * work)
        resume = cut + timedelta(seconds=plan.spot_interrupted_s)
        interruption = (cut, resume)
        transitions.append(
            Transition(cut, "InProgress", "Interrupted", "Spot capacity reclaimed; waiting for capacity")
        )
        transitions.append(Transition(resume, "InProgress", "Training", "Training resumed from the last checkpoint."))
    train_end = tt + timedelta(seconds=work + plan.spot_interrupted_s * (interruption is not None))

    if ending == "Completed":
        done = train_end + timedelta(seconds=upload)
        transitions.append(Transition(train_end, "InProgress", "Uploading", "Uploading generated training model"))
        transitions.append(
            Transition(
                done,
                "Completed",
                "Completed",
                "Training job completed",
                ends_job=True,
                progress_at=train_end,
                warm_pool="Available" if keep_alive > 0 else None,
            )
        )
        if keep_alive > 0:
            transitions.append(
                Transition(
                    done + timedelta(seconds=keep_alive),
                    "Completed",
                    "Completed",
                    "Training job completed",
                    warm_pool="Terminated",
                    retained_s=keep_alive,
                )
            )
    elif ending == "Failed":
        transitions.append(
            Transition(
                train_end,
                "Failed",
                "Failed",
                "Training job failed",
                ends_job=True,
                progress_at=train_end,
                failure_reason=plan.failure_reason or "AlgorithmError: training failed",
                **pool_ends,
            )
        )
    else:
        transitions.append(Transition(train_end, "Stopping", "Stopping", "Stopping the training job (early stopping)"))
        transitions.append(
            Transition(
                train_end + timedelta(seconds=SYSTEM_STOP_GRACE_S),
                "Stopped",
                "Stopped",
                "The training job was stopped early by the tuning job.",
                ends_job=True,
                progress_at=train_end,
                **pool_ends,
            )
        )

    if max_runtime:
        deadline = ts + timedelta(seconds=float(max_runtime))
        job_end = next(tr.at for tr in transitions if tr.ends_job)
        if deadline < job_end:
            # SageMaker ends the job at MaxRuntimeInSeconds; the SDK reports such jobs as "Stopped".
            transitions = [tr for tr in transitions if tr.at < deadline]
            transitions.append(
                Transition(
                    deadline,
                    "Stopped",
                    "MaxRuntimeExceeded",
                    "Training job runtime exceeded MaxRuntimeInSeconds provided",
                    ends_job=True,
                    progress_at=deadline,
                    **pool_ends,
                )
            )

    return TrainingTimeline(
        plan=plan,
        created_at=created_at,
        training_start=ts,
        training_phase_start=tt,
        spot=spot,
        keep_alive_s=keep_alive,
        interruption=interruption,
        transitions=transitions,
        warm_start=warm_start,
    )


def _failed_before_training(
    plan: TrialPlan,
    created_at: datetime,
    *,
    ready_at: datetime,
    download_s: float,
    spot: bool,
    keep_alive: int,
    warm_start: bool,
) -> TrainingTimeline:
    """A job that fails while ``Starting`` (at the moment the instances should have been ready: nothing
    billed, no TrainingStartTime) or half-way through ``Downloading`` (billed from TrainingStartTime)."""
    reason = plan.failure_reason or "ClientError: training failed"
    transitions = [
        Transition(
            created_at,
            "InProgress",
            "Starting",
            "Preparing the instances for training",
            warm_pool="InUse" if warm_start else None,
        )
    ]
    if plan.failure_phase == "Starting":
        end = ready_at
    else:
        transitions.append(
            Transition(ready_at, "InProgress", "Downloading", "Downloading input data", starts_training=True)
        )
        end = ready_at + timedelta(seconds=download_s / 2)
    transitions.append(
        Transition(
            end,
            "Failed",
            "Failed",
            "Training job failed",
            ends_job=True,
            progress_at=end,
            failure_reason=reason,
            **_pool_ends(warm_start),
        )
    )
    return TrainingTimeline(
        plan=plan,
        created_at=created_at,
        training_start=ready_at,
        training_phase_start=ready_at + timedelta(seconds=download_s),
        spot=spot,
        keep_alive_s=keep_alive,
        interruption=None,
        transitions=transitions,
        warm_start=warm_start,
    )
