"""The CreateTrainingJob request of a tuning job's trial, built from its training job definition."""

from __future__ import annotations

from typing import Any

from ._shapes import drop_none
from .tuning_job import SimTuningJob


def trial_request(job: SimTuningJob, definition: dict[str, Any], name: str, tuned: dict[str, str]) -> dict[str, Any]:
    """The request of trial ``name`` of ``job``: ``definition`` with the tuned hyperparameters over its static ones."""
    resource_config = trial_resource_config(definition)
    static = {str(k): str(v) for k, v in (definition.get("StaticHyperParameters") or {}).items()}
    return drop_none(
        {
            "TrainingJobName": name,
            "HyperParameters": {**static, **tuned},
            "AlgorithmSpecification": definition.get("AlgorithmSpecification"),
            "RoleArn": definition.get("RoleArn"),
            "InputDataConfig": definition.get("InputDataConfig"),
            "OutputDataConfig": definition.get("OutputDataConfig"),
            "ResourceConfig": resource_config,
            "VpcConfig": definition.get("VpcConfig"),
            "StoppingCondition": definition.get("StoppingCondition"),
            "EnableNetworkIsolation": definition.get("EnableNetworkIsolation"),
            "EnableInterContainerTrafficEncryption": definition.get("EnableInterContainerTrafficEncryption"),
            "EnableManagedSpotTraining": definition.get("EnableManagedSpotTraining"),
            "CheckpointConfig": definition.get("CheckpointConfig"),
            "RetryStrategy": definition.get("RetryStrategy"),
            "Environment": definition.get("Environment"),
            # Training jobs launched by a tuning job carry the tuning job's tags.
            "Tags": list(job.tags or []),
        }
    )


def trial_resource_config(definition: dict[str, Any]) -> dict[str, Any]:
    """The ResourceConfig a trial of ``definition`` runs with.

    ``HyperParameterTuningResourceConfig.InstanceConfigs`` lists alternatives in priority order
    (AllocationStrategy=Prioritized); with capacity always available the first one is used.
    """
    if definition.get("ResourceConfig"):
        return dict(definition["ResourceConfig"])
    tuning_rc = definition.get("HyperParameterTuningResourceConfig") or {}
    configs = tuning_rc.get("InstanceConfigs") or []
    chosen = configs[0] if configs else tuning_rc
    return drop_none(
        {
            "InstanceType": chosen.get("InstanceType"),
            "InstanceCount": chosen.get("InstanceCount", 1),
            "VolumeSizeInGB": chosen.get("VolumeSizeInGB", tuning_rc.get("VolumeSizeInGB")),
            "VolumeKmsKeyId": tuning_rc.get("VolumeKmsKeyId"),
        }
    )
