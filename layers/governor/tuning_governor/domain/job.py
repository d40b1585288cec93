"""The typed job: a tuning job as its job item records it, read once per event.

The engine and the rules read this, never the item (``item`` is kept only to hand back to the store,
whose conditional writes compare against it).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pydantic import ConfigDict

from tuning_governor.domain import spend
from tuning_governor.domain.capacity import AdmissionPlan
from tuning_governor.domain.stagnation import StagnationState, objectives_from_item, resolve_objective
from tuning_governor.domain.stored_item import Remembered
from tuning_governor.model_base import GovernorModel
from tuning_governor.models.keys import job_key_of
from tuning_governor.models.objectives import DefinitionObjective, ObjectiveSpec
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob


def iso_time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds")


def time_of(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


class JobState(GovernorModel):
    """A tuning job as its job item records it, read once per event (see the module docstring)."""

    # Always made by ``from_item`` (model_construct, no validation): its schema is built only if something
    # validates or dumps it, never at import (defer_build).
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

    key: str
    name: str
    """A job first seen through a trial's event (its own event not yet delivered) is named by its key:
    the name in the trial's TuningJobArn, in lower case as ARNs spell it."""
    status: str
    team: str | None
    """The team recorded on the item (None: not recorded; rules judge ``policy.team_of(tags)``)."""
    owner: str | None
    tags: dict[str, str]
    roles: list[str]
    """The execution roles its definitions run as (``TuningJob.role_arns``; empty: not known)."""
    region: str | None
    created: datetime | None
    max_parallel: int
    max_trials: int | None
    demand: dict[str, int]
    admission: list[AdmissionPlan]
    finished_usd: Decimal | None
    """Billed cost of the finished trials; None while any of them is unpriced."""
    spot_discount: Decimal | None
    trials_recorded: int
    trials_failed: int
    objective_name: str | None
    objective_type: str | None
    objectives: list[DefinitionObjective]
    stagnation: StagnationState | None
    running: list[spend.RunningTrial]
    running_names: frozenset[str]
    tracks_running: bool
    """Whether the item has a ``running`` map (kept by the training-event path)."""
    spot_training: bool | None
    last_trial_end: datetime | None
    budget_check_at: str | None
    unpriced_types: list[str]
    approximate_types: list[str]
    stop_requested_at: datetime | None
    stopping_at: datetime | None
    summary_reported_at: str | None
    summary_reported_usd: Decimal
    item: dict[str, Any]

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> JobState:
        """The item's attributes, typed; absent ones as a job item written before them reads. An item
        its store will never change is typed once (``domain.stored_item``: the same state again)."""
        return _STATES(item)

    @classmethod
    def _typed(cls, item: Mapping[str, Any]) -> JobState:
        key = job_key_of(item["pk"])
        unpriced = int(item.get("unpriced_trials") or 0)
        spot = item.get("spot_training")
        # Every value below is converted to its field's type here, from the governor's own item: built
        # without a second validation (this runs on every event, most of them twice).
        return cls.from_fields(
            {
                "key": key,
                "name": str(item.get("job_name") or key),
                "status": str(item.get("status") or "Unknown"),
                "team": item.get("team") or None,
                "owner": item.get("owner") or None,
                "tags": {str(k): str(v) for k, v in (item.get("tags") or {}).items()},
                "roles": [str(role) for role in item.get("roles") or []],
                "region": str(item["region"]) if item.get("region") else None,
                "created": time_of(item.get("creation_time")),
                "max_parallel": int(item.get("max_parallel") or 1),
                "max_trials": int(item["max_trials"]) if item.get("max_trials") is not None else None,
                "demand": {str(k): int(v) for k, v in (item.get("demand") or {}).items()},
                "admission": [AdmissionPlan.model_validate(plan) for plan in item.get("admission") or []],
                # Any unpriced trial makes "spent" unknown: a budget is never judged on a partial sum.
                "finished_usd": None if unpriced else Decimal(str(item.get("cost_usd") or 0)),
                "spot_discount": spend.spot_factor(item.get("spot_billed_usd"), item.get("spot_on_demand_usd")),
                "trials_recorded": int(item.get("trials_recorded") or 0),
                "trials_failed": int(item.get("trials_failed") or 0),
                "objective_name": item.get("objective_name"),
                "objective_type": item.get("objective_type"),
                "objectives": _objectives(item),
                "stagnation": StagnationState.from_item(item.get("stagnation")),
                "running": spend.running_trials(item),
                "running_names": frozenset(item.get("running") or {}),
                "tracks_running": "running" in item,
                "spot_training": spot if isinstance(spot, bool) else None,
                "last_trial_end": time_of(item.get("last_trial_end")),
                "budget_check_at": item.get("budget_check_at"),
                "unpriced_types": [str(t) for t in item.get("unpriced_types") or ()],
                "approximate_types": [str(t) for t in item.get("approximate_types") or ()],
                "stop_requested_at": time_of(item.get("stop_requested_at")),
                "stopping_at": time_of(item.get("stopping_at")),
                "summary_reported_at": item.get("summary_reported_at"),
                "summary_reported_usd": Decimal(str(item.get("summary_reported_usd") or 0)),
                "item": dict(item),
            }
        )

    @property
    def ended(self) -> bool:
        return self.status in TUNING_TERMINAL

    def state_time(self) -> datetime | None:
        """The latest moment the item's state reflects: the end of its latest recorded trial
        (``last_trial_end``) or the start of its latest running trial."""
        times = [self.last_trial_end] + [trial.start for trial in self.running]
        return max((t for t in times if t is not None), default=None)


_STATES = Remembered(JobState._typed, slot=lambda item: item.get("pk"))


def job_state(item: Mapping[str, Any] | None) -> JobState | None:
    """The typed job, or None for no item."""
    return JobState.from_item(item) if item is not None else None


def state_time(item: Mapping[str, Any] | None) -> datetime | None:
    """:meth:`JobState.state_time` of a job item (None: no item)."""
    job = job_state(item)
    return job.state_time() if job is not None else None


def trial_objective(job: JobState | None, trial: TrainingJob) -> ObjectiveSpec | None:
    """The objective (metric and direction) of the definition ``trial`` belongs to, from the job item."""
    return resolve_objective(
        job.objectives if job is not None else [],
        definition_name=trial.training_job_definition_name,
        hyperparameters=trial.hyper_parameters,
        reported_metrics={m.metric_name for m in trial.final_metric_data_list},
    )


def _objectives(meta: Mapping[str, Any]) -> list[DefinitionObjective]:
    """The job's objectives per definition, from its item."""
    objectives = objectives_from_item(meta.get("objectives"))
    if not objectives and meta.get("objective_name") and meta.get("objective_type"):
        # A job item written before objectives were kept per definition.
        objectives = [DefinitionObjective(metric=str(meta["objective_name"]), type=str(meta["objective_type"]))]
    return objectives
