"""``tuning-governor report``: a self-contained HTML page (and PNGs for chat) of what the governor recorded.

Reads the governor's table through ``GovernorStore`` (a live account through boto3, or the offline
store of the demo) for one job, a team, or a month, and draws per job:

* the objective of each trial in finishing order, with the best so far (in the job's direction);
* the cumulative cost of its finished trials over time, with the job's budget and the stop marked;
* the instances its trials held per instance type over time, against the limit the governor applied
  (from its concurrency decision, when there was one).

matplotlib (client side only, never in the layer) draws PNGs; the page embeds them as data URIs, so
it is one file to attach or open anywhere. A small script on the page counts the plots the browser
decoded (``data-plots-loaded`` on ``<body>``), which the browser test reads.
"""

from __future__ import annotations

import html
from argparse import ArgumentTypeError
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from governor_sim.html_page import plot_img, png, pyplot, render_page
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.models.records import JobSummary, TrialRecord
from tuning_governor.ports import Store

TERMINAL_AND_RUNNING = ("InProgress", "Stopping", "Completed", "Stopped", "Failed")


@dataclass
class JobView:
    """What the table holds about one tuning job, as the plots need it."""

    key: str
    name: str
    team: str | None
    status: str
    created: datetime | None
    objective_type: str | None
    trials: list[TrialRecord]
    decisions: list[dict[str, Any]]
    summary: JobSummary | None
    plots: dict[str, bytes] = field(default_factory=dict)

    @property
    def budget_usd(self) -> Decimal | None:
        for decision in self.decisions:
            value = (decision.get("numbers") or {}).get("budget_usd")
            if value is not None and decision.get("rule") == "budget":
                return Decimal(str(value))
        return None

    @property
    def stop(self) -> tuple[datetime, str] | None:
        for decision in self.decisions:
            if decision.get("action") in {"stopped", "would-stop"} and decision.get("at"):
                return datetime.fromisoformat(str(decision["at"])), f"{decision.get('rule')}: {decision.get('action')}"
        return None

    def limits(self) -> dict[str, int]:
        """The per-type limits of the job's concurrency decision (what the governor compared with)."""
        out: dict[str, int] = {}
        for decision in self.decisions:
            if decision.get("rule") != "concurrency":
                continue
            for itype, figures in ((decision.get("numbers") or {}).get("instance_types") or {}).items():
                if isinstance(figures, dict) and figures.get("limit") is not None:
                    out[str(itype)] = int(figures["limit"])
        return out


def collect(
    store: Store, *, job: str | None = None, team: str | None = None, month: str | None = None
) -> list[JobView]:
    """The jobs the table records, narrowed to one job, a team and/or a month (``YYYY-MM`` of creation)."""
    metas: dict[str, dict[str, Any]] = {}
    if job is not None:
        meta = store.get_job(job.lower())
        if meta is not None:
            metas[job.lower()] = meta
    else:
        for status in TERMINAL_AND_RUNNING:
            for item in store.jobs_with_status(status):
                metas[str(item["pk"]).removeprefix("JOB#")] = item
    views: list[JobView] = []
    for key, listed in sorted(metas.items()):
        meta = store.get_job(key) or listed
        created = meta.get("creation_time")
        if team is not None and meta.get("team") != team:
            continue
        if month is not None and not str(created or "").startswith(month):
            continue
        trials = sorted(store.trial_records(key), key=lambda t: (t.end_time or t.event_time, t.training_job_name))
        views.append(
            JobView(
                key=key,
                name=str(meta.get("job_name") or key),
                team=meta.get("team"),
                status=str(meta.get("status") or "Unknown"),
                created=datetime.fromisoformat(created) if isinstance(created, str) and created else None,
                objective_type=meta.get("objective_type"),
                trials=trials,
                decisions=store.decisions(key),
                summary=store.get_summary(key),
            )
        )
    return views


# -- plots ---------------------------------------------------------------------------------------------
PLOT_NAMES = ("objective", "cost", "instances")


