"""SageMaker job shapes as they arrive in EventBridge ``detail`` and in Describe/List responses.

An event ``detail`` is essentially the Describe response plus ``Tags``, so one set of models serves
both. They accept what AWS really sends: timestamps as epoch-millis int/float/string, ISO strings or
datetimes (boto3); Tags as a flat map or a Key/Value list; absent, null or empty-object fields; and
status strings outside the documented enums, which are kept verbatim. What they accept is bounded by
``models/limits.py``: numbers DynamoDB cannot hold and names that cannot be keys are rejected, invalid
tags and hyperparameters are dropped with a warning.
"""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_pascal

from tuning_governor.governance.stagnation import DefinitionObjective
from tuning_governor.models.limits import (
    Arn,
    Count,
    FailureReason,
    HyperParameters,
    InstanceType,
    Label,
    MetricName,
    MetricValue,
    PositiveCount,
    Seconds,
    Status,
    TrainingJobName,
    TuningJobArn,
    TuningJobName,
    clean_tags,
)

TUNING_TERMINAL = frozenset({"Completed", "Stopped", "Failed"})
TRAINING_TERMINAL = frozenset({"Completed", "Stopped", "Failed"})
TRAINING_RUNNING = frozenset({"InProgress", "Stopping"})

# Prioritized InstanceConfigs (1-6) per definition (1-10) could combine into millions of plans;
# admission tries the first ones (all of them for a single definition).
MAX_ADMISSION_PLANS = 36
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
        return _from_millis(value)
    if isinstance(value, str):
        text = value.strip()
        if _NUMERIC.match(text):
            return _from_millis(float(text))
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValueError(f"unsupported timestamp {value!r}")


def _from_millis(millis: float) -> datetime:
    # Out-of-range values raise OverflowError or OSError, which pydantic would not turn into a
    # validation error: make every impossible timestamp a ValueError (a rejection, not a crash).
    try:
        return datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise ValueError(f"timestamp {str(millis)[:40]} ms is out of range") from exc


def parse_tags(value: Any) -> Any:
    """Tags arrive as a flat map in events and as a Key/Value list from ListTags.

    Tags that break AWS's tagging rules are dropped with a warning (see ``models/limits.py``).
    """
    return clean_tags(value)


def empty_to_none(value: Any) -> Any:
    """AWS sometimes renders an absent structure as ``{}``."""
    return None if value == {} else value


def none_to_empty(value: Any) -> Any:
    return {} if value is None else value


def none_to_list(value: Any) -> Any:
    return [] if value is None else value


AwsTime = Annotated[datetime | None, BeforeValidator(parse_aws_time)]
Tags = Annotated[dict[str, str], BeforeValidator(parse_tags)]
StrMap = HyperParameters


class AwsShape(BaseModel):
    """Base: PascalCase aliases as in the AWS APIs, unknown fields ignored, immutable."""

    model_config = ConfigDict(
        alias_generator=to_pascal, validate_by_name=True, validate_by_alias=True, extra="ignore", frozen=True
    )


class InstanceGroup(AwsShape):
    instance_type: InstanceType
    instance_count: PositiveCount
    instance_group_name: str | None = None


class ResourceConfig(AwsShape):
    instance_type: InstanceType | None = None
    instance_count: Count | None = None
    instance_groups: Annotated[list[InstanceGroup], BeforeValidator(none_to_list)] = []
    keep_alive_period_in_seconds: Seconds | None = None
    # Read-only: "The job is billed for this instance type and count" when InstancePreferences is used.
    selected_instance_type: InstanceType | None = None
    selected_instance_count: Count | None = None
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
    instance_type: InstanceType
    instance_count: PositiveCount


class TuningResourceConfig(AwsShape):
    """HyperParameterTuningResourceConfig: one type, or several InstanceConfigs tried in priority order."""

    instance_type: InstanceType | None = None
    instance_count: Count | None = None
    allocation_strategy: Label | None = None
    instance_configs: Annotated[list[InstanceConfig], BeforeValidator(none_to_list)] = []


class StoppingCondition(AwsShape):
    max_runtime_in_seconds: Seconds | None = None
    max_wait_time_in_seconds: Seconds | None = None


