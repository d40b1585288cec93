"""EventBridge events SageMaker sends directly (source ``aws.sagemaker``).

The envelope is declared here rather than taken from Powertools Parser's ``EventBridgeModel``: importing
that model imports Parser's models for every AWS event source, about 50 ms of every cold start for two
classes (benchmarks/RESULTS.md, "Cold init"). The fields and their types are EventBridge's envelope.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from tuning_governor.model_base import GovernorModel
from tuning_governor.models.limits import utf8_text
from tuning_governor.models.place import Place, away
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TuningJob

TUNING_DETAIL_TYPE = "SageMaker HyperParameter Tuning Job State Change"
TRAINING_DETAIL_TYPE = "SageMaker Training Job State Change"
#: CloudTrail's detail type: the tuning-events function tells a tag call from a state change by it.
API_CALL_DETAIL_TYPE = "AWS API Call via CloudTrail"


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


class EventBridgeEvent(GovernorModel):
    """The envelope EventBridge puts around every event (version "0", a UUID id, ISO-8601 time)."""

    model_config = ConfigDict(populate_by_name=True)

    version: str
    id: str
    source: str
    account: str
    time: datetime
    region: str
    resources: list[str]
    detail_type: str = Field(alias="detail-type")
    replay_name: str | None = Field(default=None, alias="replay-name")

    def place(self, home: Place | None) -> Place | None:
        """Where the event's job runs: its envelope's account and region, None for the home place (or
        while the stack's own account is not known: then every event is the home place's, as before).
        A malformed account or region is a ValueError."""
        return away(Place(self.account, self.region), home) if home is not None else None


class TuningJobStateChange(EventBridgeEvent):
    detail_type: Literal["SageMaker HyperParameter Tuning Job State Change"] = Field(alias="detail-type")
    source: Literal["aws.sagemaker"]
    detail: TuningJob

    def placed(self, home: Place | None) -> TuningJob:
        """The job, carrying the place its event came from (its key says it outside the home place)."""
        return self.detail.at(self.place(home))

    _region = field_validator("region")(_envelope_region)
    _id = field_validator("id")(_envelope_id)


class TrainingJobStateChange(EventBridgeEvent):
    detail_type: Literal["SageMaker Training Job State Change"] = Field(alias="detail-type")
    source: Literal["aws.sagemaker"]
    detail: TrainingJob

    def placed(self, home: Place | None) -> TrainingJob:
        """The training job, carrying the place its event came from."""
        return self.detail.at(self.place(home))

    _region = field_validator("region")(_envelope_region)
    _id = field_validator("id")(_envelope_id)
