"""A tuning job as SageMaker describes it (event detail or DescribeHyperParameterTuningJob), with its
configuration, definitions and trial summaries, and what admission and the rules read from it."""

from __future__ import annotations

import itertools
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from tuning_governor.models.limits import (
    Arn,
    Count,
    FailureReason,
    InstanceType,
    Label,
    MetricName,
    MetricValue,
    PositiveCount,
    RoleArn,
    Seconds,
    Status,
    TrainingJobName,
    TuningJobName,
)
from tuning_governor.models.objectives import DefinitionObjective
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
    none_to_empty,
    none_to_list,
)

# Prioritized InstanceConfigs (1-6) per definition (1-10) could combine into millions of plans;
# admission tries the first ones (all of them for a single definition).
MAX_ADMISSION_PLANS = 36


class InstanceConfig(AwsShape):
    instance_type: InstanceType
    instance_count: PositiveCount


class TuningResourceConfig(AwsShape):
    """HyperParameterTuningResourceConfig: one type, or several InstanceConfigs tried in priority order."""

    instance_type: InstanceType | None = None
    instance_count: Count | None = None
    allocation_strategy: Label | None = None
    instance_configs: Annotated[list[InstanceConfig], BeforeValidator(none_to_list)] = []


class TrainingJobDefinition(AwsShape):
    definition_name: Label | None = None
    role_arn: RoleArn | None = None
    """The execution role the definition's trials run as (fixed at creation: a team may be known by it)."""
    static_hyper_parameters: StrMap = {}
    resource_config: Annotated[ResourceConfig | None, BeforeValidator(empty_to_none)] = None
    hyper_parameter_tuning_resource_config: Annotated[TuningResourceConfig | None, BeforeValidator(empty_to_none)] = (
        None
    )
    enable_managed_spot_training: bool = False
    stopping_condition: StoppingCondition | None = None
    # Per-definition objective (multi-definition jobs); when absent the job's top-level objective applies.
    tuning_objective: Annotated[TuningObjective | None, BeforeValidator(empty_to_none)] = None
    # Read by the large-batch checks only (domain.large_batch), kept as SageMaker sends them.
    algorithm_specification: Annotated[dict[str, Any] | None, BeforeValidator(empty_to_none)] = None
    hyper_parameter_ranges: Annotated[dict[str, Any] | None, BeforeValidator(empty_to_none)] = None

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
    parameter_ranges: Annotated[dict[str, Any] | None, BeforeValidator(empty_to_none)] = None
    """The tuned ranges (read by the large-batch checks only), as SageMaker sends them."""


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


class TuningJob(PlacedShape):
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
        """Stable identity: SageMaker ARNs lower-case the name, so the key is lower-case too; a job
        outside the home place is keyed ``<account>/<region>/<name>`` (``models.place.job_key``)."""
        return job_key(self.name, self.place, None)

    def definitions(self) -> list[TrainingJobDefinition]:
        defs = list(self.training_job_definitions)
        if self.training_job_definition is not None:
            defs.insert(0, self.training_job_definition)
        return defs

    def role_arns(self) -> list[str]:
        """The execution roles of its definitions, sorted, each once (empty when none is known)."""
        return sorted({d.role_arn for d in self.definitions() if d.role_arn})

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
