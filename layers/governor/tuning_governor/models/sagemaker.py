"""SageMaker job shapes as they arrive in EventBridge ``detail`` and in Describe/List responses.

An event ``detail`` is essentially the Describe response plus ``Tags``, so one set of models serves
both. They accept what AWS really sends: timestamps as epoch-millis int/float/string, ISO strings or
datetimes (boto3); Tags as a flat map or a Key/Value list; absent, null or empty-object fields; and
status strings outside the documented enums, which are kept verbatim.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_pascal

TUNING_TERMINAL = frozenset({"Completed", "Stopped", "Failed"})
TRAINING_TERMINAL = frozenset({"Completed", "Stopped", "Failed"})
TRAINING_RUNNING = frozenset({"InProgress", "Stopping"})

_NUMERIC = re.compile(r"^-?\d+(\.\d+)?$")
# Training jobs launched by a tuning job are named <tuning-job-name>-NNN-xxxxxxxx.
_TRIAL_NAME = re.compile(r"^(?P<tuning>.+)-\d{3}-[0-9a-f]{8}$")


def parse_aws_time(value: Any) -> Any:
    """Turn any timestamp SageMaker emits into an aware UTC datetime (None stays None).

    Numbers and numeric strings are epoch milliseconds, as in SageMaker events.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, bool):
        raise ValueError("a timestamp cannot be a boolean")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    if isinstance(value, str):
        text = value.strip()
        if _NUMERIC.match(text):
            return datetime.fromtimestamp(float(text) / 1000, tz=UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValueError(f"unsupported timestamp {value!r}")


def parse_tags(value: Any) -> Any:
    """Tags arrive as a flat map in events and as a Key/Value list from ListTags."""
    if value is None:
        return {}
    if isinstance(value, list):
        tags: dict[str, str] = {}
        for item in value:
            if not isinstance(item, dict) or "Key" not in item:
                raise ValueError("a tag in a list must be an object with Key and Value")
            tags[str(item["Key"])] = str(item.get("Value", ""))
        return tags
    return value


def empty_to_none(value: Any) -> Any:
    """AWS sometimes renders an absent structure as ``{}``."""
    return None if value == {} else value


def none_to_empty(value: Any) -> Any:
    return {} if value is None else value


def none_to_list(value: Any) -> Any:
    return [] if value is None else value


AwsTime = Annotated[datetime | None, BeforeValidator(parse_aws_time)]
Tags = Annotated[dict[str, str], BeforeValidator(parse_tags)]
StrMap = Annotated[dict[str, str], BeforeValidator(none_to_empty)]


class AwsShape(BaseModel):
    """Base: PascalCase aliases as in the AWS APIs, unknown fields ignored, immutable."""

    model_config = ConfigDict(
        alias_generator=to_pascal, validate_by_name=True, validate_by_alias=True, extra="ignore", frozen=True
    )


class InstanceGroup(AwsShape):
    instance_type: str
    instance_count: int = Field(ge=1)
    instance_group_name: str | None = None


class ResourceConfig(AwsShape):
    instance_type: str | None = None
    instance_count: int | None = Field(default=None, ge=0)
    instance_groups: Annotated[list[InstanceGroup], BeforeValidator(none_to_list)] = []
    keep_alive_period_in_seconds: int | None = None
    # Read-only: "The job is billed for this instance type and count" when InstancePreferences is used.
    selected_instance_type: str | None = None
    selected_instance_count: int | None = None
    training_plan_arn: str | None = None

    def instances(self) -> dict[str, int]:
        """Instances of the cluster by type (heterogeneous clusters sum their groups)."""
        if self.instance_groups:
            out: dict[str, int] = {}
            for group in self.instance_groups:
                out[group.instance_type] = out.get(group.instance_type, 0) + group.instance_count
            return out
        itype = self.selected_instance_type or self.instance_type
        count = self.selected_instance_count or self.instance_count
        if itype and count:
            return {itype: count}
        return {}


class InstanceConfig(AwsShape):
    instance_type: str
    instance_count: int = Field(ge=1)


class TuningResourceConfig(AwsShape):
    """HyperParameterTuningResourceConfig: one type, or several InstanceConfigs tried in priority order."""

    instance_type: str | None = None
    instance_count: int | None = None
    allocation_strategy: str | None = None
    instance_configs: Annotated[list[InstanceConfig], BeforeValidator(none_to_list)] = []


class StoppingCondition(AwsShape):
    max_runtime_in_seconds: int | None = None
    max_wait_time_in_seconds: int | None = None


class TrainingJobDefinition(AwsShape):
    definition_name: str | None = None
    static_hyper_parameters: StrMap = {}
    resource_config: Annotated[ResourceConfig | None, BeforeValidator(empty_to_none)] = None
    hyper_parameter_tuning_resource_config: Annotated[TuningResourceConfig | None, BeforeValidator(empty_to_none)] = (
        None
    )
    enable_managed_spot_training: bool = False
    stopping_condition: StoppingCondition | None = None

    def cluster_options(self) -> list[dict[str, int]]:
        """Every cluster shape a trial of this definition may get, as {instance type: count}."""
        options: list[dict[str, int]] = []
        if self.resource_config is not None:
            shape = self.resource_config.instances()
            if shape:
                options.append(shape)
        trc = self.hyper_parameter_tuning_resource_config
        if trc is not None:
            options.extend({c.instance_type: c.instance_count} for c in trc.instance_configs)
            if trc.instance_type and trc.instance_count:
                options.append({trc.instance_type: trc.instance_count})
        return options


class ResourceLimits(AwsShape):
    max_number_of_training_jobs: int | None = None
    max_parallel_training_jobs: int = Field(default=1, ge=1)
    max_runtime_in_seconds: int | None = None


class TuningObjective(AwsShape):
    type: str = "Maximize"
    metric_name: str


class HyperbandStrategyConfig(AwsShape):
    min_resource: int | None = None
    max_resource: int | None = None


class StrategyConfig(AwsShape):
    hyperband_strategy_config: HyperbandStrategyConfig | None = None


class TuningJobConfig(AwsShape):
    strategy: str | None = None
    strategy_config: Annotated[StrategyConfig | None, BeforeValidator(empty_to_none)] = None
    hyper_parameter_tuning_job_objective: TuningObjective | None = None
    resource_limits: ResourceLimits | None = None
    training_job_early_stopping_type: str | None = None


class ObjectiveMetric(AwsShape):
    type: str | None = None
    metric_name: str
    value: float


class TrialSummary(AwsShape):
    """HyperParameterTrainingJobSummary (BestTrainingJob and ListTrainingJobsForHyperParameterTuningJob)."""

    training_job_name: str
    training_job_arn: str | None = None
    training_job_definition_name: str | None = None
    tuning_job_name: str | None = None
    creation_time: AwsTime = None
    training_start_time: AwsTime = None
    training_end_time: AwsTime = None
    training_job_status: str | None = None
    tuned_hyper_parameters: StrMap = {}
    failure_reason: str | None = None
    final_hyper_parameter_tuning_job_objective_metric: ObjectiveMetric | None = None
    objective_status: str | None = None


class ConsumedResources(AwsShape):
    runtime_in_seconds: int | None = None


class TuningJob(AwsShape):
    """A tuning job as described by SageMaker (event detail or DescribeHyperParameterTuningJob)."""

    name: str = Field(alias="HyperParameterTuningJobName", min_length=1)
    arn: str | None = Field(default=None, alias="HyperParameterTuningJobArn")
    status: str = Field(alias="HyperParameterTuningJobStatus", min_length=1)
    config: Annotated[TuningJobConfig | None, BeforeValidator(empty_to_none)] = Field(
        default=None, alias="HyperParameterTuningJobConfig"
    )
    training_job_definition: Annotated[TrainingJobDefinition | None, BeforeValidator(empty_to_none)] = None
    training_job_definitions: Annotated[list[TrainingJobDefinition], BeforeValidator(none_to_list)] = []
    creation_time: AwsTime = None
    end_time: AwsTime = Field(default=None, alias="HyperParameterTuningEndTime")
    last_modified_time: AwsTime = None
    training_job_status_counters: Annotated[dict[str, int], BeforeValidator(none_to_empty)] = {}
    objective_status_counters: Annotated[dict[str, int], BeforeValidator(none_to_empty)] = {}
    best_training_job: Annotated[TrialSummary | None, BeforeValidator(empty_to_none)] = None
    failure_reason: str | None = None
    consumed_resources: Annotated[ConsumedResources | None, BeforeValidator(empty_to_none)] = None
    tags: Tags = {}

    @property
    def key(self) -> str:
        """Stable identity: SageMaker ARNs lower-case the name, so the key is lower-case too."""
        return self.name.lower()

    def definitions(self) -> list[TrainingJobDefinition]:
        defs = list(self.training_job_definitions)
        if self.training_job_definition is not None:
            defs.insert(0, self.training_job_definition)
        return defs

    @property
    def max_parallel(self) -> int:
        limits = self.config.resource_limits if self.config else None
        return limits.max_parallel_training_jobs if limits else 1

    @property
    def max_trials(self) -> int | None:
        limits = self.config.resource_limits if self.config else None
        return limits.max_number_of_training_jobs if limits else None

    @property
    def objective(self) -> TuningObjective | None:
        return self.config.hyper_parameter_tuning_job_objective if self.config else None

    @property
    def early_stopping_enabled(self) -> bool:
        if self.config is None:
            return False
        return self.config.strategy == "Hyperband" or self.config.training_job_early_stopping_type == "Auto"

    def demand(self) -> dict[str, int]:
        """Worst-case concurrent instances per type: MaxParallel x the largest count it may use per type."""
        worst: dict[str, int] = {}
        for definition in self.definitions():
            for option in definition.cluster_options():
                for itype, count in option.items():
                    worst[itype] = max(worst.get(itype, 0), count)
        return {itype: count * self.max_parallel for itype, count in sorted(worst.items())}


class MetricData(AwsShape):
    metric_name: str
    value: float
    timestamp: AwsTime = None


class WarmPoolStatus(AwsShape):
    status: str | None = None
    resource_retained_billable_time_in_seconds: int | None = None
    reused_by_job: str | None = None


class TrainingJob(AwsShape):
    """A training job as described by SageMaker (event detail or DescribeTrainingJob)."""

    name: str = Field(alias="TrainingJobName", min_length=1)
    arn: str | None = Field(default=None, alias="TrainingJobArn")
    status: str = Field(alias="TrainingJobStatus", min_length=1)
    secondary_status: str | None = None
    tuning_job_arn: str | None = None
    hyper_parameters: StrMap = {}
    resource_config: Annotated[ResourceConfig | None, BeforeValidator(empty_to_none)] = None
    enable_managed_spot_training: bool = False
    creation_time: AwsTime = None
    training_start_time: AwsTime = None
    training_end_time: AwsTime = None
    last_modified_time: AwsTime = None
    training_time_in_seconds: int | None = None
    billable_time_in_seconds: int | None = None
    final_metric_data_list: Annotated[list[MetricData], BeforeValidator(none_to_list)] = []
    warm_pool_status: Annotated[WarmPoolStatus | None, BeforeValidator(empty_to_none)] = None
    failure_reason: str | None = None
    tags: Tags = {}

    @property
    def tuning_job_key(self) -> str | None:
        """Lower-case name of the tuning job that launched this trial, or None for a standalone job."""
        if self.tuning_job_arn:
            return self.tuning_job_arn.rsplit("/", 1)[-1].lower()
        match = _TRIAL_NAME.match(self.name)
        # Without TuningJobArn only the naming convention links a trial; callers confirm with Describe.
        return match.group("tuning").lower() if match else None

    def instances(self) -> dict[str, int]:
        return self.resource_config.instances() if self.resource_config else {}

    def metric(self, name: str) -> float | None:
        for item in self.final_metric_data_list:
            if item.metric_name == name:
                return item.value
        return None
