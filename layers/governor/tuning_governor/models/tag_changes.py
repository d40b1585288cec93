"""Events that say a tuning job's tags changed (issue 17, mechanism 8), and which job they name.

SageMaker sends no state change when a job is tagged. Two events can say it (docs/reference/policy.md, "Tags as
they are now"):

- ``AWS API Call via CloudTrail`` from ``aws.sagemaker`` for ``AddTags``/``DeleteTags`` (documented:
  SageMaker's API calls reach EventBridge through CloudTrail; it takes a trail logging management
  events). The job's ARN is ``requestParameters.resourceArn`` (CloudTrail's camelCase rendering of
  the request; ``ResourceArn`` is accepted too).
- ``Tag Change on Resource`` from ``aws.tag`` (EventBridge's tag events, best effort; AWS lists no
  resource types for it, so whether SageMaker tuning jobs emit it is not documented). The ARN is the
  envelope's ``resources[0]``.

Neither event's tag values are trusted: the use case re-reads the job's tags with ListTags. Only the
ARN is taken from the event, and it must be a SageMaker ARN (of a tuning job, or the event is about
something else).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, RootModel, field_validator

from tuning_governor.model_base import GovernorModel
from tuning_governor.models.events import EventBridgeEvent, _envelope_id, _envelope_region

TAG_CHANGE_DETAIL_TYPE = "Tag Change on Resource"
TAG_CALLS = ("AddTags", "DeleteTags")
TUNING_JOB_RESOURCE = "hyper-parameter-tuning-job"

_SAGEMAKER_ARN = re.compile(
    r"^arn:aws[a-z-]{0,20}:sagemaker:[a-z0-9-]{1,32}:[0-9]{12}:(?P<type>[a-z-]{1,64})/(?P<name>[^/]{1,256})$"
)


class _TagChangeDetail(GovernorModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    service: str
    resource_type: str = Field(alias="resource-type")
    changed_tag_keys: list[str] = Field(default_factory=list, alias="changed-tag-keys")


class TagChangeOnResource(EventBridgeEvent):
    detail_type: Literal["Tag Change on Resource"] = Field(alias="detail-type")
    source: Literal["aws.tag"]
    detail: _TagChangeDetail

    _region = field_validator("region")(_envelope_region)
    _id = field_validator("id")(_envelope_id)

    def resource_arn(self) -> str | None:
        return self.resources[0] if len(self.resources) == 1 else None


class _ApiCallDetail(GovernorModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    event_source: Literal["sagemaker.amazonaws.com"] = Field(alias="eventSource")
    event_name: Literal["AddTags", "DeleteTags"] = Field(alias="eventName")
    request_parameters: dict[str, Any] = Field(alias="requestParameters")
    error_code: str | None = Field(default=None, alias="errorCode")


class TagApiCall(EventBridgeEvent):
    detail_type: Literal["AWS API Call via CloudTrail"] = Field(alias="detail-type")
    source: Literal["aws.sagemaker"]
    detail: _ApiCallDetail

    _region = field_validator("region")(_envelope_region)
    _id = field_validator("id")(_envelope_id)

    def resource_arn(self) -> str | None:
        params = self.detail.request_parameters
        arn = params.get("resourceArn", params.get("ResourceArn"))
        return arn if isinstance(arn, str) else None


class TagChangeEvent(RootModel[Annotated[TagChangeOnResource | TagApiCall, Field(discriminator="source")]]):
    """Either event, told apart by its source."""


class TaggedResource(GovernorModel):
    """The SageMaker resource a tag event names: its ARN, resource type and name."""

    model_config = ConfigDict(frozen=True)

    arn: str
    resource_type: str
    name: str

    @property
    def is_tuning_job(self) -> bool:
        return self.resource_type == TUNING_JOB_RESOURCE


def tagged_resource(arn: str | None) -> TaggedResource | None:
    """The resource an ARN names, or None when it is not a SageMaker resource ARN."""
    match = _SAGEMAKER_ARN.match(arn or "")
    if match is None:
        return None
    return TaggedResource(arn=arn or "", resource_type=match["type"], name=match["name"])
