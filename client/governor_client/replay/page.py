"""``tuning-governor replay --html DIR``: the what-if as a self-contained HTML page, plus PNGs for chat.

The page states the replay's inputs (events, policy, mode, sweep interval) and shows:

* each team's spend in the month over the replay's timeline, as the governor judged it (finished +
  accrued, sampled by :class:`governor_client.replay.timeline.Timeline`), with the team's
  ``monthly_budget_usd`` where the policy sets one and every stop / would-stop decision marked;
* the stop and would-stop decisions in a table: job, team, rule, verdict, action, time and the numbers
  that decided them (spent vs limit, usage + demand vs limit, ...);
* the savings per stopped job: its cost in the history (the replay keeps the history, so this is what
  it cost running on without the policy's stop), the part the stop would have avoided (the result's
  ``savings``, docs/reference/replay.md's formula) and the difference, the cost with the stop. A job the policy
  would have stopped in monitor mode gets the same formula at its decision, labelled "if enforced";
* ``tuning-governor report``'s plots for the costliest jobs (``--html-jobs N``).

Every figure comes from the replay's result or its table; an unknown one (an unpriced trial) is shown
as unknown, never as $0. matplotlib draws (client side only).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path

from governor_client.replay.figures import JobSavings, job_savings, stop_rows
from governor_client.replay.model import ReplayResult
from governor_client.replay.timeline import Timeline
from governor_client.report.html import png, pyplot, render_template, safe, when
from governor_client.report.page import draw_accounts, draw_all, job_context
from governor_client.report.pictures.account import account_usage
from governor_client.report.pictures.axes import legend_beside
from governor_client.report.pictures.interactive import spend_chart
from governor_client.report.pictures.spend import spend_figure
from tuning_governor.policy import Policy

PAGE = "index.html"
SPEND_PNG = "team-spend.png"
SAVINGS_PNG = "savings.png"


@dataclass(frozen=True)
class ReplayInputs:
    """What the replay was run on, as the page states it."""

    events: str
    policy: str
    sweep_every: str


# -- plots -----------------------------------------------------------------------------------------------
def savings_plot(savings: list[JobSavings]) -> bytes | None:
    """Per stopped job: its cost in the history against its cost with the stop (None: nothing priced)."""
    priced = [s for s in savings if s.cost_in_history_usd is not None and s.cost_with_stop_usd is not None]
    if not priced:
        return None
    figure, axes = pyplot().subplots(figsize=(9, 0.6 * len(priced) + 1.6))
    positions = list(range(len(priced)))
    history = [float(s.cost_in_history_usd or 0) for s in priced]
    stopped = [float(s.cost_with_stop_usd or 0) for s in priced]
    axes.barh([p + 0.2 for p in positions], history, height=0.4, label="cost in the history (ran on)")
    axes.barh([p - 0.2 for p in positions], stopped, height=0.4, label="cost with the stop")
    axes.set_yticks(positions, [f"{s.job} ({s.kind})" for s in priced])
    axes.invert_yaxis()
    axes.set_xlabel("USD")
    axes.set_title("Stopped jobs: cost as they ran on vs with the stop")
    legend_beside(axes)
    return png(figure)


# -- the page --------------------------------------------------------------------------------------------
def _inputs(result: ReplayResult, inputs: ReplayInputs) -> list[tuple[str, str]]:
    events = result.events
    span = f"{when(events.first_at)} .. {when(events.last_at)}" if events.first_at and events.last_at else "-"
    spent = [job.cost_usd for job in result.jobs.values()]
    priced = sum(c for c in spent if c is not None)
    unpriced = sum(1 for c in spent if c is None)
    return [
        ("event log", inputs.events),
        ("policy", f"{inputs.policy} (mode {result.policy.mode})"),
        ("sweep interval", inputs.sweep_every),
        (
            "events",
            f"{events.lines} lines, {events.processed} processed, {events.rejected} rejected, {events.failed} failed",
        ),
        ("timeline", span),
        ("sweeps / budget checks", f"{result.sweeps.runs} / {result.sweeps.budget_checks}"),
        ("tuning jobs", str(len(result.jobs))),
        ("cost in the history", f"${priced:,.2f}" + (f" (+ {unpriced} job(s) not fully priced)" if unpriced else "")),
        ("stops issued", str(len(result.actions))),
        (
            "would have saved",
            f"${result.savings.usd:,.2f}" + ("" if result.savings.complete else " (stopped jobs not priced excluded)"),
        ),
    ]


def _savings_lines(result: ReplayResult, savings: list[JobSavings]) -> list[str]:
    stopped = [s for s in savings if s.kind == "stopped"]
    enforced = [s for s in savings if s.kind == "if enforced"]
    lines = [f"Would have saved: ${result.savings.usd:,.2f} over {len(stopped)} stopped job(s)."]
    if enforced:
        total = sum((s.avoided_usd for s in enforced if s.avoided_usd is not None), Decimal(0))
        lines.append(
            f"Monitor mode stopped nothing. Had its {len(enforced)} would-stop decision(s) been enforced, the"
            f' same formula gives ${total:,.2f} ("if enforced": no stop was made, replay with --mode enforce'
            " to see the enforced run, whose later decisions may differ)."
        )
    return lines


def write_replay_page(
    result: ReplayResult, timeline: Timeline, policy: Policy, inputs: ReplayInputs, out_dir: Path
) -> Path:
    """Write ``index.html`` and its PNGs (team spend, savings, the account views, each drawn job's plots)
    into ``out_dir`` (created if missing); the page's path. The page embeds every picture, so it stands alone."""
    out_dir.mkdir(parents=True, exist_ok=True)
    savings = job_savings(result, timeline.job_teams, timeline.if_enforced)
    billed = {s.job: s.cost_with_stop_usd for s in savings}
    rows = [replace(r, billed_usd=billed.get(r.job)) for r in stop_rows(result, timeline.job_teams)]
    spend = spend_figure(timeline.spend, rows, policy)
    spend_png = png(spend) if spend is not None else None
    savings_png = savings_plot(savings)
    for name, data in ((SPEND_PNG, spend_png), (SAVINGS_PNG, savings_png)):
        if data is not None:
            (out_dir / name).write_bytes(data)
    draw_all(timeline.views, out_dir)
    accounts = draw_accounts(account_usage(timeline.account_views, applied=timeline.limits), out_dir)
    chart = spend_chart(timeline.spend, rows, policy)
    page = out_dir / PAGE
    text = render_template(
        "replay.html.j2",
        title=f"What-if replay of {inputs.events} under {inputs.policy}",
        interactive=True,
        expected=sum(len(v.plots) for v in timeline.views) + (savings_png is not None),
        inputs=_inputs(result, inputs),
        facts=result.facts,
        spend_chart=safe(chart) if chart is not None else None,
        accounts=accounts,
        rows=rows,
        savings=savings,
        savings_lines=_savings_lines(result, savings),
        savings_png=savings_png,
        method=result.savings.method,
        jobs=[job_context(view) for view in timeline.views],
        jobs_total=len(result.jobs),
        jobs_left=len(result.jobs) - len(timeline.views),
        jobs_drawn=timeline.jobs_drawn,
    )
    page.write_text(text, encoding="utf-8")
    return page
