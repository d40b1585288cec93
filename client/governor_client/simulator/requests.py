"""More requests as data scientists send them: tuning jobs of every strategy and standalone training jobs.

Built on :func:`governor_client.simulator.scenarios.seed_tuning_request` (built-in XGBoost on the churn data), so every
request has the seed job's shapes. Callers may rely on: each builder returns a fresh dict of keyword
arguments for the boto3 ``sagemaker`` client (``create_hyper_parameter_tuning_job(**request)`` /
``create_training_job(**request)``), tags ``team`` and ``owner`` included.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from governor_client.simulator.scenarios import seed_tuning_request

Strategy = Literal["Bayesian", "Random", "Grid", "Hyperband"]

#: Grid search only takes categorical ranges [aws-facts §2]: a small XGBoost grid (3 x 3 x 2 = 18 points).
GRID_RANGES: dict[str, Any] = {
    "CategoricalParameterRanges": [
        {"Name": "max_depth", "Values": ["4", "6", "8"]},
        {"Name": "eta", "Values": ["0.05", "0.1", "0.3"]},
        {"Name": "subsample", "Values": ["0.7", "1.0"]},
    ]
}


def tuning_request(  # noqa: PLR0913 - one keyword per CreateHyperParameterTuningJob field a scenario varies
    name: str,
    *,
    strategy: Strategy = "Hyperband",
    team: str = "churn",
    owner: str = "ana@example.com",
    instance_type: str = "ml.m5.xlarge",
    instance_count: int = 3,
    max_jobs: int = 30,
    max_parallel: int = 4,
    spot: bool = False,
    keep_alive_s: int = 0,
    early_stopping: Literal["Off", "Auto"] = "Off",
    num_round: int = 30,
    max_runtime_s: int = 3600,
    extra_tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A CreateHyperParameterTuningJob request for built-in XGBoost, ``validation:auc`` maximised.

    ``Hyperband`` keeps the seed's StrategyConfig (MinResource 1, MaxResource ``num_round``); ``Grid`` uses
    :data:`GRID_RANGES`; ``Bayesian`` and ``Random`` use the seed's ranges and honour ``early_stopping``
    (``Hyperband`` and ``Grid`` keep ``Off``: Hyperband stops trials by itself). ``keep_alive_s`` > 0 sets
    ``ResourceConfig.KeepAlivePeriodInSeconds`` so trials keep and reuse warm pools.
    """
    request = seed_tuning_request(
        name,
        team=team,
        owner=owner,
        instance_type=instance_type,
        instance_count=instance_count,
        max_jobs=max_jobs,
        max_parallel=max_parallel,
        spot=spot,
        extra_tags=extra_tags,
    )
    config = request["HyperParameterTuningJobConfig"]
    definition = request["TrainingJobDefinition"]
    config["Strategy"] = strategy
    definition["StaticHyperParameters"]["num_round"] = str(num_round)
    definition["StoppingCondition"]["MaxRuntimeInSeconds"] = max_runtime_s
    if spot:
        definition["StoppingCondition"]["MaxWaitTimeInSeconds"] = 2 * max_runtime_s
    _set_strategy(config, strategy, num_round, early_stopping)
    if keep_alive_s > 0:
        definition["ResourceConfig"]["KeepAlivePeriodInSeconds"] = keep_alive_s
    return request


def _set_strategy(config: dict[str, Any], strategy: Strategy, num_round: int, early_stopping: str) -> None:
    """``config`` (the seed's) set to ``strategy``: its StrategyConfig, early stopping and ranges."""
    if strategy == "Hyperband":
        config["StrategyConfig"] = {"HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": num_round}}
    else:
        config.pop("StrategyConfig", None)
        config["TrainingJobEarlyStoppingType"] = early_stopping if strategy in ("Bayesian", "Random") else "Off"
    if strategy == "Grid":
        config["ParameterRanges"] = copy.deepcopy(GRID_RANGES)


def training_job_request(  # noqa: PLR0913 - one keyword per CreateTrainingJob field a scenario varies
    name: str,
    *,
    team: str = "churn",
    owner: str = "ana@example.com",
    instance_type: str = "ml.m5.xlarge",
    instance_count: int = 1,
    keep_alive_s: int = 0,
    spot: bool = False,
    hyperparameters: dict[str, str] | None = None,
    max_runtime_s: int = 3600,
    extra_tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A standalone CreateTrainingJob request (built-in XGBoost, ``validation:auc`` as its metric).

    ``keep_alive_s`` > 0 keeps the cluster as a warm pool after the job completes, and lets the job take
    over a matching ``Available`` pool. Default hyperparameters: max_depth 6, eta 0.2, 50 rounds.
    """
    seed = seed_tuning_request(name[:32], team=team, owner=owner, instance_type=instance_type)
    definition = seed["TrainingJobDefinition"]
    resource: dict[str, Any] = {"InstanceType": instance_type, "InstanceCount": instance_count, "VolumeSizeInGB": 30}
    if keep_alive_s > 0:
        resource["KeepAlivePeriodInSeconds"] = keep_alive_s
    stopping: dict[str, int] = {"MaxRuntimeInSeconds": max_runtime_s}
    if spot:
        stopping["MaxWaitTimeInSeconds"] = 2 * max_runtime_s
    tags = {"team": team, "owner": owner, **(extra_tags or {})}
    return {
        "TrainingJobName": name,
        "HyperParameters": {
            "objective": "binary:logistic",
            "eval_metric": "auc",
            "max_depth": "6",
            "eta": "0.2",
            "num_round": "50",
            **(hyperparameters or {}),
        },
        "AlgorithmSpecification": {
            **definition["AlgorithmSpecification"],
            "MetricDefinitions": [{"Name": "validation:auc", "Regex": "validation-auc:([0-9\\.]+)"}],
        },
        "RoleArn": definition["RoleArn"],
        "InputDataConfig": definition["InputDataConfig"],
        "OutputDataConfig": definition["OutputDataConfig"],
        "ResourceConfig": resource,
        "StoppingCondition": stopping,
        "EnableManagedSpotTraining": spot,
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
    }
