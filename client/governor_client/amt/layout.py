"""Laying out a training job's timeline from its plan, in steps: phase lengths, training, its ending, MaxRuntime.

See :mod:`.timeline` for the statuses a job goes through and what warm pools do.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .plans import TrialPlan
from .timeline import SYSTEM_STOP_GRACE_S, WARM_START_FACTOR, TrainingTimeline, Transition, pool_ends


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
    layout = _layout(plan, created_at, request, rng, warm_start)
    if plan.outcome == "Failed" and plan.failure_phase != "Training":
        return _failed_before_training(layout)
    work, ending = _work_and_ending(plan)
    transitions = [
        _starting(layout),
        Transition(layout.ready_at, "InProgress", "Downloading", "Downloading input data", starts_training=True),
        Transition(
            layout.training_at, "InProgress", "Training", "Training image download completed. Training in progress."
        ),
    ]
    interruption = _interruption(layout, work)
    if interruption is not None:
        cut, resume = interruption
        transitions.append(
            Transition(cut, "InProgress", "Interrupted", "Spot capacity reclaimed; waiting for capacity")
        )
        transitions.append(Transition(resume, "InProgress", "Training", "Training resumed from the last checkpoint."))
    train_end = layout.training_at + timedelta(seconds=work + plan.spot_interrupted_s * (interruption is not None))
    transitions += _ending(layout, ending, train_end)
    return TrainingTimeline(
        plan=plan,
        created_at=created_at,
        training_start=layout.ready_at,
        training_phase_start=layout.training_at,
        spot=layout.spot,
        keep_alive_s=layout.keep_alive,
        interruption=interruption,
        transitions=_cut_at_max_runtime(layout, transitions),
        warm_start=warm_start,
    )


@dataclass(frozen=True)
class _Layout:
    """What a job's request fixes and the phase lengths drawn for it: the inputs of every step below."""

    plan: TrialPlan
    created_at: datetime
    spot: bool
    keep_alive: int
    max_runtime: Any
    warm_start: bool
    download_s: float
    upload_s: float
    #: TrainingStartTime (instances ready, ``Downloading`` begins) and the start of ``Training``.
    ready_at: datetime
    training_at: datetime

    @property
    def pool_ends(self) -> dict[str, Any]:
        return pool_ends(self.warm_start)


