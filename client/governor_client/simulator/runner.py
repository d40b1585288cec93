"""Deliver EventBridge events to the real Lambda handlers, in-process (no Docker).

Routing follows template.yaml's rules: source ``aws.sagemaker`` and the two detail-types, and the tag
changes (CloudTrail's AddTags/DeleteTags, ``aws.tag``) to the tuning-events function. Each
delivery is one invocation, as with a Lambda target; a handler that raises is what EventBridge would
retry, so the outcome is recorded as ``error`` and the next events go on.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import training_events
import tuning_events
from tuning_governor.app.events.tags import is_tag_event
from tuning_governor.app.services import Services
from tuning_governor.models.events import TRAINING_DETAIL_TYPE, TUNING_DETAIL_TYPE

ACCOUNT = "123456789012"  # moto's default account: an obvious fake


@dataclass
class FakeLambdaContext:
    """What Powertools reads from a Lambda context object."""

    function_name: str
    memory_limit_in_mb: int = 256
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    #: The function's timeout (template.yaml: 60 s for the event functions); the time left counts down
    #: from the context's creation, in real time, as Lambda's does.
    timeout_ms: int = 60_000
    created: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.timeout_ms - int((time.monotonic() - self.created) * 1000))


@dataclass
class Delivery:
    event_id: str | None
    detail_type: str | None
    function: str | None
    outcome: dict[str, Any]


def deliver_event(event: Any, services: Services) -> Delivery:
    """Invoke the handler whose rule matches the event; unmatched events go nowhere, as in EventBridge."""
    detail_type = event.get("detail-type") if isinstance(event, dict) else None
    source = event.get("source") if isinstance(event, dict) else None
    event_id = event.get("id") if isinstance(event, dict) else None
    if source == "aws.sagemaker" and detail_type == TUNING_DETAIL_TYPE:
        function, handler = "tuning-events", tuning_events.handler
    elif source == "aws.sagemaker" and detail_type == TRAINING_DETAIL_TYPE:
        function, handler = "training-events", training_events.handler
    elif is_tag_event(event):  # template.yaml's tag rules target the tuning-events function
        function, handler = "tuning-events", tuning_events.handler
    else:
        return Delivery(event_id, detail_type, None, {"outcome": "unrouted"})
    try:
        outcome = handler(event, FakeLambdaContext(function), services=services)
    except Exception as exc:  # EventBridge would retry it; the caller decides whether to redeliver
        outcome = {"outcome": "error", "error": type(exc).__name__, "reason": str(exc)}
    return Delivery(event_id, detail_type, function, outcome)


def deliver_all(events: list[Any], services: Services) -> list[Delivery]:
    return [deliver_event(event, services) for event in events]
