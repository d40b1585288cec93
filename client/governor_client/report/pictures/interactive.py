"""The account and team views as Plotly charts for the HTML pages: hover for who held what and when,
zoom into a busy hour. plotly.js is inlined once per page (``governor_client.report.html.plotly_script``), so a page works
offline and stands alone; each chart is a ``<div class="chart">`` drawn by that script."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from governor_client.report.pictures.account import TypeUsage, limit_label
from governor_client.report.pictures.axes import span
from governor_client.report.pictures.spend import SpendPoint, StopRow, dollars, on_scale
from tuning_governor.policy import Policy

UTC_AXIS = {"title": {"text": "time (UTC)"}, "type": "date"}
LEGEND_BESIDE = {"x": 1.02, "xanchor": "left", "y": 1.0, "yanchor": "top"}


def _div(figure: Any, chart_id: str) -> str:
    html: str = figure.to_html(
        full_html=False, include_plotlyjs=False, div_id=chart_id, config={"displaylogo": False, "responsive": True}
    )
    return f'<div class="chart" id="wrap-{chart_id}">{html}</div>'


def account_chart(usage: TypeUsage) -> str:
    """The stacked usage by team / job, the applied limit and the breaching arrivals of one type."""
    import plotly.graph_objects as go  # noqa: PLC0415 - client-side extra

    figure = go.Figure()
    times = _usage_traces(go, figure, usage)
    _limit_and_breach_traces(go, figure, usage, times)
    _wait_traces(go, figure, usage)
    shared = span(usage.window) if usage.window else None
    figure.update_layout(
        title={"text": f"{usage.instance_type}: instances counted (reserved by team / job) against the quota"},
        xaxis=UTC_AXIS | ({"range": [shared[0].isoformat(), shared[1].isoformat()]} if shared else {}),
        yaxis={"title": {"text": "instances"}, "rangemode": "tozero"},
        legend=LEGEND_BESIDE,
        showlegend=True,
        height=380,
        margin={"r": 20, "t": 50},
        hovermode="x unified",
    )
    return _div(figure, f"account-{usage.instance_type.replace('.', '-')}")


def _usage_traces(go: Any, figure: Any, usage: TypeUsage) -> list[Any]:
    """The reservations stacked by team / job, and the trials' real usage as a line; the change times."""
    times, levels = usage.series()
    for label, ys in levels.items():
        figure.add_trace(
            go.Scatter(
                x=times,
                y=ys,
                name=label,
                mode="lines",
                stackgroup="usage",
                line={"shape": "hv", "width": 0.5},
                hovertemplate="%{y} reserved<extra>" + label + "</extra>",
            )
        )
    held_times, held = usage.running_series()
    if held_times:
        figure.add_trace(
            go.Scatter(
                x=held_times,
                y=held,
                name="held by the recorded trials",
                mode="lines",
                line={"shape": "hv", "color": "black", "width": 1},
            )
        )
    return list(times)


def _limit_and_breach_traces(go: Any, figure: Any, usage: TypeUsage, times: list[Any]) -> None:
    if usage.limits:
        last = usage.window[1] if usage.window else (times[-1] if times else None)
        xs = [at for at, _, _ in usage.limits] + ([last] if last is not None else [])
        ys = [limit for _, limit, _ in usage.limits] + ([usage.limits[-1][1]] if last is not None else [])
        figure.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                name=limit_label(usage),
                mode="lines",
                line={"shape": "hv", "dash": "dash", "color": "black"},
            )
        )
    for b in usage.breaches:
        figure.add_trace(
            go.Scatter(
                x=[b.at, b.at],
                y=[b.usage, b.usage + b.demand],
                mode="lines+markers",
                line={"color": "red", "width": 4},
                marker={"symbol": "x", "size": [0, 14], "color": "red"},
                name=f"{b.job} ({b.team or 'no team'}): {b.usage} + {b.demand} > {b.limit}, {b.action}",
            )
        )


