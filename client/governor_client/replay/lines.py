"""Reading the replay's input, line by line: each line checked as one of SageMaker's EventBridge events.

:func:`parse_line` is the check the replay makes of every line; :func:`last_lines` is the first reading
of a file, finding each tuning job's last line (so that the replay may forget it once settled, see
``governor_client.replay.forget``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic_core import from_json

from tuning_governor.app.envelope import parse_event
from tuning_governor.errors import RejectedEvent
from tuning_governor.models.events import (
    TRAINING_DETAIL_TYPE,
    TUNING_DETAIL_TYPE,
    TrainingJobStateChange,
    TuningJobStateChange,
)

MAX_REASON = 300
StateChange = TuningJobStateChange | TrainingJobStateChange


class ReplayInputError(Exception):
    """The events file cannot be read or the policy is invalid. The message is one line."""


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 3] + "..."


def decoded(raw: bytes | str) -> Any:
    """``json.loads(raw)``: pydantic-core's parser first (about twice as fast), the standard library's for
    anything it refuses (so the same lines are accepted, and a refusal carries json's own message)."""
    try:
        return from_json(raw)
    except ValueError:
        return json.loads(raw)


def parse_line(text: str) -> tuple[dict[str, Any], StateChange]:
    """One line as an EventBridge event of SageMaker's, or ``RejectedEvent`` saying why not.

    The checks, in order: valid JSON; an object; ``source`` aws.sagemaker; ``detail-type`` the tuning
    or training job state change; the governor's own event models (the handlers' validation).
    """
    try:
        event = decoded(text)
    except json.JSONDecodeError as exc:
        raise RejectedEvent(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise RejectedEvent(f"not valid JSON: {type(exc).__name__}") from None
    if not isinstance(event, dict):
        raise RejectedEvent(f"{_kind(event)}, not an event object")
    event = logged_event(event)  # a line of the simulator's event log: replay its event
    source, detail_type = event.get("source"), event.get("detail-type")
    if source != "aws.sagemaker":
        raise RejectedEvent(short(f"source {json.dumps(source)} is not aws.sagemaker"))
    model: type[TuningJobStateChange] | type[TrainingJobStateChange]
    if detail_type == TUNING_DETAIL_TYPE:
        model = TuningJobStateChange
    elif detail_type == TRAINING_DETAIL_TYPE:
        model = TrainingJobStateChange
    else:
        raise RejectedEvent(
            short(f"detail-type {json.dumps(detail_type)} is not a SageMaker tuning or training job state change")
        )
    try:
        parsed: StateChange = parse_event(event, model)
    except RejectedEvent as exc:
        raise RejectedEvent(short(exc.reason)) from None
    return event, parsed


def job_key_of(event: Mapping[str, Any]) -> str | None:
    """The key (lower-case name) of the tuning job an event names, from the raw event; None if it names
    none (a training job outside tuning, or not a SageMaker state change). The same key the replay's
    models give: ``TuningJob.key``, and a trial's ``TuningJobArn`` up to its last ``/``."""
    detail = event.get("detail")
    if not isinstance(detail, dict):
        return None
    detail_type = event.get("detail-type")
    if detail_type == TUNING_DETAIL_TYPE:
        name = detail.get("HyperParameterTuningJobName")
        return name.lower() if isinstance(name, str) else None
    if detail_type == TRAINING_DETAIL_TYPE:
        arn = detail.get("TuningJobArn")
        return arn.rsplit("/", 1)[-1].lower() if isinstance(arn, str) and arn else None
    return None


def logged_event(line: dict[str, Any]) -> dict[str, Any]:
    """The EventBridge event a line holds: the line itself, or the ``event`` of a line of the simulator's
    event log (``{"seq", "delivered_at", ..., "event"}``)."""
    inner = line.get("event")
    return inner if "detail-type" not in line and isinstance(inner, dict) else line


def last_lines(lines: Iterable[bytes | str]) -> dict[str, int]:
    """For each tuning job named in ``lines`` (numbered from 1, as the replay numbers them), the number
    of the last line naming it. Lines that are not JSON objects are skipped: the replay rejects them."""
    last: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        try:
            event = decoded(raw)
        except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            continue
        if not isinstance(event, dict):
            continue
        key = job_key_of(logged_event(event))
        if key is not None:
            last[key] = number
    return last