class TrainingJobDefinition(AwsShape):
    definition_name: Label | None = None
    static_hyper_parameters: StrMap = {}
    resource_config: Annotated[ResourceConfig | None, BeforeValidator(empty_to_none)] = None
    hyper_parameter_tuning_resource_config: Annotated[TuningResourceConfig | None, BeforeValidator(empty_to_none)] = (
        None
    )
    enable_managed_spot_training: bool = False
    stopping_condition: StoppingCondition | None = None
    # Per-definition objective (multi-definition jobs); when absent the job's top-level objective applies.
    tuning_objective: Annotated[TuningObjective | None, BeforeValidator(empty_to_none)] = None

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

    def alternatives(self) -> list[dict[str, int]]:
        """The cluster shapes a trial of this definition gets, in priority order: the prioritized
        InstanceConfigs (AMT launches a trial on the first with capacity), else the one configured."""
        trc = self.hyper_parameter_tuning_resource_config
        if trc is not None and trc.instance_configs:
            return [{c.instance_type: c.instance_count} for c in trc.instance_configs]
        if trc is not None and trc.instance_type and trc.instance_count:
            return [{trc.instance_type: trc.instance_count}]
        shape = self.resource_config.instances() if self.resource_config is not None else {}
        return [shape] if shape else []


class ResourceLimits(AwsShape):
    max_number_of_training_jobs: PositiveCount | None = None
    max_parallel_training_jobs: PositiveCount = 1
    max_runtime_in_seconds: Seconds | None = None


class TuningObjective(AwsShape):
    type: Label = "Maximize"
    metric_name: MetricName


class HyperbandStrategyConfig(AwsShape):
    min_resource: Count | None = None
    max_resource: Count | None = None


class StrategyConfig(AwsShape):
    hyperband_strategy_config: HyperbandStrategyConfig | None = None


class TuningJobConfig(AwsShape):
    strategy: Label | None = None
    strategy_config: Annotated[StrategyConfig | None, BeforeValidator(empty_to_none)] = None
    hyper_parameter_tuning_job_objective: TuningObjective | None = None
    resource_limits: ResourceLimits | None = None
    training_job_early_stopping_type: Label | None = None


class ObjectiveMetric(AwsShape):
    type: Label | None = None
    metric_name: MetricName
    value: MetricValue


class TrialSummary(AwsShape):
    """HyperParameterTrainingJobSummary (BestTrainingJob and ListTrainingJobsForHyperParameterTuningJob)."""

    training_job_name: TrainingJobName
    training_job_arn: Arn | None = None
    training_job_definition_name: Label | None = None
    tuning_job_name: Label | None = None
    creation_time: AwsTime = None
    training_start_time: AwsTime = None
    training_end_time: AwsTime = None
    training_job_status: Status | None = None
    tuned_hyper_parameters: StrMap = {}
    failure_reason: FailureReason = None
    final_hyper_parameter_tuning_job_objective_metric: ObjectiveMetric | None = None
    objective_status: Label | None = None


class ConsumedResources(AwsShape):
    runtime_in_seconds: Seconds | None = None


