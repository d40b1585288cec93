"""Axis and legend habits shared by every matplotlib picture: times in UTC, legends beside the plot."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any


def clock(at: datetime) -> str:
    """``09:43:45Z``: a time of day in UTC, for labels."""
    return at.astimezone(UTC).strftime("%H:%M:%SZ")


def span(times: Iterable[datetime]) -> tuple[datetime, datetime]:
    """The first and last of ``times`` with a margin of 3% each side (at least a minute)."""
    ordered = sorted(times)
    start, end = ordered[0], ordered[-1]
    margin = max((end - start) * 0.03, timedelta(minutes=1))
    return start - margin, end + margin


def utc_time_axis(axes: Any, start: datetime, end: datetime, *, label: bool = True) -> None:
    """Limit the x axis to ``start``..``end``, tick it in UTC and say so in its label."""
    import matplotlib.dates as mdates  # noqa: PLC0415 - client-side extra

    axes.set_xlim(start, end)
    locator = mdates.AutoDateLocator(tz=UTC, minticks=3, maxticks=8)  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_locator(locator)
    one_day = start.astimezone(UTC).date() == end.astimezone(UTC).date()
    formatter = mdates.DateFormatter("%H:%M" if one_day else "%m-%d %H:%M", tz=UTC)  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_formatter(formatter)
    if label:
        day = f", {start.astimezone(UTC):%Y-%m-%d}" if one_day else ""
        axes.set_xlabel(f"time (UTC{day})")


def legend_beside(axes: Any) -> None:
    """The axes' legend to the right of its plot area, so it never covers a line, a limit or a marker."""
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8, frameon=False)


def legend_below(axes: Any, *, columns: int = 2) -> None:
    """The axes' legend under its plot area and x label, for legends too wide to sit beside it."""
    if axes.get_legend_handles_labels()[0]:
        axes.legend(
            loc="upper left", bbox_to_anchor=(0.0, -0.2), borderaxespad=0.0, fontsize=8, frameon=False, ncols=columns
        )
