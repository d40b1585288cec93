"""EventBridge events in the format SageMaker sends them (aws-facts §1).

``detail`` is the Describe response rendered as JSON with timestamps as epoch-millisecond integers,
``Tags`` as a flat ``{key: value}`` map, and no ``null`` values.
"""

from __future__ import annotations

import calendar
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from .clock import as_utc

TUNING_DETAIL_TYPE = "SageMaker HyperParameter Tuning Job State Change"
TRAINING_DETAIL_TYPE = "SageMaker Training Job State Change"
SOURCE = "aws.sagemaker"

#: An EventBridge event as delivered to a rule target (the envelope plus ``detail``).
EventBridgeEvent = dict[str, Any]


def epoch_millis(value: datetime) -> int:
    """Epoch milliseconds of ``value`` (naive values are UTC)."""
    aware = as_utc(value)
    return calendar.timegm(aware.timetuple()) * 1000 + aware.microsecond // 1000


def to_event_json(value: Any) -> Any:
    """Render a Describe response as SageMaker puts it into ``detail``: epoch-millis ints, no nulls."""
    if isinstance(value, datetime):
        return epoch_millis(value)
    if isinstance(value, Mapping):
        return {str(k): to_event_json(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [to_event_json(v) for v in value if v is not None]
    return value


def flat_tags(tags: Sequence[Mapping[str, str]] | None) -> dict[str, str]:
    """``[{"Key": k, "Value": v}]`` → ``{k: v}`` (the later of duplicate keys wins)."""
    return {str(tag["Key"]): str(tag.get("Value", "")) for tag in tags or []}


def iso_seconds(value: datetime) -> str:
    """EventBridge envelope ``time``: ``YYYY-MM-DDTHH:MM:SSZ``."""
    return as_utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def render_event(
    *,
    detail_type: str,
    account: str,
    region: str,
    resource_arn: str,
    describe: Mapping[str, Any],
    tags: Sequence[Mapping[str, str]] | None,
    at: datetime,
    event_id: uuid.UUID,
) -> EventBridgeEvent:
    """One EventBridge event for a state change observed at virtual time ``at``."""
    detail = to_event_json(describe)
    detail["Tags"] = flat_tags(tags)
    return {
        "version": "0",
        "id": str(event_id),
        "detail-type": detail_type,
        "source": SOURCE,
        "account": account,
        "time": iso_seconds(at),
        "region": region,
        "resources": [resource_arn],
        "detail": detail,
    }


API_CALL_DETAIL_TYPE = "AWS API Call via CloudTrail"


def render_tag_call(
    *,
    operation: str,
    account: str,
    region: str,
    request: Mapping[str, Any],
    at: datetime,
    event_id: uuid.UUID,
) -> EventBridgeEvent:
    """The event CloudTrail sends EventBridge for SageMaker's ``AddTags``/``DeleteTags`` (a management
    write event; it takes a trail). ``requestParameters`` is the request in CloudTrail's camelCase:
    ``resourceArn`` and ``tags`` (``[{"key", "value"}]``) or ``tagKeys``."""
    return {
        "version": "0",
        "id": str(event_id),
        "detail-type": API_CALL_DETAIL_TYPE,
        "source": SOURCE,
        "account": account,
        "time": iso_seconds(at),
        "region": region,
        "resources": [],
        "detail": {
            "eventVersion": "1.08",
            "eventTime": iso_seconds(at),
            "eventSource": "sagemaker.amazonaws.com",
            "eventName": operation,
            "awsRegion": region,
            "requestParameters": dict(request),
            "responseElements": None,
            "readOnly": False,
            "eventType": "AwsApiCall",
            "managementEvent": True,
            "recipientAccountId": account,
            "eventCategory": "Management",
        },
    }
