"""EventBridge events SageMaker sends directly (source ``aws.sagemaker``), parsed with Powertools Parser."""

from __future__ import annotations

from typing import Literal

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import Field

from tuning_governor.models.sagemaker import TrainingJob, TuningJob

TUNING_DETAIL_TYPE = "SageMaker HyperParameter Tuning Job State Change"
TRAINING_DETAIL_TYPE = "SageMaker Training Job State Change"


class TuningJobStateChange(EventBridgeModel):
    detail_type: Literal["SageMaker HyperParameter Tuning Job State Change"] = Field(alias="detail-type")
    source: Literal["aws.sagemaker"]
    detail: TuningJob


class TrainingJobStateChange(EventBridgeModel):
    detail_type: Literal["SageMaker Training Job State Change"] = Field(alias="detail-type")
    source: Literal["aws.sagemaker"]
    detail: TrainingJob
