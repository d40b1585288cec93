"""What every use case does around its event: parse it (or reject it with a reason) and map
domain errors to outcomes (drop with a metric, or re-raise so EventBridge retries)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ValidationError

from tuning_governor.breakdowns import member_unreachable
from tuning_governor.errors import Disposition, GovernorError, PlaceUnreachable, RejectedEvent
from tuning_governor.models.place import Place
from tuning_governor.observability import logger, metrics

Outcome = dict[str, Any]


def parse_event[M: BaseModel](event: Any, model: type[M]) -> M:
    """Parse an EventBridge event or raise RejectedEvent with a readable reason. An event already parsed
    (an instance of ``model``, as the replay passes it) is returned unchanged."""
    if isinstance(event, model):
        return event
    if not isinstance(event, dict):
        raise RejectedEvent(f"event is a {type(event).__name__}, not a JSON object")
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise RejectedEvent(problems) from None
    except Exception as exc:  # a validator's own failure (a model bug, never an input's): still a reason
        raise RejectedEvent(str(exc)[:500]) from None


class Placed[D](Protocol):
    def placed(self, home: Place | None) -> D: ...


def placed[D](parsed: Placed[D], home: Place | None) -> D:
    """The event's detail carrying the place its envelope names (None: the home place); an envelope
    whose account or region is malformed is rejected with the reason."""
    try:
        return parsed.placed(home)
    except ValueError as exc:
        raise RejectedEvent(f"envelope: {exc}") from None


def handle_errors(kind: str, event: Any, run: Callable[[], Outcome]) -> Outcome:
    """Run one event's processing; drop what retrying cannot fix, re-raise what it can."""
    try:
        return run()
    except GovernorError as exc:
        event_id = event.get("id") if isinstance(event, dict) else getattr(event, "id", None)
        if exc.disposition is Disposition.DROP:
            outcome = "rejected" if isinstance(exc, RejectedEvent) else "dropped"
            metrics.add_metric(
                name="RejectedEvents" if outcome == "rejected" else "DroppedEvents",
                unit=MetricUnit.Count,
                value=1,
            )
            logger.warning(
                f"{kind} event {outcome}",
                extra={"event_id": event_id, "reason": str(exc), "error": type(exc).__name__},
            )
            return {"outcome": outcome, "reason": str(exc)}
        if isinstance(exc, PlaceUnreachable):
            member_unreachable(exc.account, exc.region)
            logger.error(
                f"{kind} event's member is unreachable",
                extra={"event_id": event_id, "account": exc.account, "region": exc.region, "reason": exc.reason},
            )
        metrics.add_metric(name="RetriedEvents", unit=MetricUnit.Count, value=1)
        logger.error(f"{kind} event will be retried", extra={"event_id": event_id, "error": type(exc).__name__})
        raise
