"""A moto tuning job whose status, counters and best job come from its real trials."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from moto.sagemaker.models import HyperParameterTuningJob

from ._shapes import drop_none
from .training_job import SimTrainingJob

TERMINAL_TUNING_STATUSES: frozenset[str] = frozenset({"Completed", "Failed", "Stopped"})


class SimTuningJob(HyperParameterTuningJob):
    """A tuning job whose status, counters and best job come from its real trials.

    The engine owns the launching logic; this object holds the state and renders the API shapes.
    """

    def __init__(self, *, created_at: datetime, now_fn: Callable[[], datetime], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.now_fn = now_fn
        # moto keeps None when no Tags were passed, which breaks ListTags/AddTags.
        self.tags = list(kwargs.get("tags") or [])
        self.creation_time = self.last_modified_time = created_at
        self.hyper_parameter_tuning_job_status = "InProgress"
        # moto sets an end time and "" at creation; a running job has neither.
        self.hyper_parameter_tuning_end_time: datetime | None = None  # type: ignore[assignment]
        self.failure_reason = None  # type: ignore[assignment]
        self.trials: list[SimTrainingJob] = []
        self.parents: list[SimTuningJob] = []
        self.stop_requested = False

    @property
    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = self.hyper_parameter_tuning_job_config
        return config

    @property
    def definitions(self) -> list[dict[str, Any]]:
        if self.training_job_definitions:
            return list(self.training_job_definitions)
        return [self.training_job_definition] if self.training_job_definition else []

    @property
    def objective(self) -> dict[str, Any] | None:
        objective = self.config.get("HyperParameterTuningJobObjective")
        if not objective and self.definitions:
            objective = self.definitions[0].get("TuningObjective")
        return dict(objective) if objective else None

    @property
    def maximize(self) -> bool:
        return bool((self.objective or {}).get("Type", "Maximize") != "Minimize")

    @property
    def is_terminal(self) -> bool:
        return self.hyper_parameter_tuning_job_status in TERMINAL_TUNING_STATUSES

    @property
    def running_trials(self) -> list[SimTrainingJob]:
        return [trial for trial in self.trials if trial.is_running]

    def best_trial(self, include_parents: bool = False) -> SimTrainingJob | None:
        """The trial with the best reported objective (ties: the earlier trial)."""
        candidates = [t for t in self.trials if t.objective_value is not None]
        if include_parents:
            candidates += [t for p in self.parents for t in p.trials if t.objective_value is not None]
        if not candidates:
            return None
        sign = 1.0 if self.maximize else -1.0
        best = candidates[0]
        for trial in candidates[1:]:
            if sign * (trial.objective_value or 0.0) > sign * (best.objective_value or 0.0):
                best = trial
        return best

    def training_job_counters(self) -> dict[str, int]:
        statuses = [t.training_job_status for t in self.trials]
        return {
            "Completed": statuses.count("Completed"),
            "InProgress": statuses.count("InProgress") + statuses.count("Stopping"),
            # Retries are not simulated yet: every failure is final.
            "RetryableError": 0,
            "NonRetryableError": statuses.count("Failed"),
            "Stopped": statuses.count("Stopped"),
        }

    def objective_counters(self) -> dict[str, int]:
        statuses = [t.objective_status for t in self.trials]
        return {
            "Succeeded": statuses.count("Succeeded"),
            "Pending": statuses.count("Pending"),
            "Failed": statuses.count("Failed"),
        }

    def consumed_runtime(self, now: datetime) -> int:
        end = self.hyper_parameter_tuning_end_time or now
        return max(0, int((end - self.creation_time).total_seconds()))

    def trials_since_best(self) -> int:
        best = self.best_trial()
        if best is None:
            return 0
        finished = [t for t in self.trials if t.is_terminal]
        return sum(1 for t in finished if t.creation_time > best.creation_time)

    def describe_at(self, now: datetime) -> dict[str, Any]:
        """DescribeHyperParameterTuningJob response at virtual time ``now`` (no None values)."""
        objective_type = (self.objective or {}).get("Type")
        best = self.best_trial()
        overall = self.best_trial(include_parents=True) if self.warm_start_config else None
        return drop_none(
            {
                "HyperParameterTuningJobName": self.hyper_parameter_tuning_job_name,
                "HyperParameterTuningJobArn": self.arn,
                "HyperParameterTuningJobConfig": self.config,
                "TrainingJobDefinition": self.training_job_definition,
                "TrainingJobDefinitions": self.training_job_definitions,
                "HyperParameterTuningJobStatus": self.hyper_parameter_tuning_job_status,
                "CreationTime": self.creation_time,
                "HyperParameterTuningEndTime": self.hyper_parameter_tuning_end_time,
                "LastModifiedTime": self.last_modified_time,
                "TrainingJobStatusCounters": self.training_job_counters(),
                "ObjectiveStatusCounters": self.objective_counters(),
                "BestTrainingJob": best.tuning_summary(objective_type) if best else None,
                "OverallBestTrainingJob": overall.tuning_summary(objective_type) if overall else None,
                "WarmStartConfig": self.warm_start_config,
                "Autotune": self.autotune,
                "FailureReason": self.failure_reason or None,
                "TuningJobCompletionDetails": (
                    {"NumberOfTrainingJobsObjectiveNotImproving": self.trials_since_best()} if best else None
                ),
                "ConsumedResources": {"RuntimeInSeconds": self.consumed_runtime(now)},
            }
        )

    def describe(self) -> dict[str, Any]:
        """What moto's DescribeHyperParameterTuningJob handler returns (state at the virtual now)."""
        return self.describe_at(self.now_fn())

    def summary(self) -> dict[str, Any]:
        """What moto's ListHyperParameterTuningJobs handler returns per job."""
        return self.summary_at(self.now_fn())

    def summary_at(self, now: datetime) -> dict[str, Any]:
        """The ``HyperParameterTuningJobSummary`` shape used by ListHyperParameterTuningJobs."""
        return drop_none(
            {
                "HyperParameterTuningJobName": self.hyper_parameter_tuning_job_name,
                "HyperParameterTuningJobArn": self.arn,
                "HyperParameterTuningJobStatus": self.hyper_parameter_tuning_job_status,
                "Strategy": self.config.get("Strategy"),
                "CreationTime": self.creation_time,
                "HyperParameterTuningEndTime": self.hyper_parameter_tuning_end_time,
                "LastModifiedTime": self.last_modified_time,
                "TrainingJobStatusCounters": self.training_job_counters(),
                "ObjectiveStatusCounters": self.objective_counters(),
                "ResourceLimits": self.config.get("ResourceLimits"),
            }
        )
