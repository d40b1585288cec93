"""``tuning-governor replay --html DIR``: the what-if as a self-contained HTML page, plus PNGs for chat.

The page states the replay's inputs (events, policy, mode, sweep interval) and shows:

* each team's spend in the month over the replay's timeline, as the governor judged it (finished +
  accrued, sampled by :class:`governor_sim.replay.timeline.Timeline`), with the team's
  ``monthly_budget_usd`` where the policy sets one and every stop / would-stop decision marked;
* the jobs judged on incomplete facts (the result's ``facts.incomplete``), or that there were none;
* the stop and would-stop decisions in a table: job, team, rule, verdict, action, time and the numbers
  that decided them (spent vs limit, usage + demand vs limit, ...);
* the savings per stopped job: its cost in the history (the replay keeps the history, so this is what
  it cost running on without the policy's stop), the part the stop would have avoided (the result's
  ``savings``, docs/replay.md's formula) and the difference, the cost with the stop. A job the policy
  would have stopped in monitor mode gets the same formula at its decision, labelled "if enforced";
* ``tuning-governor report``'s plots for the costliest jobs (``--html-jobs N``).

Every figure comes from the replay's result or its table; an unknown one (an unpriced trial) is shown
as unknown, never as $0. matplotlib draws (client side only).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from governor_sim.html_page import plot_img, png, pyplot, render_page, table
from governor_sim.replay.figures import JobSavings, StopRow, job_savings, stop_rows, usd_text
from governor_sim.replay.model import ReplayResult
from governor_sim.replay.timeline import SpendPoint, Timeline
from governor_sim.report import draw_all, job_section
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
def _when(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def spend_plot(spend: Mapping[str, list[SpendPoint]], rows: list[StopRow], policy: Policy) -> bytes | None:
    """Each team's spend in the month over time, its monthly budget, and each stop marked (None: no team)."""
    if not any(spend.values()):
        return None
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(12, 4.5))
    colours: dict[str | None, str] = {}
    for team, points in sorted(spend.items()):
        if not points:
            continue
        (line,) = axes.plot(
            [p.at for p in points], [float(p.spent_usd) for p in points], "-", label=f"{team}: finished + accrued"
        )
        colours[team] = line.get_color()
        budget = policy.team_monthly_budget(team)
        if budget is not None:
            axes.axhline(float(budget), color=line.get_color(), linestyle="--", label=f"{team}: monthly budget")
    for row in rows:
        colour = colours.get(row.team, "black")
        axes.axvline(row.at, color=colour, linestyle=":", linewidth=1)
        axes.annotate(
            f"{row.number}",
            xy=(row.at, 1.0),
            xycoords=("data", "axes fraction"),
            ha="center",
            va="bottom",
            fontsize=8,
            color=colour,
        )
    axes.set_ylabel("USD in the month")
    axes.set_title("Spend by team (as the governor judged it); dotted: stop / would-stop decisions, numbered", pad=14)
    axes.legend(loc="upper left", fontsize=8)
    figure.autofmt_xdate()
    return png(figure)


def savings_plot(savings: list[JobSavings]) -> bytes | None:
    """Per stopped job: its cost in the history against its cost with the stop (None: nothing priced)."""
    priced = [s for s in savings if s.cost_in_history_usd is not None and s.cost_with_stop_usd is not None]
    if not priced:
        return None
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(9, 0.6 * len(priced) + 1.6))
    labels = [f"{s.job} ({s.kind})" for s in priced]
    positions = list(range(len(priced)))
    history = [float(s.cost_in_history_usd or 0) for s in priced]
    stopped = [float(s.cost_with_stop_usd or 0) for s in priced]
    axes.barh([p + 0.2 for p in positions], history, height=0.4, label="cost in the history (ran on)")
    axes.barh([p - 0.2 for p in positions], stopped, height=0.4, label="cost with the stop")
    axes.set_yticks(positions, labels)
    axes.invert_yaxis()
    axes.set_xlabel("USD")
    axes.set_title("Stopped jobs: cost as they ran on vs with the stop")
    axes.legend(loc="best", fontsize=8)
    return png(figure)


# -- the page --------------------------------------------------------------------------------------------
def _inputs_section(result: ReplayResult, inputs: ReplayInputs) -> str:
    events = result.events
    span = f"{_when(events.first_at)} .. {_when(events.last_at)}" if events.first_at and events.last_at else "-"
    spent = [job.cost_usd for job in result.jobs.values()]
    priced = sum(c for c in spent if c is not None)
    unpriced = sum(1 for c in spent if c is None)
    figures = [
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
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in figures)
    return f"<section id='inputs'><h2>Inputs and totals</h2><table class='figures'>{cells}</table></section>"