class TuningJob(AwsShape):
    """A tuning job as described by SageMaker (event detail or DescribeHyperParameterTuningJob)."""

    name: TuningJobName = Field(alias="HyperParameterTuningJobName")
    arn: Arn | None = Field(default=None, alias="HyperParameterTuningJobArn")
    status: Status = Field(alias="HyperParameterTuningJobStatus")
    config: Annotated[TuningJobConfig | None, BeforeValidator(empty_to_none)] = Field(
        default=None, alias="HyperParameterTuningJobConfig"
    )
    training_job_definition: Annotated[TrainingJobDefinition | None, BeforeValidator(empty_to_none)] = None
    training_job_definitions: Annotated[list[TrainingJobDefinition], BeforeValidator(none_to_list)] = []
    creation_time: AwsTime = None
    end_time: AwsTime = Field(default=None, alias="HyperParameterTuningEndTime")
    last_modified_time: AwsTime = None
    training_job_status_counters: Annotated[dict[str, Count], BeforeValidator(none_to_empty)] = {}
    objective_status_counters: Annotated[dict[str, Count], BeforeValidator(none_to_empty)] = {}
    best_training_job: Annotated[TrialSummary | None, BeforeValidator(empty_to_none)] = None
    failure_reason: FailureReason = None
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

    def objectives(self) -> list[DefinitionObjective]:
        """The objective of each definition: its own ``TuningObjective``, else the job's top-level one.

        A job given only the top-level objective (or whose event carries no definitions) has one entry.
        """
        top = self.objective
        out: list[DefinitionObjective] = []
        for definition in self.definitions():
            own = definition.tuning_objective or top
            if own is not None:
                out.append(
                    DefinitionObjective(definition=definition.definition_name, metric=own.metric_name, type=own.type)
                )
        if not out and top is not None:
            out.append(DefinitionObjective(metric=top.metric_name, type=top.type))
        return out

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

    def admission_options(self, limit: int = MAX_ADMISSION_PLANS) -> list[dict[str, Any]]:
        """The plans the job may run on, in priority order, for admission: ``{"label", "on_demand",
        "spot"}`` with MaxParallel x the largest count per type over the definitions, split by market.

        A job with one definition has one plan per InstanceConfig; several definitions combine their
        alternatives (all first choices first), at most ``limit`` plans. Empty when no shape is known.
        """
        per_definition = [
            [(i, shape, d.enable_managed_spot_training) for i, shape in enumerate(d.alternatives(), start=1)]
            for d in self.definitions()
        ]
        per_definition = [alts for alts in per_definition if alts]
        if not per_definition:
            return []
        plans: list[dict[str, Any]] = []
        # Lexicographic: every definition's first choice first, the last definition's choices varying fastest.
        for combo in itertools.islice(itertools.product(*per_definition), limit):
            on_demand: dict[str, int] = {}
            spot: dict[str, int] = {}
            for _, shape, is_spot in combo:
                target = spot if is_spot else on_demand
                for itype, count in shape.items():
                    target[itype] = max(target.get(itype, 0), count)
            label = " + ".join(
                f"{'spot ' if is_spot else ''}{' + '.join(f'{c} x {t}' for t, c in sorted(shape.items()))}"
                for _, shape, is_spot in combo
            )
            plans.append(
                {
                    "label": f"{label} per trial",
                    "on_demand": {t: c * self.max_parallel for t, c in sorted(on_demand.items())},
                    "spot": {t: c * self.max_parallel for t, c in sorted(spot.items())},
                }
            )
        return plans

    def lacks_arrival_facts(self) -> bool:
        """True when the event lacks what arrival is judged on (MaxParallel, the instance shapes):
        AWS's documented tuning-job event carries no HyperParameterTuningJobConfig."""
        limits = self.config.resource_limits if self.config else None
        return limits is None or not any(d.alternatives() for d in self.definitions())


class MetricData(AwsShape):
    metric_name: MetricName
    value: MetricValue
    timestamp: AwsTime = None


class WarmPoolStatus(AwsShape):
    status: Status | None = None
    resource_retained_billable_time_in_seconds: Seconds | None = None
    reused_by_job: Label | None = None


class TrainingJob(AwsShape):
    """A training job as described by SageMaker (event detail or DescribeTrainingJob)."""

    name: TrainingJobName = Field(alias="TrainingJobName")
    arn: Arn | None = Field(default=None, alias="TrainingJobArn")
    status: Status = Field(alias="TrainingJobStatus")
    secondary_status: Status | None = None
    tuning_job_arn: TuningJobArn | None = None
    # In AMT's trial summaries; not in DescribeTrainingJob (botocore 1.44): read when a source carries it.
    training_job_definition_name: Label | None = None
    hyper_parameters: StrMap = {}
    resource_config: Annotated[ResourceConfig | None, BeforeValidator(empty_to_none)] = None
    enable_managed_spot_training: bool = False
    creation_time: AwsTime = None
    training_start_time: AwsTime = None
    training_end_time: AwsTime = None
    last_modified_time: AwsTime = None
    training_time_in_seconds: Seconds | None = None
    billable_time_in_seconds: Seconds | None = None
    final_metric_data_list: Annotated[list[MetricData], BeforeValidator(none_to_list)] = []
    warm_pool_status: Annotated[WarmPoolStatus | None, BeforeValidator(empty_to_none)] = None
    failure_reason: FailureReason = None
    stopping_condition: Annotated[StoppingCondition | None, BeforeValidator(empty_to_none)] = None
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
