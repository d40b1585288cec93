"""Request builders for the stand-in tests: the seed job's shapes (aws-facts §7) and variations."""

from __future__ import annotations

import copy
from typing import Any

ROLE = "arn:aws:iam::123456789012:role/SageMakerExecutionRole"
XGBOOST_IMAGE = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1"
OBJECTIVE = {"Type": "Maximize", "MetricName": "validation:auc"}
RANGES: dict[str, Any] = {
    "IntegerParameterRanges": [
        {"Name": "max_depth", "MinValue": "3", "MaxValue": "10", "ScalingType": "Auto"},
        {"Name": "min_child_weight", "MinValue": "1", "MaxValue": "10", "ScalingType": "Auto"},
    ],
    "ContinuousParameterRanges": [
        {"Name": "eta", "MinValue": "0.01", "MaxValue": "0.5", "ScalingType": "Logarithmic"},
        {"Name": "subsample", "MinValue": "0.5", "MaxValue": "1.0", "ScalingType": "Linear"},
    ],
    "CategoricalParameterRanges": [{"Name": "booster", "Values": ["gbtree", "dart"]}],
}


def definition(
    *,
    instance_type: str = "ml.m5.xlarge",
    instance_count: int = 3,
    spot: bool = False,
    keep_alive: int = 0,
    max_runtime: int = 3600,
    **extra: Any,
) -> dict[str, Any]:
    """A HyperParameterTrainingJobDefinition for built-in XGBoost."""
    resource: dict[str, Any] = {"InstanceType": instance_type, "InstanceCount": instance_count, "VolumeSizeInGB": 30}
    if keep_alive:
        resource["KeepAlivePeriodInSeconds"] = keep_alive
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": max_runtime}
    if spot:
        stopping["MaxWaitTimeInSeconds"] = max_runtime * 2
    result: dict[str, Any] = {
        "StaticHyperParameters": {"objective": "binary:logistic", "eval_metric": "auc", "num_round": "100"},
        "AlgorithmSpecification": {"TrainingImage": XGBOOST_IMAGE, "TrainingInputMode": "File"},
        "RoleArn": ROLE,
        "InputDataConfig": [
            {
                "ChannelName": name,
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://data-bucket/churn/{name}/"}},
                "ContentType": "text/csv",
            }
            for name in ("train", "validation")
        ],
        "OutputDataConfig": {"S3OutputPath": "s3://data-bucket/churn/output/"},
        "ResourceConfig": resource,
        "StoppingCondition": stopping,
        "EnableManagedSpotTraining": spot,
    }
    result.update(extra)
    return result


def tuning_config(
    *,
    strategy: str = "Bayesian",
    max_jobs: int = 12,
    parallel: int = 3,
    max_runtime: int | None = None,
    early_stopping: str = "Off",
    objective: dict[str, str] | None = None,
    ranges: dict[str, Any] | None = None,
) -> dict[str, Any]:
    limits: dict[str, Any] = {"MaxNumberOfTrainingJobs": max_jobs, "MaxParallelTrainingJobs": parallel}
    if max_runtime is not None:
        limits["MaxRuntimeInSeconds"] = max_runtime
    config: dict[str, Any] = {
        "Strategy": strategy,
        "HyperParameterTuningJobObjective": objective or dict(OBJECTIVE),
        "ResourceLimits": limits,
        "ParameterRanges": copy.deepcopy(ranges if ranges is not None else RANGES),
        "TrainingJobEarlyStoppingType": early_stopping,
    }
    if strategy == "Hyperband":
        config["StrategyConfig"] = {"HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": 30}}
    return config


def seed_job(name: str = "xgb-churn-hb", **overrides: Any) -> dict[str, Any]:
    """CreateHyperParameterTuningJob kwargs of the seed job: Hyperband 1..30, 30 jobs, 4 parallel."""
    request: dict[str, Any] = {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": tuning_config(strategy="Hyperband", max_jobs=30, parallel=4),
        "TrainingJobDefinition": definition(),
        "Tags": [{"Key": "team", "Value": "churn"}, {"Key": "cost-center", "Value": "ml-42"}],
    }
    request.update(overrides)
    return request


def training_job(name: str, **resource_overrides: Any) -> dict[str, Any]:
    """CreateTrainingJob kwargs for a standalone job."""
    spec = definition(**resource_overrides)
    return {
        "TrainingJobName": name,
        "HyperParameters": {"max_depth": "6", "eta": "0.2", "num_round": "50"},
        "AlgorithmSpecification": {
            **spec["AlgorithmSpecification"],
            "MetricDefinitions": [{"Name": "validation:auc", "Regex": "validation-auc:([0-9\\.]+)"}],
        },
        "RoleArn": ROLE,
        "InputDataConfig": spec["InputDataConfig"],
        "OutputDataConfig": spec["OutputDataConfig"],
        "ResourceConfig": spec["ResourceConfig"],
        "StoppingCondition": spec["StoppingCondition"],
        "EnableManagedSpotTraining": spec["EnableManagedSpotTraining"],
    }
