"""Tuning jobs as data scientists launch them, as CreateHyperParameterTuningJob requests."""

from __future__ import annotations

from typing import Any

XGBOOST_IMAGE_US_EAST_1 = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1"
ROLE_ARN = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-demo"
BUCKET = "s3://example-ml-bucket-000000000000"


def seed_tuning_request(
    name: str = "xgb-churn-hb",
    *,
    team: str = "churn",
    owner: str = "ana@example.com",
    instance_type: str = "ml.m5.xlarge",
    instance_count: int = 3,
    max_jobs: int = 30,
    max_parallel: int = 4,
    spot: bool = False,
    extra_tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The seed scenario: built-in XGBoost, Hyperband (MinResource 1, MaxResource 30), validation:auc."""
    tags = {"team": team, "owner": owner, "project": "churn-model", **(extra_tags or {})}
    stopping: dict[str, int] = {"MaxRuntimeInSeconds": 3600}
    if spot:
        stopping["MaxWaitTimeInSeconds"] = 7200
    return {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {
            "Strategy": "Hyperband",
            "StrategyConfig": {"HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": 30}},
            "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "validation:auc"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": max_jobs, "MaxParallelTrainingJobs": max_parallel},
            "ParameterRanges": {
                "ContinuousParameterRanges": [
                    {"Name": "eta", "MinValue": "0.01", "MaxValue": "0.5", "ScalingType": "Logarithmic"},
                    {"Name": "min_child_weight", "MinValue": "1", "MaxValue": "10", "ScalingType": "Auto"},
                    {"Name": "alpha", "MinValue": "0", "MaxValue": "2", "ScalingType": "Auto"},
                    {"Name": "subsample", "MinValue": "0.5", "MaxValue": "1", "ScalingType": "Auto"},
                ],
                "IntegerParameterRanges": [
                    {"Name": "max_depth", "MinValue": "3", "MaxValue": "10", "ScalingType": "Auto"}
                ],
            },
            "TrainingJobEarlyStoppingType": "Off",
        },
        "TrainingJobDefinition": {
            "StaticHyperParameters": {
                "objective": "binary:logistic",
                "eval_metric": "auc",
                "num_round": "30",
            },
            "AlgorithmSpecification": {"TrainingImage": XGBOOST_IMAGE_US_EAST_1, "TrainingInputMode": "File"},
            "RoleArn": ROLE_ARN,
            "InputDataConfig": [
                {
                    "ChannelName": channel,
                    "DataSource": {
                        "S3DataSource": {
                            "S3DataType": "S3Prefix",
                            "S3Uri": f"{BUCKET}/churn/{channel}/",
                            "S3DataDistributionType": "FullyReplicated",
                        }
                    },
                    "ContentType": "text/csv",
                }
                for channel in ("train", "validation")
            ],
            "OutputDataConfig": {"S3OutputPath": f"{BUCKET}/churn/output/"},
            "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": instance_count, "VolumeSizeInGB": 30},
            "StoppingCondition": stopping,
            "EnableManagedSpotTraining": spot,
        },
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
    }