def draw(view: JobView) -> dict[str, bytes]:
    """The job's three plots as PNG bytes, by name (a plot with nothing to draw is left out)."""
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415 - client-side extra

    plots: dict[str, bytes] = {}
    scored = [t for t in view.trials if t.objective_value is not None]
    maximize = (view.objective_type or "Maximize") == "Maximize"
    if scored:
        plots["objective"] = _objective_plot(view, scored, maximize, plt, MaxNLocator)
    priced = [t for t in view.trials if t.end_time is not None and t.cost_usd is not None]
    if priced:
        plots["cost"] = _cost_plot(view, priced, plt)
    held = [t for t in view.trials if t.start_time is not None and t.end_time is not None and t.instances]
    if held:
        plots["instances"] = _instances_plot(view, held, plt)
    return plots


def _objective_plot(view: JobView, scored: list[TrialRecord], maximize: bool, plt: Any, locator: Any) -> bytes:
    figure, axes = plt.subplots(figsize=(7, 3.2))
    values = [float(t.objective_value or 0) for t in scored]
    best: list[float] = []
    for value in values:
        best.append(value if not best else (max if maximize else min)(best[-1], value))
    axes.plot(range(1, len(values) + 1), values, "o", markersize=4, label="trial")
    axes.plot(range(1, len(best) + 1), best, "-", label="best so far")
    axes.set_xlabel("trial, in finishing order")
    axes.xaxis.set_major_locator(locator(integer=True))
    axes.set_ylabel(scored[0].objective_name if scored and scored[0].objective_name else "objective")
    axes.set_title(f"{view.name}: objective ({'higher' if maximize else 'lower'} is better)")
    axes.legend(loc="best")
    return png(figure)


def _cost_plot(view: JobView, priced: list[TrialRecord], plt: Any) -> bytes:
    figure, axes = plt.subplots(figsize=(7, 3.2))
    total = Decimal(0)
    times: list[datetime] = []
    cumulative: list[float] = []
    for trial in priced:
        if trial.end_time is None:
            continue
        total += (trial.cost_usd or Decimal(0)) + (trial.warm_pool_cost_usd or Decimal(0))
        times.append(trial.end_time)
        cumulative.append(float(total))
    axes.step(times, cumulative, where="post", label="cost of finished trials")
    if view.budget_usd is not None:
        axes.axhline(float(view.budget_usd), color="tab:red", linestyle="--", label=f"budget ${view.budget_usd:,.2f}")
    if view.stop is not None:
        at, label = view.stop
        axes.axvline(at, color="tab:orange", linestyle=":", label=label)
    axes.set_ylabel("USD")
    axes.set_title(f"{view.name}: cumulative cost")
    axes.legend(loc="best")
    figure.autofmt_xdate()
    return png(figure)


def _instances_plot(view: JobView, held: list[TrialRecord], plt: Any) -> bytes:
    figure, axes = plt.subplots(figsize=(7, 3.2))
    limits = view.limits()
    for itype in sorted({t for trial in held for t in trial.instances}):
        changes: list[tuple[datetime, int]] = []
        for trial in held:
            count = trial.instances.get(itype, 0)
            if count and trial.start_time is not None and trial.end_time is not None:
                changes += [(trial.start_time, count), (trial.end_time, -count)]
        changes.sort()
        level, xs, ys = 0, [], []
        for at, delta in changes:
            level += delta
            xs.append(at)
            ys.append(level)
        if xs:
            (line,) = axes.step(xs, ys, where="post", label=f"{itype} in use")
            if itype in limits:
                axes.axhline(limits[itype], color=line.get_color(), linestyle="--", label=f"{itype} limit")
    axes.set_ylabel("instances")
    axes.set_title(f"{view.name}: instances held by its trials")
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="best")
    figure.autofmt_xdate()
    return png(figure)


