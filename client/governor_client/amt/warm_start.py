"""CreateHyperParameterTuningJob's WarmStartConfig, checked as AWS documents it (moto stores it unchecked).

From the API reference (HyperParameterTuningJobWarmStartConfig) and the developer guide's "Warm Start
Tuning Restrictions" (docs/explanation/queue.md, "Resume by warm start", quotes them):

- 1 to 5 parents ("Maximum number of 5 items"); botocore checks only the minimum on the client side.
- every parent in a terminal state (Completed, Stopped or Failed);
- the same objective metric as the parents;
- the training jobs launched by every parent count against the maximum of training jobs of one tuning
  job: the stand-in refuses a child whose MaxNumberOfTrainingJobs plus its parents' training jobs
  passes that maximum (the quota default of the strategy, ``limit``) [doc; refusing at create is inferred].

Not checked (the stand-in has no algorithm to tell): the set of static plus tunable hyperparameters,
their types, the 10-change limit, identical data and image. A parent the stand-in did not simulate
(created on plain moto) is accepted as it is.
"""

from __future__ import annotations

from typing import Any

from moto.sagemaker.exceptions import ResourceNotFound, ValidationError

from .host import SageMakerStore
from .tuning_job import TERMINAL_TUNING_STATUSES, SimTuningJob

MAX_PARENTS = 5
WARM_START_TYPES = frozenset({"IdenticalDataAndAlgorithm", "TransferLearning"})


def warm_start_parents(job: SimTuningJob, store: SageMakerStore, limit: int) -> list[SimTuningJob]:
    """The parents of ``job``'s warm start (none without one); ValidationException/ResourceNotFound as AWS
    would answer the create when the warm start breaks a documented restriction."""
    config = job.warm_start_config or {}
    if not config:
        return []
    names = [str(p["HyperParameterTuningJobName"]) for p in config.get("ParentHyperParameterTuningJobs") or []]
    if len(names) > MAX_PARENTS:
        raise ValidationError(
            message="1 validation error detected: Value at 'warmStartConfig.parentHyperParameterTuningJobs' failed to"
            f" satisfy constraint: Member must have length less than or equal to {MAX_PARENTS}"
        )
    if config.get("WarmStartType") not in WARM_START_TYPES:
        raise ValidationError(message=f"WarmStartType must be one of {sorted(WARM_START_TYPES)}")
    parents = [_parent(store, name) for name in names]
    simulated = [p for p in parents if isinstance(p, SimTuningJob)]
    for parent in simulated:
        _check_parent(job, parent)
    _check_count(job, simulated, limit)
    return simulated


def _parent(store: SageMakerStore, name: str) -> Any:
    parent = store.hyper_parameter_tuning_jobs.get(name)
    if parent is None:
        raise ResourceNotFound(message=f"Amazon SageMaker can't find a tuning job with name {name}")
    return parent


def _check_parent(job: SimTuningJob, parent: SimTuningJob) -> None:
    name = parent.hyper_parameter_tuning_job_name
    if parent.hyper_parameter_tuning_job_status not in TERMINAL_TUNING_STATUSES:
        raise ValidationError(
            message=f"Parent tuning job {name} is {parent.hyper_parameter_tuning_job_status}: a warm start's parents"
            " must be in a terminal state (Completed, Stopped or Failed)"
        )
    if (parent.objective or {}).get("MetricName") != (job.objective or {}).get("MetricName"):
        raise ValidationError(
            message=f"The objective metric of the tuning job must be the same as the objective metric of parent {name}"
        )


def _check_count(job: SimTuningJob, parents: list[SimTuningJob], limit: int) -> None:
    limits = job.config.get("ResourceLimits") or {}
    own = int(limits.get("MaxNumberOfTrainingJobs") or 0)
    inherited = sum(len(p.trials) for p in parents)
    if own + inherited > limit:
        raise ValidationError(
            message=f"MaxNumberOfTrainingJobs {own} plus the {inherited} training jobs of the parent tuning jobs"
            f" exceeds the maximum of {limit} training jobs for a tuning job"
        )
