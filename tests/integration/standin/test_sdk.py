"""The seed job launched the way a data scientist would: SageMaker Python SDK v3 against the stand-in."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from governor_client.amt import TRAINING_DETAIL_TYPE, AmtStandIn

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/SageMakerExecutionRole"


@pytest.mark.sdk
# The SDK's own model_trainer module imports a shim that warns; nothing this test controls.
@pytest.mark.filterwarnings("ignore:sagemaker.train.configs has been moved:DeprecationWarning")
def test_sdk_tuner_runs_the_seed_job_to_completion(amt: AmtStandIn, sm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sagemaker")
    # ModelTrainer validates its role with iam:SimulatePrincipalPolicy, which moto lacks (aws-facts §7).
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    from sagemaker.core import image_uris
    from sagemaker.core.analytics import HyperparameterTuningJobAnalytics
    from sagemaker.core.helper.session_helper import Session
    from sagemaker.core.parameter import ContinuousParameter, IntegerParameter
    from sagemaker.core.shapes import HyperbandStrategyConfig, HyperParameterTuningJobStrategyConfig
    from sagemaker.core.training.configs import Compute
    from sagemaker.train import ModelTrainer
    from sagemaker.train.tuner import HyperparameterTuner

    # Given the seed job as a data scientist writes it
    session = Session(boto_session=boto3.Session(region_name=REGION))
    trainer = ModelTrainer(
        training_image=image_uris.retrieve("xgboost", REGION, "1.7-1"),
        compute=Compute(instance_type="ml.m5.xlarge", instance_count=3),
        role=ROLE,
        sagemaker_session=session,
        hyperparameters={"objective": "binary:logistic", "eval_metric": "auc", "num_round": "100"},
    )
    tuner = HyperparameterTuner(
        model_trainer=trainer,
        objective_metric_name="validation:auc",
        hyperparameter_ranges={
            "eta": ContinuousParameter(0.01, 0.5),
            "max_depth": IntegerParameter(3, 10),
            "min_child_weight": IntegerParameter(1, 10),
        },
        strategy="Hyperband",
        max_jobs=30,
        max_parallel_jobs=4,
        early_stopping_type="Off",
        strategy_config=HyperParameterTuningJobStrategyConfig(
            hyperband_strategy_config=HyperbandStrategyConfig(max_resource=30, min_resource=1)
        ),
    )

    # When it is launched without waiting and the stand-in runs it
    tuner.tune(inputs={"train": "s3://data-bucket/train/", "validation": "s3://data-bucket/validation/"}, wait=False)
    name = tuner.latest_tuning_job.hyper_parameter_tuning_job_name
    created = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    assert created["HyperParameterTuningJobStatus"] == "InProgress"
    assert created["HyperParameterTuningJobConfig"]["ResourceLimits"] == {
        "MaxNumberOfTrainingJobs": 30,
        "MaxParallelTrainingJobs": 4,
    }
    assert created["TrainingJobDefinition"]["ResourceConfig"]["InstanceCount"] == 3
    amt.run_until_idle()

    # Then it completed with 30 trials, never more than 4 at once
    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    assert described["HyperParameterTuningJobStatus"] == "Completed"
    assert sum(described["TrainingJobStatusCounters"].values()) == 30
    assert len(amt.training_jobs_of(name)) == 30
    running: set[str] = set()
    for event in amt.events:
        if event["detail-type"] == TRAINING_DETAIL_TYPE:
            detail = event["detail"]
            if detail["TrainingJobStatus"] in {"InProgress", "Stopping"}:
                running.add(detail["TrainingJobName"])
            else:
                running.discard(detail["TrainingJobName"])
            assert len(running) <= 4
    for trial_name in amt.training_jobs_of(name):
        resource = sm.describe_training_job(TrainingJobName=trial_name)["ResourceConfig"]
        assert (resource["InstanceType"], resource["InstanceCount"]) == ("ml.m5.xlarge", 3)

    # And the SDK's own analytics (ListTrainingJobsForHyperParameterTuningJob) agrees on the best trial
    frame = HyperparameterTuningJobAnalytics(name, sagemaker_session=session).dataframe()
    assert len(frame) == 30
    best_row = frame.sort_values("FinalObjectiveValue", ascending=False).iloc[0]
    assert best_row["TrainingJobName"] == described["BestTrainingJob"]["TrainingJobName"]
