"""What the replay knows of a tuning job beyond its latest event, and what it does not know.

AWS's documented tuning-job event carries no ``HyperParameterTuningJobConfig`` (MaxParallel, the objective)
and may carry no ``Tags``; the deployed governor completes it with DescribeHyperParameterTuningJob and
ListTags (``tuning_governor.app.events.tuning.complete_arrival_facts``). A replay answers those calls
from, in order:

1. the job's latest event, when it carries the fact;
2. an earlier event of the same job that carried it (a job's configuration never changes; its tags are
   those of the latest event that carried ``Tags``);
3. the deployed governor's table (``--facts-from-table``): the job item the governor wrote at upsert,
   from what Describe and ListTags told it (:func:`read_table_facts`, :func:`facts_from_item`).

A fact none of them gives is a *gap*: the governor was answered without it (MaxParallel judged as 1,
no instances, no tags), and the result says so (:class:`FactGaps`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from botocore.exceptions import BotoCoreError, ClientError

from governor_client.replay.lines import ReplayInputError
from governor_client.replay.model import FactsInfo, IncompleteFacts
from tuning_governor.adapters.dynamodb import marshal, unmarshal
from tuning_governor.adapters.store.keys import job_pk
from tuning_governor.models.objectives import DefinitionObjective
from tuning_governor.models.sagemaker import ResourceConfig
from tuning_governor.models.tuning_job import (
    ResourceLimits,
    TrainingJobDefinition,
    TuningJob,
    TuningJobConfig,
    TuningObjective,
    TuningResourceConfig,
)

Missing = Literal["configuration", "instances", "tags"]
#: BatchGetItem takes at most 100 keys per request.
BATCH = 100
#: Unprocessed keys (throttling) are asked for again this many times, backing off, before giving up.
RETRIES = 5


@dataclass(frozen=True)
class KnownFacts:
    """What the deployed governor stored of one tuning job: what arrival is judged on."""

    config: TuningJobConfig | None
    definitions: tuple[TrainingJobDefinition, ...]
    """Empty when the stored plans cannot be turned back into definitions (see :func:`facts_from_item`)."""
    tags: dict[str, str] | None
    arn: str | None


@dataclass(frozen=True)
class TableFacts:
    """The facts read from a deployed table, by job key."""

    table: str
    jobs: Mapping[str, KnownFacts]


def has_configuration(job: TuningJob) -> bool:
    return job.config is not None and job.config.resource_limits is not None


def has_instances(job: TuningJob) -> bool:
    return any(d.alternatives() for d in job.definitions())


# -- the table -------------------------------------------------------------------------------------------
def read_table_facts(table: str, keys: Iterable[str], dynamodb: Any) -> TableFacts:
    """The job items of ``keys`` in the deployed governor's ``table`` (BatchGetItem, 100 keys a call,
    eventually consistent: one read of each job item, nothing else). A job without an item is left out.
    ``ReplayInputError`` with one line when the table cannot be read (missing, access denied)."""
    wanted = sorted(set(keys))
    found: dict[str, KnownFacts] = {}
    for start in range(0, len(wanted), BATCH):
        for item in _batch_get(table, wanted[start : start + BATCH], dynamodb):
            key = str(item.get("pk", "")).removeprefix("JOB#")
            found[key] = facts_from_item(item)
    return TableFacts(table=table, jobs=found)


def _batch_get(table: str, keys: list[str], dynamodb: Any) -> list[dict[str, Any]]:
    request: dict[str, Any] = {
        table: {"Keys": [marshal({"pk": job_pk(key), "sk": "META"}) for key in keys]},
    }
    items: list[dict[str, Any]] = []
    for attempt in range(RETRIES + 1):
        try:
            response = dynamodb.batch_get_item(RequestItems=request)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "error")
            raise ReplayInputError(f"cannot read facts from table {table}: {code}") from None
        except BotoCoreError as exc:
            raise ReplayInputError(f"cannot read facts from table {table}: {type(exc).__name__}") from None
        # One table per request: its items, whether the response keys them by the name or the ARN given.
        items.extend(unmarshal(item) for found in response.get("Responses", {}).values() for item in found)
        request = response.get("UnprocessedKeys") or {}
        if not request:
            return items
        time.sleep(min(2.0, 0.1 * 2**attempt))
    raise ReplayInputError(f"cannot read facts from table {table}: keys still unprocessed after {RETRIES} retries")


def facts_from_item(item: Mapping[str, Any]) -> KnownFacts:
    """A job item as ``upsert_job`` writes it, turned back into what Describe and ListTags gave the governor.

    The configuration: MaxParallel, MaxNumberOfTrainingJobs, strategy and objective (the item keeps no
    MaxRuntimeInSeconds, early-stopping type or parameter ranges). The definitions: rebuilt from the
    stored admission plans (MaxParallel x the instances per type of each plan, in AMT's priority order),
    objectives and roles, and kept only when they give back the stored plans and demand exactly (any
    single-definition job does; several definitions whose plans mix markets do not: then the instances
    come from the events alone). The tags: the item's (those at the governor's last upsert).
    """
    parallel = int(item.get("max_parallel") or 1)
    trials = item.get("max_trials")
    objective = None
    if item.get("objective_name"):
        objective = TuningObjective(
            type=str(item.get("objective_type") or "Maximize"), metric_name=item["objective_name"]
        )
    config = TuningJobConfig(
        strategy=item.get("strategy"),
        hyper_parameter_tuning_job_objective=objective,
        resource_limits=ResourceLimits(
            max_parallel_training_jobs=parallel,
            max_number_of_training_jobs=int(trials) if trials is not None else None,
        ),
    )
    definitions = _definitions(item, parallel)
    check = TuningJob.model_validate(
        {"HyperParameterTuningJobName": "check", "HyperParameterTuningJobStatus": "InProgress"}
    ).model_copy(update={"config": config, "training_job_definitions": list(definitions)})
    if not _same_plans(check, item):
        definitions = ()
    tags = item.get("tags")
    return KnownFacts(
        config=config,
        definitions=definitions,
        tags={str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else None,
        arn=item.get("arn"),
    )


def _definitions(item: Mapping[str, Any], parallel: int) -> tuple[TrainingJobDefinition, ...]:
    plans = [p for p in item.get("admission") or [] if isinstance(p, dict)]
    shapes: list[dict[str, int]] = []
    spot = False
    for plan in plans:
        on_demand, spot_part = dict(plan.get("on_demand") or {}), dict(plan.get("spot") or {})
        if on_demand and spot_part:
            return ()  # several definitions on different markets: not one list of alternatives
        spot = bool(spot_part)
        shapes.append({str(t): int(c) // parallel for t, c in (spot_part or on_demand).items()})
    objectives = [DefinitionObjective.model_validate(o) for o in item.get("objectives") or []]
    roles = [str(r) for r in item.get("roles") or []]
    count = max(1, len(objectives) if any(o.definition for o in objectives) else 1, len(roles))
    out: list[TrainingJobDefinition] = []
    for index in range(count):
        own = objectives[index] if index < len(objectives) and objectives[index].definition else None
        fields: dict[str, Any] = {
            "definition_name": own.definition if own else None,
            "tuning_objective": TuningObjective(type=own.type or "Maximize", metric_name=own.metric) if own else None,
            "role_arn": roles[index] if index < len(roles) else None,
            "enable_managed_spot_training": spot,
        }
        if index == 0:  # the first definition holds every plan; the others add only names and roles
            fields.update(_shape_fields(shapes))
        out.append(TrainingJobDefinition.model_validate(fields))
    return tuple(out)


def _shape_fields(shapes: list[dict[str, int]]) -> dict[str, Any]:
    if len(shapes) == 1:
        groups = [{"InstanceType": t, "InstanceCount": c} for t, c in shapes[0].items()]
        if len(groups) == 1:
            return {"resource_config": ResourceConfig.model_validate(groups[0])}
        return {"resource_config": ResourceConfig.model_validate({"InstanceGroups": groups})}
    if shapes and all(len(shape) == 1 for shape in shapes):
        configs = [{"InstanceType": t, "InstanceCount": c} for shape in shapes for t, c in shape.items()]
        return {
            "hyper_parameter_tuning_resource_config": TuningResourceConfig.model_validate({"InstanceConfigs": configs})
        }
    return {}


def _same_plans(job: TuningJob, item: Mapping[str, Any]) -> bool:
    """Whether the rebuilt definitions give the stored admission plans (markets and counts) and demand."""

    def counts(plans: Iterable[Mapping[str, Any]]) -> list[tuple[dict[str, int], dict[str, int]]]:
        return [
            (
                {str(t): int(c) for t, c in (p.get("on_demand") or {}).items()},
                {str(t): int(c) for t, c in (p.get("spot") or {}).items()},
            )
            for p in plans
        ]

    stored_demand = {str(t): int(c) for t, c in (item.get("demand") or {}).items()}
    return counts(job.admission_options()) == counts(item.get("admission") or []) and job.demand() == stored_demand


# -- gaps ------------------------------------------------------------------------------------------------
@dataclass
class FactGap:
    """A tuning job the governor asked SageMaker about while the replay could not give every fact."""

    name: str
    first_at: datetime
    missing: set[Missing] = field(default_factory=set)
    completed_at: datetime | None = None


class FactGaps:
    """The jobs answered on incomplete facts, first noted first."""

    def __init__(self) -> None:
        self.jobs: dict[str, FactGap] = {}

    def note(self, key: str, name: str, missing: Iterable[Missing], at: datetime) -> None:
        """The governor was answered about job ``key`` at ``at`` without ``missing`` (nothing if empty)."""
        wanted = set(missing)
        if not wanted:
            return
        gap = self.jobs.setdefault(key, FactGap(name=name, first_at=at))
        if not wanted <= gap.missing:
            gap.completed_at = None  # a fact still missing: not complete yet
        gap.missing |= wanted

    def known(self, key: str, have: Iterable[Missing], at: datetime) -> None:
        """An event of job ``key`` at ``at`` left the replay knowing ``have``: the gap is complete when
        that covers every fact it missed."""
        gap = self.jobs.get(key)
        if gap is not None and gap.completed_at is None and gap.missing <= set(have):
            gap.completed_at = at


def facts_info(gaps: FactGaps, table: TableFacts | None) -> FactsInfo:
    """The result's ``facts``: the table read (if any) and every job answered on incomplete facts."""
    order: dict[Missing, int] = {"configuration": 0, "instances": 1, "tags": 2}
    return FactsInfo(
        table=table.table if table is not None else None,
        jobs_from_table=len(table.jobs) if table is not None else 0,
        incomplete=[
            IncompleteFacts(
                job=gap.name,
                missing=sorted(gap.missing, key=order.__getitem__),
                first_at=gap.first_at,
                completed_at=gap.completed_at,
            )
            for gap in gaps.jobs.values()
        ],
    )
