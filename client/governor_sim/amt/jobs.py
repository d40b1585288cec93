"""moto model objects with real state: training jobs and tuning jobs whose Describe output is computed.

They subclass moto's own models so that everything moto does with them (ListTrainingJobs, tags, Search,
the resource-groups tagging API) keeps working; only the Describe/summary shapes are replaced.
Times are naive UTC datetimes, as moto keeps them.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from moto.sagemaker.models import FakeTrainingJob, HyperParameterTuningJob

from .timeline import TERMINAL_TRAINING_STATUSES, TrainingTimeline, Transition

TERMINAL_TUNING_STATUSES: frozenset[str] = frozenset({"Completed", "Failed", "Stopped"})


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


class SimTrainingJob(FakeTrainingJob):
    """A training job driven by a :class:`TrainingTimeline`.

    Callers may rely on: ``training_job_status``, ``secondary_status``, ``training_start_time``,
    ``training_end_time``, ``warm_pool_status`` and ``last_modified_time`` always reflect the last applied
    transition, and ``response_object`` is a DescribeTrainingJob response without ``None`` values.
    """

    def __init__(
        self,
        *,
        account_id: str,
        region_name: str,
        request: dict[str, Any],
        created_at: datetime,
        timeline: TrainingTimeline,
        metric_name: str | None,
        tuning_job_arn: str | None = None,
        tuning_job_name: str | None = None,
        definition_name: str | None = None,
        tuned_hyperparameters: dict[str, str] | None = None,
        trial_index: int | None = None,
    ) -> None:
        request = copy.deepcopy(request)
        algorithm = request.get("AlgorithmSpecification") or {}
        output = request.get("OutputDataConfig") or {"S3OutputPath": ""}
        super().__init__(
            account_id=account_id,
            region_name=region_name,
            training_job_name=request["TrainingJobName"],
            hyper_parameters=request.get("HyperParameters") or {},
            # moto overwrites MetricDefinitions in place, so hand it a copy and restore ours below.
            algorithm_specification=copy.deepcopy(algorithm),
            role_arn=request.get("RoleArn", ""),
            input_data_config=request.get("InputDataConfig") or [],
            output_data_config=output,
            resource_config=request.get("ResourceConfig") or {},
            vpc_config=request.get("VpcConfig") or {},
            stopping_condition=request.get("StoppingCondition") or {},
            tags=list(request.get("Tags") or []),
            enable_network_isolation=bool(request.get("EnableNetworkIsolation", False)),
            enable_inter_container_traffic_encryption=bool(request.get("EnableInterContainerTrafficEncryption", False)),
            enable_managed_spot_training=bool(request.get("EnableManagedSpotTraining", False)),
            checkpoint_config=request.get("CheckpointConfig") or {},
            debug_hook_config=request.get("DebugHookConfig") or {},
            debug_rule_configurations=request.get("DebugRuleConfigurations") or [],
            tensor_board_output_config=request.get("TensorBoardOutputConfig") or {},
            experiment_config=request.get("ExperimentConfig") or {},
        )
        self.algorithm_specification = algorithm
        self.request = request
        self.timeline = timeline
        self.metric_name = metric_name
        self.tuning_job_arn = tuning_job_arn
        self.tuning_job_name = tuning_job_name
        self.definition_name = definition_name
        self.tuned_hyperparameters = dict(tuned_hyperparameters or {})
        self.trial_index = trial_index
        #: Bumped whenever the remaining transitions are replaced (stop); stale scheduled ones are ignored.
        self.generation = 0
        #: When the job entered ``Stopping`` (training stops advancing then), and when it is due to end.
        self.stopping_since: datetime | None = None
        self.scheduled_end: datetime | None = None
        self.creation_time = self.last_modified_time = created_at
        self.training_job_status = "InProgress"
        self.secondary_status = "Starting"
        # moto types these as always set; a job that has not started has neither.
        self.training_start_time: datetime | None = None  # type: ignore[assignment]
        self.training_end_time: datetime | None = None  # type: ignore[assignment]
        self.secondary_status_transitions: list[dict[str, Any]] = []
        self.final_metric_data_list: list[dict[str, Any]] = []
        self.failure_reason: str | None = None
        self.training_time_in_seconds: int | None = None
        self.billable_time_in_seconds: int | None = None
        self.warm_pool_status: dict[str, Any] | None = None
        self.model_artifacts = {}
        self._s3_model_path = os.path.join(
            output.get("S3OutputPath", ""), self.training_job_name, "output", "model.tar.gz"
        )

    # -- state ---------------------------------------------------------------------------------------------

    @property
    def is_terminal(self) -> bool:
        return self.training_job_status in TERMINAL_TRAINING_STATUSES

    @property
    def is_running(self) -> bool:
        """True while the job holds instances (InProgress or Stopping): it occupies a tuning slot."""
        return not self.is_terminal

    @property
    def objective_value(self) -> float | None:
        for metric in self.final_metric_data_list:
            if metric["MetricName"] == self.metric_name:
                return float(metric["Value"])
        return None

    @property
    def objective_status(self) -> str:
        """``Succeeded`` (metric reported), ``Failed`` (ended without one) or ``Pending``."""
        if self.objective_value is not None:
            return "Succeeded"
        return "Failed" if self.is_terminal else "Pending"

    def state_key(self) -> tuple[str, str, str | None]:
        """What an EventBridge state-change event is emitted for."""
        warm = self.warm_pool_status["Status"] if self.warm_pool_status else None
        return self.training_job_status, self.secondary_status, warm

    def apply(self, transition: Transition) -> bool:
        """Apply ``transition``; True when the job's observable state changed."""
        before = self.state_key()
        at = transition.at
        if transition.secondary != self.secondary_status or not self.secondary_status_transitions:
            if self.secondary_status_transitions:
                self.secondary_status_transitions[-1]["EndTime"] = at
            self.secondary_status_transitions.append(
                {"Status": transition.secondary, "StartTime": at, "StatusMessage": transition.message}
            )
        if transition.status == "Stopping" and self.stopping_since is None:
            self.stopping_since = at
        self.training_job_status = transition.status
        self.secondary_status = transition.secondary
        if transition.starts_training and self.training_start_time is None:
            self.training_start_time = at
        if transition.ends_job:
            self._finish(transition)
        if transition.warm_pool in ("InUse", "Available"):
            self.warm_pool_status = {"Status": transition.warm_pool}
        elif transition.warm_pool in ("Terminated", "Reused"):
            retained = self.timeline.keep_alive_s if transition.retained_s is None else transition.retained_s
            status: dict[str, Any] = {"Status": transition.warm_pool, "ResourceRetainedBillableTimeInSeconds": retained}
            if transition.reused_by:
                status["ReusedByJob"] = transition.reused_by
            self.warm_pool_status = status
        self.last_modified_time = at
        return self.state_key() != before

    def _finish(self, transition: Transition) -> None:
        at = transition.at
        self.secondary_status_transitions[-1]["EndTime"] = at
        self.training_end_time = at
        self.failure_reason = transition.failure_reason
        billing = self.timeline.billing_until(at)
        if billing is not None:
            self.training_time_in_seconds, self.billable_time_in_seconds = billing
            if transition.status != "Failed":
                self.model_artifacts = {"S3ModelArtifacts": self._s3_model_path}
        value = self.timeline.objective_at(transition.progress_at or at)
        if value is not None and self.metric_name is not None and transition.status != "Failed":
            self.final_metric_data_list = [{"MetricName": self.metric_name, "Value": value, "Timestamp": at}]

    # -- shapes --------------------------------------------------------------------------------------------

    @property
    def response_object(self) -> dict[str, Any]:
        """DescribeTrainingJob response (no None values)."""
        request = self.request
        return _drop_none(
            {
                "TrainingJobName": self.training_job_name,
                "TrainingJobArn": self.arn,
                "TuningJobArn": self.tuning_job_arn,
                "ModelArtifacts": self.model_artifacts or None,
                "TrainingJobStatus": self.training_job_status,
                "SecondaryStatus": self.secondary_status,
                "FailureReason": self.failure_reason,
                "HyperParameters": self.hyper_parameters or None,
                "AlgorithmSpecification": self.algorithm_specification,
                "RoleArn": self.role_arn,
                "InputDataConfig": self.input_data_config or None,
                "OutputDataConfig": request.get("OutputDataConfig"),
                "ResourceConfig": self.resource_config,
                "WarmPoolStatus": self.warm_pool_status,
                "VpcConfig": request.get("VpcConfig"),
                "StoppingCondition": self.stopping_condition,
                "CreationTime": self.creation_time,
                "TrainingStartTime": self.training_start_time,
                "TrainingEndTime": self.training_end_time,
                "LastModifiedTime": self.last_modified_time,
                "SecondaryStatusTransitions": [dict(t) for t in self.secondary_status_transitions],
                "FinalMetricDataList": [dict(m) for m in self.final_metric_data_list] or None,
                "EnableNetworkIsolation": self.enable_network_isolation,
                "EnableInterContainerTrafficEncryption": self.enable_inter_container_traffic_encryption,
                "EnableManagedSpotTraining": self.enable_managed_spot_training,
                "CheckpointConfig": request.get("CheckpointConfig"),
                "TrainingTimeInSeconds": self.training_time_in_seconds,
                "BillableTimeInSeconds": self.billable_time_in_seconds,
                "DebugHookConfig": request.get("DebugHookConfig"),
                "ExperimentConfig": request.get("ExperimentConfig"),
                "Environment": request.get("Environment"),
                "RetryStrategy": request.get("RetryStrategy"),
            }
        )

    def tuning_summary(self, objective_type: str | None) -> dict[str, Any]:
        """The ``HyperParameterTrainingJobSummary`` shape (BestTrainingJob, list items)."""
        value = self.objective_value
        metric = (
            _drop_none({"Type": objective_type, "MetricName": self.metric_name, "Value": value})
            if value is not None
            else None
        )
        return _drop_none(
            {
                "TrainingJobDefinitionName": self.definition_name,
                "TrainingJobName": self.training_job_name,
                "TrainingJobArn": self.arn,
                "TuningJobName": self.tuning_job_name,
                "CreationTime": self.creation_time,
                "TrainingStartTime": self.training_start_time,
                "TrainingEndTime": self.training_end_time,
                "TrainingJobStatus": self.training_job_status,
                "TunedHyperParameters": dict(self.tuned_hyperparameters),
                "FailureReason": self.failure_reason,
                "FinalHyperParameterTuningJobObjectiveMetric": metric,
                "ObjectiveStatus": self.objective_status,
            }
        )


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
        return _drop_none(
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
        return _drop_none(
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
