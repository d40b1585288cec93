"""EventBridge events SageMaker sends directly (source ``aws.sagemaker``), parsed with Powertools Parser."""

from __future__ import annotations

import re
from typing import Literal

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import Field, field_validator

from tuning_governor.models.limits import utf8_text
from tuning_governor.models.sagemaker import TrainingJob, TuningJob

TUNING_DETAIL_TYPE = "SageMaker HyperParameter Tuning Job State Change"
TRAINING_DETAIL_TYPE = "SageMaker Training Job State Change"


_REGION = re.compile(r"[a-z0-9-]{1,32}")


def _envelope_region(value: str) -> str:
    # Stored with every record and used to look prices up: a region name, nothing larger.
    if not _REGION.fullmatch(value):
        raise ValueError("region is not an AWS region name")
    return value


def _envelope_id(value: str) -> str:
    # EventBridge ids are UUIDs; the id is stored with the trial it recorded.
    if not 1 <= len(value) <= 256:
        raise ValueError("id must be 1 to 256 characters")
    return utf8_text(value)


class TuningJobStateChange(EventBridgeModel):
    detail_type: Literal["SageMaker HyperParameter Tuning Job State Change"] = Field(alias="detail-type")
    source: Literal["aws.sagemaker"]
    detail: TuningJob

    _region = field_validator("region")(_envelope_region)
    _id = field_validator("id")(_envelope_id)


class TrainingJobStateChange(EventBridgeModel):
    detail_type: Literal["SageMaker Training Job State Change"] = Field(alias="detail-type")
    source: Literal["aws.sagemaker"]
    detail: TrainingJob

    _region = field_validator("region")(_envelope_region)
    _id = field_validator("id")(_envelope_id)
