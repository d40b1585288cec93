"""A virtual clock: simulated time that only moves when the caller says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def as_utc(value: datetime) -> datetime:
    """Return ``value`` as a tz-aware UTC datetime (naive values are taken to be UTC, as moto stores them)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def as_naive_utc(value: datetime) -> datetime:
    """Return ``value`` as a naive UTC datetime, the form moto keeps on its model objects."""
    return as_utc(value).replace(tzinfo=None)


class VirtualClock:
    """Simulated wall-clock time.

    Callers may rely on: ``now()`` is tz-aware UTC, never goes backwards, and changes only through
    ``advance``/``advance_to``. A naive ``start`` is taken to be UTC.
    """

    def __init__(self, start: datetime) -> None:
        self._now = as_utc(start)

    def now(self) -> datetime:
        """The current virtual time (tz-aware, UTC)."""
        return self._now

    def advance(self, seconds: float) -> datetime:
        """Move time forward by ``seconds`` (>= 0) and return the new time."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go backwards (advance({seconds}))")
        self._now = self._now + timedelta(seconds=seconds)
        return self._now

    def advance_to(self, when: datetime) -> datetime:
        """Move time forward to ``when``; a ``when`` in the past leaves the clock where it is."""
        target = as_utc(when)
        self._now = max(self._now, target)
        return self._now

    def __repr__(self) -> str:
        return f"VirtualClock({self._now.isoformat()})"
