"""Tuning jobs as data scientists launch them, as CreateHyperParameterTuningJob requests."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from governor_client.amt.early_stopping import HyperbandPolicy, fraction_is_valid
from governor_client.amt.plans import TrialBehaviour, TrialPlan, objective_of

XGBOOST_IMAGE_US_EAST_1 = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1"
ROLE_ARN = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-demo"
BUCKET = "s3://example-ml-bucket-000000000000"


def seed_tuning_request(  # noqa: PLR0913 - one keyword per request field a scenario varies
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
        "HyperParameterTuningJobConfig": _seed_config(max_jobs, max_parallel),
        "TrainingJobDefinition": _seed_definition(instance_type, instance_count, stopping, spot),
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
    }


def _seed_config(max_jobs: int, max_parallel: int) -> dict[str, Any]:
    return {
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
            "IntegerParameterRanges": [{"Name": "max_depth", "MinValue": "3", "MaxValue": "10", "ScalingType": "Auto"}],
        },
        "TrainingJobEarlyStoppingType": "Off",
    }


def _seed_definition(instance_type: str, instance_count: int, stopping: dict[str, int], spot: bool) -> dict[str, Any]:
    return {
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
    }


@dataclass
class SeedWorkload:
    """The seed job's trials timed as the seed reported them; any other trial is left to ``base``.

    The seed (30 Hyperband trials, 4 in parallel, 3 x ml.m5.xlarge, built-in XGBoost, 30 rounds on a
    small churn data set) reports about 30 billable minutes against about 90 without early stopping,
    and 12 minutes of wall clock against the ~22-24 expected without it: a trial that runs its 30
    rounds takes about 3 minutes from creation to end, start-up included, and a Hyperband trial about
    one. The phases below give those figures. Hyperband's decisions come from a
    :class:`~governor_client.amt.early_stopping.HyperbandPolicy` with Hyperband's own bracket sizes
    (``weighted``: most trials start at the smallest rung), which this workload applies itself.

    Applies to trials on the seed's cluster (``instance_count`` x ``instance_type``) whose plan is to
    complete; failed plans and other clusters keep ``base``'s plan (and the engine's early stopping).
    Draws only from the plan's ``rng``; one policy per tuning job, fed in launch order.
    """

    base: TrialBehaviour
    instance_type: str = "ml.m5.xlarge"
    instance_count: int = 3
    startup_s: tuple[float, float] = (10.0, 18.0)
    download_s: tuple[float, float] = (3.0, 6.0)
    training_s: tuple[float, float] = (150.0, 162.0)
    upload_s: tuple[float, float] = (3.0, 6.0)
    _hyperband: dict[int, tuple[Mapping[str, Any], HyperbandPolicy, list[int]]] = field(
        default_factory=dict, init=False, repr=False
    )

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> TrialPlan:
        """See :class:`~governor_client.amt.plans.TrialBehaviour`."""
        plan = self.base.plan(tuning_job_config, definition, hyperparameters, rng)
        cluster = definition.get("ResourceConfig") or {}
        seed_cluster = cluster.get("InstanceType") == self.instance_type and int(cluster.get("InstanceCount") or 0) == (
            self.instance_count
        )
        if not seed_cluster or plan.outcome != "Completed":
            return plan
        timed = replace(
            plan,
            duration_s=round(rng.uniform(*self.training_s), 3),
            startup_s=round(rng.uniform(*self.startup_s), 3),
            download_s=round(rng.uniform(*self.download_s), 3),
            upload_s=round(rng.uniform(*self.upload_s), 3),
        )
        policy = self._policy(tuning_job_config, definition)
        if policy is None or timed.objective_value is None or timed.early_stop_at_s is not None:
            return timed
        _, hyperband, launched = policy
        launched[0] += 1
        fraction = hyperband.decide(launched[0], timed.objective_value)
        # A survivor is planned to stop at its full length: the engine's own policy then leaves it alone.
        stop_at = timed.duration_s * fraction if fraction is not None and fraction_is_valid(fraction) else None
        return timed.stopped_early_at(stop_at if stop_at is not None else timed.duration_s)

    def _policy(
        self, tuning_job_config: Mapping[str, Any] | None, definition: Mapping[str, Any]
    ) -> tuple[Mapping[str, Any], HyperbandPolicy, list[int]] | None:
        if not tuning_job_config or tuning_job_config.get("Strategy") != "Hyperband":
            return None
        # The engine hands every trial of a job the same config object; keep it so its id stays unique.
        known = self._hyperband.get(id(tuning_job_config))
        if known is not None:
            return known
        hyperband = (tuning_job_config.get("StrategyConfig") or {}).get("HyperbandStrategyConfig") or {}
        objective = objective_of(tuning_job_config, definition)
        policy = HyperbandPolicy(
            float(hyperband.get("MinResource") or 1),
            float(hyperband.get("MaxResource") or 30),
            maximize=objective is None or objective[1] != "Minimize",
            weighted=True,
        )
        entry: tuple[Mapping[str, Any], HyperbandPolicy, list[int]] = (tuning_job_config, policy, [0])
        self._hyperband[id(tuning_job_config)] = entry
        return entry