def _facts_section(result: ReplayResult) -> str:
    """The jobs the governor was answered about without some fact (configuration, instances, tags)."""
    facts = result.facts
    source = "the events" if facts.table is None else f"the events and table {facts.table}"
    if not facts.incomplete:
        return (
            f"<section id='facts'><h2>Facts</h2><p>Every job was judged on complete facts, from"
            f" {html.escape(source)}.</p></section>"
        )
    cells = ""
    for gap in facts.incomplete:
        values = [
            gap.job,
            ", ".join(gap.missing),
            _when(gap.first_at),
            _when(gap.completed_at) if gap.completed_at else "-",
        ]
        job = html.escape(gap.job, quote=True)
        missing = html.escape(" ".join(gap.missing), quote=True)
        cells += (
            f'<tr class=\'incomplete\' data-job="{job}" data-missing="{missing}">'
            + "".join(f"<td>{html.escape(v)}</td>" for v in values)
            + "</tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in ("job", "missing", "first judged", "completed by a later event"))
    hint = (
        " Replay with <code>--facts-from-table TABLE</code> to read what the deployed governor stored."
        if facts.table is None
        else ""
    )
    note = (
        f"<p class='note'>Judged on incomplete facts: these jobs lacked a fact in {html.escape(source)} when the"
        " governor asked for it (configuration: MaxParallel taken as 1; instances: no demand; tags: none)."
        f"{hint}</p>"
    )
    return f"<section id='facts'><h2>Facts</h2>{note}<table class='facts'><tr>{head}</tr>{cells}</table></section>"


def _spend_section(spend_png: bytes | None) -> str:
    if spend_png is None:
        body = (
            "<p class='note'>No job carried a team tag: the governor keeps no team month for them, so there is"
            " no team spend to draw.</p>"
        )
    else:
        body = plot_img(spend_png, "team-spend", wide=True) + (
            "<p class='note'>Each team's spend in the calendar month (UTC) as the team-budget rule judged it:"
            " billed cost of the finished trials + what the running trials had accrued, sampled after each"
            " decision or report and at least every sample interval of the events' time. The line restarts at"
            " a month boundary. Dashed: the team's <code>monthly_budget_usd</code>.</p>"
        )
    return f"<section id='spend'><h2>Spend by team</h2>{body}</section>"


def _stops_section(rows: list[StopRow]) -> str:
    if not rows:
        return "<section id='stops'><h2>Stops</h2><p>The policy decided no stop.</p></section>"
    header = ["#", "job", "team", "rule", "verdict", "action", "at", "stop call", "decided by"]
    cells = ""
    for row in rows:
        values = [
            str(row.number),
            row.job,
            row.team or "-",
            row.rule,
            row.verdict,
            row.action,
            _when(row.at),
            "accepted" if row.accepted else ("none (monitor)" if row.action == "would-stop" else "not needed"),
            row.decided_by,
        ]
        attributes = " ".join(
            f'data-{k}="{html.escape(v, quote=True)}"'
            for k, v in (("job", row.job), ("rule", row.rule), ("action", row.action), ("at", row.at.isoformat()))
        )
        cells += f"<tr class='stop' {attributes}>" + "".join(f"<td>{html.escape(v)}</td>" for v in values) + "</tr>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    note = (
        "<p class='note'>Stop call <em>not needed</em>: the job was already stopping or had ended when the"
        " rule decided.</p>"
    )
    return f"<section id='stops'><h2>Stops</h2><table class='stops'><tr>{head}</tr>{cells}</table>{note}</section>"


def _savings_section(result: ReplayResult, savings: list[JobSavings], savings_png: bytes | None) -> str:
    if not savings:
        return "<section id='savings'><h2>Savings</h2><p>No stop, so nothing saved.</p></section>"
    rows = [
        [
            s.job,
            s.team or "-",
            s.kind,
            _when(s.at),
            usd_text(s.cost_in_history_usd) + ("" if s.finished_in_history else " (unfinished: at least)"),
            usd_text(s.cost_with_stop_usd),
            usd_text(s.avoided_usd),
        ]
        for s in savings
    ]
    header = ["job", "team", "stop", "at", "cost as it ran on", "cost with the stop", "avoided"]
    body = table(header, rows, css_class="savings")
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
    notes = (
        "<p class='note'><em>Cost as it ran on</em> is the job's cost in the captured history, trials + warm"
        " pools: the replay does not rewrite the history after a stop, so this is what the job cost without"
        " it. For a job still running when the history ends it is a lower bound. <em>Avoided</em> is the"
        f" result's savings: {html.escape(result.savings.method)} <em>Cost with the stop</em> = cost as it ran"
        " on - avoided. Unknown figures (unpriced instance types) are shown as unknown, never as $0.</p>"
    )
    image = plot_img(savings_png, "savings") if savings_png is not None else ""
    summary = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return f"<section id='savings'><h2>Savings</h2>{summary}{body}{image}{notes}</section>"


def _jobs_section(result: ReplayResult, timeline: Timeline) -> str:
    shown = len(timeline.views)
    left = len(result.jobs) - shown
    intro = (
        f"<p class='note'>The {shown} costliest of {len(result.jobs)} jobs (--html-jobs {timeline.jobs_drawn});"
        f" {left} more not drawn.</p>"
        if left > 0
        else ""
    )
    sections = "".join(job_section(view, heading="h3") for view in timeline.views)
    return f"<section id='jobs'><h2>Jobs</h2>{intro}{sections or '<p>No tuning job.</p>'}</section>"


def write_replay_page(
    result: ReplayResult, timeline: Timeline, policy: Policy, inputs: ReplayInputs, out_dir: Path
) -> Path:
    """Write ``index.html`` and its PNGs (team spend, savings, each drawn job's plots) into ``out_dir``
    (created if missing); the page's path. The page embeds every PNG, so it stands alone."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = stop_rows(result, timeline.job_teams)
    savings = job_savings(result, timeline.job_teams, timeline.if_enforced)
    spend_png = spend_plot(timeline.spend, rows, policy)
    savings_png = savings_plot(savings)
    for name, data in ((SPEND_PNG, spend_png), (SAVINGS_PNG, savings_png)):
        if data is not None:
            (out_dir / name).write_bytes(data)
    draw_all(timeline.views, out_dir)
    body = (
        _inputs_section(result, inputs)
        + _facts_section(result)
        + _spend_section(spend_png)
        + _stops_section(rows)
        + _savings_section(result, savings, savings_png)
        + _jobs_section(result, timeline)
    )
    page = out_dir / PAGE
    page.write_text(render_page(f"What-if replay of {inputs.events} under {inputs.policy}", body), encoding="utf-8")
    return page
