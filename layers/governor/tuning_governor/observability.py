"""Powertools singletons shared by handlers and the application layer (cheap to create at import).

Names are fixed here so metrics land in the same namespace wherever the code runs (Lambda, the
offline demo, replays); template.yaml sets the same values in the Powertools environment variables.

The tracer is Powertools' (X-Ray subsegments per handler and service step, boto3 calls patched) only
when tracing is on (``POWERTOOLS_TRACE_DISABLED`` not true: the stack's ``DetailedTracing``
parameter). Off, it is a stand-in with the same decorators that imports nothing: the X-Ray SDK was
half of a handler's cold import (see benchmarks/RESULTS.md), and Lambda's active tracing still
records every invocation without it.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, cast

from aws_lambda_powertools import Logger, Metrics

SERVICE = "tuning-governor"
NAMESPACE = "TuningGovernor"

F = TypeVar("F", bound=Callable[..., Any])


class Tracing(Protocol):
    """The two decorators the governor uses (Powertools ``Tracer`` has them)."""

    def capture_lambda_handler(self, lambda_handler: F) -> F: ...

    def capture_method(self, method: F) -> F: ...


class NoTracing:
    """Tracing off: the decorators return what they decorate."""

    def capture_lambda_handler(self, lambda_handler: F) -> F:
        return lambda_handler

    def capture_method(self, method: F) -> F:
        return method


def tracing_disabled(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return environ.get("POWERTOOLS_TRACE_DISABLED", "").strip().lower() in {"1", "true", "yes", "on"}


def _tracer() -> Tracing:
    if tracing_disabled():
        return NoTracing()
    from aws_lambda_powertools import Tracer  # noqa: PLC0415 - imports the X-Ray SDK: only when tracing

    # Its decorators accept more (options, async handlers) than the governor uses.
    return cast(Tracing, Tracer(service=SERVICE))


logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
tracer = _tracer()


# The invocation's end, as time.monotonic() reads it; None outside a handler (tests, the demo, replays).
_deadline: ContextVar[float | None] = ContextVar("tuning_governor_deadline", default=None)


def within_lambda_time[H: Callable[..., Any]](handler: H) -> H:
    """Handler decorator: remember when this invocation must end (the Lambda context's
    ``get_remaining_time_in_millis``), so a step that waits (Slack's back-off) can stay within it; see
    :func:`seconds_left`."""

    @functools.wraps(handler)
    def bounded(event: Any, context: Any, *args: Any, **kwargs: Any) -> Any:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        token = _deadline.set(time.monotonic() + remaining() / 1000 if callable(remaining) else None)
        try:
            return handler(event, context, *args, **kwargs)
        finally:
            _deadline.reset(token)

    return cast(H, bounded)


def seconds_left() -> float | None:
    """Seconds before Lambda ends this invocation (None when not in a handler decorated with
    :func:`within_lambda_time`)."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()
