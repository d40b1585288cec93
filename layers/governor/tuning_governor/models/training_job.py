"""A training job (one trial, or a standalone job) as SageMaker describes it (event detail or
DescribeTrainingJob)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, Field

from tuning_governor.models.limits import (
    Arn,
    FailureReason,
    Label,
    MetricName,
    MetricValue,
    RoleArn,
    Seconds,
    Status,
    TrainingJobName,
    TuningJobArn,
)
from tuning_governor.models.place import job_key
from tuning_governor.models.sagemaker import (
    AwsShape,
    AwsTime,
    PlacedShape,
    ResourceConfig,
    StoppingCondition,
    StrMap,
    Tags,
    empty_to_none,
    none_to_list,
)

# Training jobs launched by a tuning job are named <tuning-job-name>-NNN-xxxxxxxx.
_TRIAL_NAME = re.compile(r"^(?P<tuning>.+)-\d{3}-[0-9a-f]{8}$")


class MetricData(AwsShape):
    metric_name: MetricName
    value: MetricValue
    timestamp: AwsTime = None


class WarmPoolStatus(AwsShape):
    status: Status | None = None
    resource_retained_billable_time_in_seconds: Seconds | None = None
    reused_by_job: Label | None = None


class TrainingJob(PlacedShape):
    """A training job as described by SageMaker (event detail or DescribeTrainingJob)."""

    name: TrainingJobName = Field(alias="TrainingJobName")
    arn: Arn | None = Field(default=None, alias="TrainingJobArn")
    status: Status = Field(alias="TrainingJobStatus")
    secondary_status: Status | None = None
    tuning_job_arn: TuningJobArn | None = None
    # In AMT's trial summaries; not in DescribeTrainingJob (botocore 1.44): read when a source carries it.
    training_job_definition_name: Label | None = None
    hyper_parameters: StrMap = Field(default_factory=dict)
    role_arn: RoleArn | None = None
    resource_config: Annotated[ResourceConfig | None, BeforeValidator(empty_to_none)] = None
    enable_managed_spot_training: bool = False
    creation_time: AwsTime = None
    training_start_time: AwsTime = None
    training_end_time: AwsTime = None
    last_modified_time: AwsTime = None
    training_time_in_seconds: Seconds | None = None
    billable_time_in_seconds: Seconds | None = None
    final_metric_data_list: Annotated[list[MetricData], BeforeValidator(none_to_list)] = Field(default_factory=list)
    warm_pool_status: Annotated[WarmPoolStatus | None, BeforeValidator(empty_to_none)] = None
    failure_reason: FailureReason = None
    stopping_condition: Annotated[StoppingCondition | None, BeforeValidator(empty_to_none)] = None
    tags: Tags = Field(default_factory=dict)

    @property
    def roles(self) -> list[str]:
        """Its execution role as a list (empty when the source did not carry it)."""
        return [self.role_arn] if self.role_arn else []

    @property
    def tuning_job_key(self) -> str | None:
        """Key of the tuning job that launched this trial (its lower-case name, qualified by the place
        outside the home place, as ``TuningJob.key``), or None for a standalone job."""
        if self.tuning_job_arn:
            return job_key(self.tuning_job_arn.rsplit("/", 1)[-1], self.place, None)
        match = _TRIAL_NAME.match(self.name)
        # Without TuningJobArn only the naming convention links a trial; callers confirm with Describe.
        return job_key(match.group("tuning"), self.place, None) if match else None

    def instances(self) -> dict[str, int]:
        return self.resource_config.instances() if self.resource_config else {}

    def metric(self, name: str) -> float | None:
        for item in self.final_metric_data_list:
            if item.metric_name == name:
                return item.value
        return None
