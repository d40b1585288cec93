"""Quiet handlers: the Powertools logger at WARNING, EMF metrics off, and their stdout discarded."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator


class _Discard(io.TextIOBase):
    """A text sink for the handlers' stdout (EMF metric lines) when running quietly."""

    def write(self, s: str) -> int:
        return len(s)


DISCARD = _Discard()


@contextlib.contextmanager
def quiet_handlers(level: str = "WARNING") -> Iterator[None]:
    """Powertools logger at ``level`` and EMF metrics off; both restored afterwards."""
    from tuning_governor.observability import logger  # noqa: PLC0415 - the handlers' own singleton

    previous_level = logger.log_level
    previous_flag = os.environ.get("POWERTOOLS_METRICS_DISABLED")
    logger.setLevel(level)
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    try:
        yield
    finally:
        logger.setLevel(previous_level)
        if previous_flag is None:
            os.environ.pop("POWERTOOLS_METRICS_DISABLED", None)
        else:
            os.environ["POWERTOOLS_METRICS_DISABLED"] = previous_flag
