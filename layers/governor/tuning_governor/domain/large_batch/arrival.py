"""What the arrival judgement keeps of a tuning job for the large-batch checks: the request's parts they
read (ranges, static hyperparameters, algorithm, clusters, strategy), in the request's own shape, so the
``large-batch`` rule judges the job item with the same ``findings`` as ``check`` judges a request."""

from __future__ import annotations

import json
from typing import Any

from tuning_governor.domain.large_batch.read import definitions
from tuning_governor.models.tuning_job import TrainingJobDefinition, TuningJob

#: A static value longer than this is no number or optimizer name (a submit directory, a JSON blob):
#: cut, so a job item stays far below DynamoDB's 400 KB.
MAX_VALUE_CHARS = 256


def _definition(definition: TrainingJobDefinition) -> dict[str, Any]:
    shape = definition.model_dump(
        by_alias=True,
        exclude_none=True,
        include={"definition_name", "algorithm_specification", "hyper_parameter_ranges", "resource_config"},
    )
    shape["StaticHyperParameters"] = {k: v[:MAX_VALUE_CHARS] for k, v in definition.static_hyper_parameters.items()}
    resources = definition.hyper_parameter_tuning_resource_config
    if resources is not None:
        shape["HyperParameterTuningResourceConfig"] = resources.model_dump(by_alias=True, exclude_none=True)
    spec = shape.get("AlgorithmSpecification") or {}
    shape["AlgorithmSpecification"] = {k: spec[k] for k in ("TrainingImage", "AlgorithmName") if k in spec}
    config = shape.get("ResourceConfig") or {}
    shape["ResourceConfig"] = {k: config[k] for k in ("InstanceType", "InstanceCount") if k in config}
    return shape


#: What the job's item keeps of a request at most (a real request's ranges are a few hundred characters).
MAX_REQUEST_CHARS = 16_000
#: How deeply a request nests at most (SageMaker's shapes nest 6 levels).
MAX_DEPTH = 12


def checked_request(job: TuningJob) -> dict[str, Any]:
    """The parts of ``job``'s request the large-batch checks read; empty when there is nothing to judge
    (no configuration or definitions yet, only algorithms the checks stay silent on, e.g. XGBoost, or
    ranges of a shape SageMaker never sends, which the checks cannot read: that job is not judged)."""
    try:
        return _checked_request(job)
    except (TypeError, ValueError, AttributeError, RecursionError):
        return {}


def _checked_request(job: TuningJob) -> dict[str, Any]:
    if job.config is None or not job.definitions():
        return {}
    config = job.config.model_dump(
        by_alias=True,
        exclude_none=True,
        include={"strategy", "strategy_config", "training_job_early_stopping_type", "parameter_ranges"},
    )
    if job.max_trials is not None:
        config["ResourceLimits"] = {"MaxNumberOfTrainingJobs": job.max_trials}
    request: dict[str, Any] = {"HyperParameterTuningJobConfig": config}
    if job.training_job_definition is not None:
        request["TrainingJobDefinition"] = _definition(job.training_job_definition)
    if job.training_job_definitions:
        request["TrainingJobDefinitions"] = [_definition(d) for d in job.training_job_definitions]
    if all(d.silent for d in definitions(request, {})):
        return {}
    # Kept on the job's item: nothing SageMaker would not send (ranges nested past JSON's sense, or bulky).
    if _depth(request) > MAX_DEPTH or len(json.dumps(request, default=str)) > MAX_REQUEST_CHARS:
        return {}
    return request


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (iteratively: a hostile value must not exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if level <= MAX_DEPTH and isinstance(node, dict):
            stack += [(v, level + 1) for v in node.values()]
        elif level <= MAX_DEPTH and isinstance(node, list):
            stack += [(v, level + 1) for v in node]
    return deepest