def _layout(
    plan: TrialPlan, created_at: datetime, request: dict[str, Any], rng: random.Random, warm_start: bool
) -> _Layout:
    spot = bool(request.get("EnableManagedSpotTraining"))
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
    ready_at = created_at + timedelta(seconds=startup)
    return _Layout(
        plan=plan,
        created_at=created_at,
        spot=spot,
        keep_alive=int((request.get("ResourceConfig") or {}).get("KeepAlivePeriodInSeconds") or 0),
        max_runtime=(request.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds"),
        warm_start=warm_start,
        download_s=download,
        upload_s=upload,
        ready_at=ready_at,
        training_at=ready_at + timedelta(seconds=download),
    )


def _work_and_ending(plan: TrialPlan) -> tuple[float, str]:
    """Seconds of training, and how training ends (``Completed``, ``Failed`` or ``EarlyStopped``)."""
    if plan.outcome == "Failed":
        return plan.duration_s, "Failed"
    if plan.early_stop_at_s is not None and plan.early_stop_at_s < plan.duration_s:
        return max(0.0, plan.early_stop_at_s), "EarlyStopped"
    return plan.duration_s, "Completed"


def _starting(layout: _Layout) -> Transition:
    return Transition(
        layout.created_at,
        "InProgress",
        "Starting",
        "Preparing the instances for training",
        warm_pool="InUse" if layout.warm_start else None,
    )


def _interruption(layout: _Layout, work: float) -> tuple[datetime, datetime] | None:
    """When a managed-spot job loses its capacity and when it resumes, if it is interrupted."""
    plan = layout.plan
    if not (layout.spot and plan.spot_interrupted_s > 0 and work > 0):
        return None
    cut = layout.training_at + timedelta(seconds=0.4 * work)
    return cut, cut + timedelta(seconds=plan.spot_interrupted_s)


def _ending(layout: _Layout, ending: str, train_end: datetime) -> list[Transition]:
    """The transitions from the end of training to the job's end (and its warm pool's)."""
    if ending == "Completed":
        return _completed(layout, train_end)
    if ending == "Failed":
        return [
            Transition(
                train_end,
                "Failed",
                "Failed",
                "Training job failed",
                ends_job=True,
                progress_at=train_end,
                failure_reason=layout.plan.failure_reason or "AlgorithmError: training failed",
                **layout.pool_ends,
            )
        ]
    return [
        Transition(train_end, "Stopping", "Stopping", "Stopping the training job (early stopping)"),
        Transition(
            train_end + timedelta(seconds=SYSTEM_STOP_GRACE_S),
            "Stopped",
            "Stopped",
            "The training job was stopped early by the tuning job.",
            ends_job=True,
            progress_at=train_end,
            **layout.pool_ends,
        ),
    ]


def _completed(layout: _Layout, train_end: datetime) -> list[Transition]:
    keep_alive = layout.keep_alive
    done = train_end + timedelta(seconds=layout.upload_s)
    transitions = [
        Transition(train_end, "InProgress", "Uploading", "Uploading generated training model"),
        Transition(
            done,
            "Completed",
            "Completed",
            "Training job completed",
            ends_job=True,
            progress_at=train_end,
            warm_pool="Available" if keep_alive > 0 else None,
        ),
    ]
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
    return transitions


def _cut_at_max_runtime(layout: _Layout, transitions: list[Transition]) -> list[Transition]:
    """``transitions`` ended at MaxRuntimeInSeconds (counted from TrainingStartTime) if the job runs longer."""
    if not layout.max_runtime:
        return transitions
    deadline = layout.ready_at + timedelta(seconds=float(layout.max_runtime))
    job_end = next(tr.at for tr in transitions if tr.ends_job)
    if deadline >= job_end:
        return transitions
    # SageMaker ends the job at MaxRuntimeInSeconds; the SDK reports such jobs as "Stopped".
    kept = [tr for tr in transitions if tr.at < deadline]
    kept.append(
        Transition(
            deadline,
            "Stopped",
            "MaxRuntimeExceeded",
            "Training job runtime exceeded MaxRuntimeInSeconds provided",
            ends_job=True,
            progress_at=deadline,
            **layout.pool_ends,
        )
    )
    return kept


def _failed_before_training(layout: _Layout) -> TrainingTimeline:
    """A job that fails while ``Starting`` (at the moment the instances should have been ready: nothing
    billed, no TrainingStartTime) or half-way through ``Downloading`` (billed from TrainingStartTime)."""
    plan, ready_at = layout.plan, layout.ready_at
    reason = plan.failure_reason or "ClientError: training failed"
    transitions = [_starting(layout)]
    if plan.failure_phase == "Starting":
        end = ready_at
    else:
        transitions.append(
            Transition(ready_at, "InProgress", "Downloading", "Downloading input data", starts_training=True)
        )
        end = ready_at + timedelta(seconds=layout.download_s / 2)
    transitions.append(
        Transition(
            end,
            "Failed",
            "Failed",
            "Training job failed",
            ends_job=True,
            progress_at=end,
            failure_reason=reason,
            **layout.pool_ends,
        )
    )
    return TrainingTimeline(
        plan=plan,
        created_at=layout.created_at,
        training_start=ready_at,
        training_phase_start=ready_at + timedelta(seconds=layout.download_s),
        spot=layout.spot,
        keep_alive_s=layout.keep_alive,
        interruption=None,
        transitions=transitions,
        warm_start=layout.warm_start,
    )