def _wait_traces(go: Any, figure: Any, usage: TypeUsage) -> None:
    """Each submission the queue held: a dotted line from its submission to its admission, at the level
    it would have reached (usage + its demand), named with its place in the queue."""
    for wait in usage.waits:
        level = usage.level_at(wait.queued) + wait.demand
        end = wait.admitted or (usage.window[1] if usage.window else wait.queued)
        figure.add_trace(
            go.Scatter(
                x=[wait.queued, end],
                y=[level, level],
                mode="lines+markers",
                line={"color": "purple", "width": 3, "dash": "dot"},
                marker={"symbol": "line-ns-open", "size": 14, "color": "purple"},
                name=wait.text(),
            )
        )


def spend_chart(spend: Mapping[str, Sequence[SpendPoint]], rows: Sequence[StopRow], policy: Policy) -> str | None:
    """One row per team: its spend in the month, its monthly budget, its stops (numbered)."""
    teams = [team for team, points in sorted(spend.items()) if points]
    if not teams:
        return None
    import plotly.graph_objects as go  # noqa: PLC0415 - client-side extra
    from plotly.subplots import make_subplots  # noqa: PLC0415

    titles = [_team_title(team, spend[team], policy) for team in teams]
    figure = make_subplots(rows=len(teams), cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.12)
    for n, team in enumerate(teams, start=1):
        _team_row(go, figure, n, team, spend[team], [r for r in rows if r.team == team], policy)
    figure.update_xaxes(title_text="time (UTC)", row=len(teams), col=1)
    figure.update_layout(
        legend=LEGEND_BESIDE,
        height=200 * len(teams) + 120,
        margin={"r": 20, "t": 50},
        title={"text": "Spend by team in the month (finished + accrued)"},
    )
    return _div(figure, "team-spend")


def _team_row(
    go: Any, figure: Any, n: int, team: str, points: Sequence[SpendPoint], rows: list[StopRow], policy: Policy
) -> None:
    """Row ``n``: the team's spend, its monthly budget (dashed) and its stops (dotted, numbered)."""
    figure.add_trace(
        go.Scatter(
            x=[p.at for p in points], y=[float(p.spent_usd) for p in points], name=f"{team}: spend", mode="lines"
        ),
        row=n,
        col=1,
    )
    budget = policy.team_monthly_budget(team)
    top = max(float(p.spent_usd) for p in points)
    drawn = budget is not None and on_scale(top, float(budget))
    if budget is not None and drawn:  # a legend entry, not a label on the plot: it would cover a stop line
        figure.add_trace(
            go.Scatter(
                x=[points[0].at, points[-1].at],
                y=[float(budget)] * 2,
                name=f"{team}: monthly budget {dollars(budget)}",
                mode="lines",
                line={"dash": "dash", "color": "red"},
            ),
            row=n,
            col=1,
        )
    axis = "" if n == 1 else str(n)
    for row in rows:
        figure.add_vline(x=row.at, line_dash="dot", line_color="orange", row=n, col=1)
        figure.add_annotation(
            x=row.at,
            y=1.0,
            xref=f"x{axis}",
            yref=f"y{axis} domain",
            text=f"#{row.number}",
            showarrow=False,
            yanchor="bottom",
            font={"color": "darkorange", "size": 11},
        )
    top = max(top, float(budget)) if budget is not None and drawn else top
    figure.update_yaxes(title_text="USD", range=[0, top * 1.2 if top > 0 else 1.0], row=n, col=1)


def _team_title(team: str, points: Sequence[SpendPoint], policy: Policy) -> str:
    """``vision: $1.76 of a $20,000 budget (far above: not drawn)``: the panel's own figures."""
    budget = policy.team_monthly_budget(team)
    spent = points[-1].spent_usd
    if budget is None:
        return f"{team}: {dollars(spent)} (no monthly budget)"
    far = "" if on_scale(max(float(p.spent_usd) for p in points), float(budget)) else " (far above: not drawn)"
    return f"{team}: {dollars(spent)} of a {dollars(budget)} monthly budget{far}"
