"""The two logs a simulation writes, and their readers.

**Event log**: every delivery's EventBridge event, exactly as the target received it, one JSON object per
line, in delivery order (duplicates and retries included) — the input format of ``tuning-governor replay``.

**Delivery log**: line *n* describes line *n* of the event log:
``{"seq", "delivered_at", "emitted_at", "attempt", "copy", "event_id", "detail_type", "function",
"outcome"}`` with ISO-8601 UTC times.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from governor_client.simulator.delivery import EventBridgeEvent

from .results import DeliveryOutcome


@dataclass(frozen=True)
class LoggedDelivery:
    """One line of a delivery log (see the module docstring)."""

    seq: int
    delivered_at: datetime
    emitted_at: datetime
    attempt: int
    copy: str
    event_id: str | None
    detail_type: str | None
    function: str | None
    outcome: str


def read_event_log(path: str | Path) -> Iterator[EventBridgeEvent]:
    """The events of an event log, in delivery order."""
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                event: EventBridgeEvent = json.loads(line)
                yield event


def read_delivery_log(path: str | Path) -> Iterator[LoggedDelivery]:
    """The deliveries of a delivery log, in delivery order."""
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            data = json.loads(line)
            yield LoggedDelivery(
                seq=int(data["seq"]),
                delivered_at=datetime.fromisoformat(data["delivered_at"]),
                emitted_at=datetime.fromisoformat(data["emitted_at"]),
                attempt=int(data["attempt"]),
                copy=str(data["copy"]),
                event_id=data.get("event_id"),
                detail_type=data.get("detail_type"),
                function=data.get("function"),
                outcome=str(data["outcome"]),
            )


def open_log(stack: contextlib.ExitStack, target: str | Path | TextIO | None) -> TextIO | None:
    """``target`` opened for writing for the life of ``stack`` (a path), as given (a stream), or None."""
    if target is None:
        return None
    if isinstance(target, (str, Path)):
        return stack.enter_context(Path(target).open("w", encoding="utf-8"))
    return target


def write_event_line(log: TextIO, event: EventBridgeEvent) -> None:
    log.write(json.dumps(event, separators=(",", ":")) + "\n")


def write_delivery_line(log: TextIO, record: DeliveryOutcome, detail_type: Any) -> None:
    """One delivery-log line; ``detail_type`` as the event carried it."""
    line = {
        "seq": record.seq,
        "delivered_at": record.delivered_at.isoformat(),
        "emitted_at": record.emitted_at.isoformat(),
        "attempt": record.attempt,
        "copy": record.copy,
        "event_id": record.event_id,
        "detail_type": detail_type,
        "function": record.function,
        "outcome": record.outcome,
    }
    log.write(json.dumps(line, separators=(",", ":")) + "\n")
