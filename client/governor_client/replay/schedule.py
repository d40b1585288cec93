"""The replay's clock: the sweep's interval on the events' timeline, and times as the summary prints them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from governor_client.replay.lines import ReplayInputError
from governor_client.simulator.schedule import DEFAULT_SWEEP_EVERY, DEFAULT_SWEEP_SCHEDULE

__all__ = ["DEFAULT_SWEEP_EVERY", "DEFAULT_SWEEP_SCHEDULE", "interval_text", "parse_sweep_every", "utc_text"]
_RATE = re.compile(r"rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)")
_SHORT = re.compile(r"(\d+)\s*(s|m|min|h)?")
_UNITS = {"s": 1, "m": 60, "min": 60, "minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}
_UNITS |= {"day": 86400, "days": 86400}


def parse_sweep_every(text: str) -> timedelta | None:
    """The sweep interval ``text`` names; None (no sweep) for ``0`` or ``off``.

    Accepted: a whole number of minutes (``5``), seconds, minutes or hours (``90s``, ``15m``, ``1h``),
    or an EventBridge rate expression as template.yaml's ``SweepSchedule`` takes it (``rate(5 minutes)``).
    Anything else (cron expressions included: their times are not an interval) raises ``ReplayInputError``.
    """
    value = " ".join(text.strip().lower().split())
    if value in {"0", "off", "none"}:
        return None
    match = _RATE.fullmatch(value) or _SHORT.fullmatch(value)
    if match is None:
        raise ReplayInputError(
            f"sweep interval {text!r} is not one of: 0 (no sweep), minutes (5), 90s, 15m, 1h, rate(5 minutes)"
        )
    seconds = int(match.group(1)) * _UNITS[match.group(2) or "m"]
    if seconds <= 0:
        raise ReplayInputError(f"sweep interval {text!r} must be longer than 0 (or 0 alone: no sweep)")
    return timedelta(seconds=seconds)


def utc_text(value: datetime | None) -> str:
    """A time as the summary and the result's reasons print it: UTC to the second, ``-`` if unknown."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if value else "-"


def interval_text(seconds: int) -> str:
    """A sweep interval as people read it: ``5 min``, ``90 s``."""
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"
