"""Each team's spend in the month against its monthly budget: one panel per team (its own dollar
scale, so a $40 team reads as well as a $20,000 one), the team's stops numbered as in the stops table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from governor_client.report.html import pyplot
from governor_client.report.pictures.axes import legend_beside, span, utc_time_axis
from tuning_governor.policy import Policy


class SpendPoint(Protocol):
    """A team's spend in the month at a time (the replay's ``timeline.SpendPoint``)."""

    @property
    def at(self) -> datetime: ...
    @property
    def month(self) -> str: ...
    @property
    def spent_usd(self) -> Decimal: ...
    @property
    def lower_bound(self) -> bool: ...


class StopRow(Protocol):
    """A numbered stop or would-stop decision (the replay's ``figures.StopRow``)."""

    @property
    def number(self) -> int: ...
    @property
    def team(self) -> str | None: ...
    @property
    def at(self) -> datetime: ...


def dollars(value: Decimal | float) -> str:
    """``$0.60``, ``$40.00``, ``$20,000``: cents below $1,000, where they matter."""
    return f"${value:,.2f}" if value < 1000 else f"${value:,.0f}"


OFF_SCALE = 10.0
"""A budget more than this many times the team's highest spend is named in the legend, not drawn: drawn,
it would flatten the spend to a line at $0 (a $1.76 month on a $0-20,000 axis)."""


def on_scale(top_spent: float, budget: float) -> bool:
    """Whether a panel whose spend peaks at ``top_spent`` draws the ``budget`` line on its own scale."""
    return top_spent <= 0 or budget <= OFF_SCALE * top_spent


def _clusters(times: list[tuple[datetime, int]], width: timedelta) -> list[tuple[datetime, str]]:
    """Stop numbers closer than ``width`` share one label (``3, 4``) so labels never overlap."""
    out: list[tuple[datetime, list[int]]] = []
    for at, number in sorted(times):
        if out and at - out[-1][0] < width:
            out[-1][1].append(number)
        else:
            out.append((at, [number]))
    return [(at, ", ".join(str(n) for n in numbers)) for at, numbers in out]


def spend_figure(spend: Mapping[str, Sequence[SpendPoint]], rows: Sequence[StopRow], policy: Policy) -> Any | None:
    """One panel per team with points: its spend (finished + accrued), its monthly budget, its stops."""
    teams = [team for team, points in sorted(spend.items()) if points]
    if not teams:
        return None
    every = [p.at for team in teams for p in spend[team]] + [r.at for r in rows]
    start, end = span(every)
    figure, panels = pyplot().subplots(len(teams), 1, figsize=(11, 1.9 * len(teams) + 0.9), sharex=True, squeeze=False)
    for team, axes in zip(teams, (row[0] for row in panels), strict=True):
        _panel(axes, team, spend[team], [r for r in rows if r.team == team], policy, (start, end))
    for row in panels[:-1]:
        row[0].set_xlabel("")
    figure.subplots_adjust(hspace=0.55)
    return figure


def _panel(
    axes: Any,
    team: str,
    points: Sequence[SpendPoint],
    rows: Sequence[StopRow],
    policy: Policy,
    limits: tuple[datetime, datetime],
) -> None:
    spent = [float(p.spent_usd) for p in points]
    axes.plot([p.at for p in points], spent, "-", color="tab:blue", label="finished + accrued")
    top = max(spent)
    budget = policy.team_monthly_budget(team)
    if budget is not None and on_scale(top, float(budget)):
        axes.axhline(float(budget), color="tab:red", linestyle="--", label=f"monthly budget {dollars(budget)}")
        top = max(top, float(budget))
    elif budget is not None:  # far above the spend: named, not drawn, so the spend keeps its own scale
        axes.plot([], [], color="tab:red", linestyle="--", label=f"monthly budget {dollars(budget)} (far above)")
    for at, _ in ((r.at, r.number) for r in rows):
        axes.axvline(at, color="tab:orange", linestyle=":", linewidth=1.2)
    if rows:
        axes.plot([], [], color="tab:orange", linestyle=":", label="stop / would-stop (#)")
    axes.set_ylim(0, top * 1.2 if top > 0 else 1.0)
    for at, text in _clusters([(r.at, r.number) for r in rows], (limits[1] - limits[0]) / 40):
        axes.annotate(text, xy=(at, 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom", fontsize=8)
    utc_time_axis(axes, *limits)
    last = points[-1]
    of = f" of {dollars(budget)}" if budget is not None else " (no monthly budget)"
    bound = " (at least: unpriced trials)" if last.lower_bound else ""
    axes.set_title(f"{team}: ${last.spent_usd:,.2f}{bound}{of} in {last.month}", loc="left", fontsize=10, pad=12)
    axes.set_ylabel("USD")
    legend_beside(axes)