# -- the page --------------------------------------------------------------------------------------------
def _rows(view: JobView) -> str:
    summary = view.summary
    figures = [
        ("status", view.status),
        ("team", view.team or "-"),
        ("trials recorded", str(len(view.trials))),
    ]
    if summary is not None:
        cost = summary.cost.cost_usd
        figures.append(
            ("cost", f"${cost:,.2f}" if cost is not None else f"unpriced (${summary.cost.priced_cost_usd:,.2f} priced)")
        )
        if summary.objective is not None:
            figures.append(("best objective", f"{summary.objective.name} = {summary.objective.value}"))
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in figures)
    decided = "".join(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
            *(html.escape(str(d.get(k, ""))) for k in ("rule", "verdict", "action", "at"))
        )
        for d in view.decisions
    )
    decisions = (
        f"<table class='decisions'><tr><th>rule</th><th>verdict</th><th>action</th><th>at</th></tr>{decided}</table>"
        if decided
        else "<p>No governance decision.</p>"
    )
    return f"<table class='figures'>{cells}</table>{decisions}"


def job_section(view: JobView, heading: str = "h2") -> str:
    """One job's section: its figures, its decisions and its plots (``draw`` must have filled ``plots``)."""
    images = "".join(plot_img(data, f"{view.name} {name}") for name, data in view.plots.items())
    missing = [name for name in PLOT_NAMES if name not in view.plots]
    note = f"<p class='note'>Not drawn (no finished trial with it): {', '.join(missing)}.</p>" if missing else ""
    title = html.escape(view.name)
    return f"<section><{heading}>{title}</{heading}>{_rows(view)}{note}<div>{images}</div></section>"


def draw_all(views: Iterable[JobView], out_dir: Path) -> None:
    """Fill each view's ``plots`` and write them beside the page as ``<job key>-<plot>.png``."""
    for view in views:
        view.plots = draw(view)
        for name, data in view.plots.items():
            (out_dir / f"{view.key}-{name}.png").write_bytes(data)


def render(views: Iterable[JobView], title: str) -> str:
    """One HTML page, every plot embedded (``draw`` must have filled ``plots``)."""
    body = "".join(job_section(view) for view in views) or "<p>No tuning job matched.</p>"
    return render_page(title, body)


def write_report(
    store: Store,
    out_dir: Path,
    *,
    title: str,
    job: str | None = None,
    team: str | None = None,
    month: str | None = None,
) -> Path:
    """Write ``index.html`` and one PNG per plot into ``out_dir``; the page's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    views = collect(store, job=job, team=team, month=month)
    draw_all(views, out_dir)
    page = out_dir / "index.html"
    page.write_text(render(views, title), encoding="utf-8")
    return page


# -- the command ------------------------------------------------------------------------------------------
def add_arguments(parser: Any) -> None:
    parser.add_argument("--table", required=True, help="the governor's DynamoDB table (the stack's TableName output)")
    parser.add_argument("--region", default=None, help="its region (default: the AWS SDK's)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--job", default=None, help="one tuning job")
    which.add_argument("--team", default=None, help="one team's jobs")
    parser.add_argument("--month", type=_month, default=None, help="only jobs created in this month (YYYY-MM)")
    parser.add_argument("--out", default="governor-report", help="folder for index.html and the PNGs")


def _month(text: str) -> str:
    try:
        datetime.strptime(text, "%Y-%m")
    except ValueError:
        raise ArgumentTypeError(f"{text!r} is not a month as YYYY-MM, e.g. 2026-11") from None
    return text


def run_command(args: Any) -> int:
    """Read the live table through boto3 (the caller's credentials) and write the page."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    from governor_sim.cli_aws import cli_client  # noqa: PLC0415 - client side
    from governor_sim.cli_errors import CommandError, ExitCode  # noqa: PLC0415
    from governor_sim.progress import progress_bar  # noqa: PLC0415

    store = GovernorStore(cli_client("dynamodb", args.region), args.table)
    scope = args.job or (f"team {args.team}" if args.team else "all jobs")
    title = f"Tuning Governor: {scope}" + (f", {args.month}" if args.month else "")
    try:
        with progress_bar(f"reading {args.table} and drawing"):
            page = write_report(store, Path(args.out), title=title, job=args.job, team=args.team, month=args.month)
    except (ClientError, BotoCoreError) as exc:
        where = f" in {args.region}" if args.region else ""
        raise CommandError(f"cannot read table {args.table}{where}: {exc}", ExitCode.AWS) from exc
    print(page)
    return 0
