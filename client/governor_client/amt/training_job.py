"""A moto training job with real state: its Describe output is computed from its timeline.

It subclasses moto's own model (as :class:`~.tuning_job.SimTuningJob` does moto's tuning job) so that
everything moto does with them (ListTrainingJobs, tags, Search, the resource-groups tagging API) keeps
working; only the Describe/summary shapes are replaced.
Times are naive UTC datetimes, as moto keeps them.
"""

from __future__ import annotations

import copy
import os
from datetime import datetime
from typing import Any

from moto.sagemaker.models import FakeTrainingJob

from ._shapes import drop_none
from .timeline import TERMINAL_TRAINING_STATUSES, TrainingTimeline, Transition


class SimTrainingJob(FakeTrainingJob):
    """A training job driven by a :class:`TrainingTimeline`.

    Callers may rely on: ``training_job_status``, ``secondary_status``, ``training_start_time``,
    ``training_end_time``, ``warm_pool_status`` and ``last_modified_time`` always reflect the last applied
    transition, and ``response_object`` is a DescribeTrainingJob response without ``None`` values.
    """

    def __init__(  # noqa: PLR0913 - mirrors moto's training-job constructor, keyword-only
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
        super().__init__(account_id=account_id, region_name=region_name, **_moto_arguments(request, algorithm, output))
        self.algorithm_specification = algorithm
        self.request = request
        self.timeline = timeline
        self.metric_name = metric_name
        self.tuning_job_arn = tuning_job_arn
        self.tuning_job_name = tuning_job_name
        self.definition_name = definition_name
        self.tuned_hyperparameters = dict(tuned_hyperparameters or {})
        self.trial_index = trial_index
        self._start_state(created_at)
        self._s3_model_path = os.path.join(
            output.get("S3OutputPath", ""), self.training_job_name, "output", "model.tar.gz"
        )

    def _start_state(self, created_at: datetime) -> None:
        """A job just created: InProgress/Starting, nothing run, billed or reported yet."""
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
        return drop_none(
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
            drop_none({"Type": objective_type, "MetricName": self.metric_name, "Value": value})
            if value is not None
            else None
        )
        return drop_none(
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


def _moto_arguments(request: dict[str, Any], algorithm: dict[str, Any], output: dict[str, Any]) -> dict[str, Any]:
    """moto's FakeTrainingJob arguments for a CreateTrainingJob ``request`` (absent members as moto's empties)."""
    return {
        "training_job_name": request["TrainingJobName"],
        "hyper_parameters": request.get("HyperParameters") or {},
        # moto overwrites MetricDefinitions in place, so hand it a copy; SimTrainingJob restores ours.
        "algorithm_specification": copy.deepcopy(algorithm),
        "role_arn": request.get("RoleArn", ""),
        "input_data_config": request.get("InputDataConfig") or [],
        "output_data_config": output,
        "resource_config": request.get("ResourceConfig") or {},
        "vpc_config": request.get("VpcConfig") or {},
        "stopping_condition": request.get("StoppingCondition") or {},
        "tags": list(request.get("Tags") or []),
        "enable_network_isolation": bool(request.get("EnableNetworkIsolation", False)),
        "enable_inter_container_traffic_encryption": bool(request.get("EnableInterContainerTrafficEncryption", False)),
        "enable_managed_spot_training": bool(request.get("EnableManagedSpotTraining", False)),
        "checkpoint_config": request.get("CheckpointConfig") or {},
        "debug_hook_config": request.get("DebugHookConfig") or {},
        "debug_rule_configurations": request.get("DebugRuleConfigurations") or [],
        "tensor_board_output_config": request.get("TensorBoardOutputConfig") or {},
        "experiment_config": request.get("ExperimentConfig") or {},
    }
