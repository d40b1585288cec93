"""One job's pictures: the objective by trial, and its cost against its budget with its stops."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from governor_client.report.html import pyplot, when
from governor_client.report.job_view import JobView
from governor_client.report.job_view import stops as decided_stops
from governor_client.report.pictures.axes import clock, legend_beside, span, utc_time_axis
from tuning_governor.models.records import TrialRecord

KIND_STYLE = {
    "completed": {"marker": "o", "color": "tab:blue"},
    "stopped early": {"marker": "v", "color": "tab:purple", "fillstyle": "none"},
    "cut by the job's stop": {"marker": "x", "color": "tab:gray"},
}


def stops(view: JobView) -> list[tuple[datetime, str]]:
    """Every stop and would-stop decision of the job, earliest first, as (time, ``rule: action``)."""
    return decided_stops(view.decisions)


def trial_kind(trial: TrialRecord, job_stopped_at: datetime | None) -> str:
    """``completed``; ``stopped early`` (the tuner's early stopping, e.g. Hyperband); or ``cut by the
    job's stop``: running when the tuning job itself was stopped (started before the stop, ended at or
    after it). A trial started after the stop was stopped by the tuner, whatever its end."""
    if trial.status != "Stopped":
        return "completed"
    started = trial.start_time or trial.event_time
    cut = (
        job_stopped_at is not None
        and started < job_stopped_at
        and (trial.end_time is None or trial.end_time >= job_stopped_at)
    )
    return "cut by the job's stop" if cut else "stopped early"


def _job_stopped_at(view: JobView) -> datetime | None:
    """When the tuning job itself was stopped; None when it was not (a replayed stop in a history that
    ran on, ``Completed`` there, cut no trial: its Stopped trials were the tuner's)."""
    if view.status not in {"Stopped", "Stopping"}:
        return None
    if view.summary is not None and view.summary.cost.early_stopping.job_stopped_at is not None:
        return view.summary.cost.early_stopping.job_stopped_at
    found = [at for at, label in stops(view) if label.endswith(": stopped")]
    return found[0] if found else None


def objective_figure(view: JobView) -> Any | None:
    """The objective of each scored trial in finishing order, by kind, with the best so far (None: none scored)."""
    scored = [t for t in view.trials if t.objective_value is not None]
    if not scored:
        return None
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415 - client-side extra

    maximize = (view.objective_type or "Maximize") == "Maximize"
    stopped_at = _job_stopped_at(view)
    figure, axes = pyplot().subplots(figsize=(7.5, 3.2))
    values = [float(t.objective_value or 0) for t in scored]
    best: list[float] = []
    for value in values:
        best.append(value if not best else (max if maximize else min)(best[-1], value))
    for kind, style in KIND_STYLE.items():
        xs = [n for n, t in enumerate(scored, start=1) if trial_kind(t, stopped_at) == kind]
        if xs:
            axes.plot(xs, [values[n - 1] for n in xs], linestyle="none", markersize=5, label=kind, **style)
    axes.plot(range(1, len(best) + 1), best, "-", color="tab:orange", label="best so far")
    axes.set_xlabel("trial, in finishing order")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel(scored[0].objective_name or "objective")
    axes.set_title(f"{view.label}: objective ({'higher' if maximize else 'lower'} is better)")
    legend_beside(axes)
    return figure


def _cumulative(priced: list[TrialRecord]) -> tuple[list[datetime], list[float]]:
    total = Decimal(0)
    times: list[datetime] = []
    cumulative: list[float] = []
    for trial in sorted(priced, key=lambda t: (t.end_time, t.training_job_name)):
        assert trial.end_time is not None
        total += (trial.cost_usd or Decimal(0)) + (trial.warm_pool_cost_usd or Decimal(0))
        times.append(trial.end_time)
        cumulative.append(float(total))
    return times, cumulative


def cost_figure(view: JobView) -> Any | None:
    """Cumulative cost of the finished trials against the job's budget, with every stop (the earliest
    first and emphasised) and the scheduled budget check; None when nothing was billed."""
    priced = [t for t in view.trials if t.end_time is not None and t.cost_usd is not None]
    if not billed(view):
        return None
    figure, axes = pyplot().subplots(figsize=(7.5, 3.2))
    times, cumulative = _cumulative(priced)
    starts = [view.created] if view.created is not None else []
    starts += [t.start_time for t in priced if t.start_time is not None]
    axes.step([min(starts + times), *times], [0.0, *cumulative], where="post", label="cost of finished trials")
    top = cumulative[-1]
    budget = view.budget_usd
    if budget is not None:
        axes.axhline(float(budget), color="tab:red", linestyle="--", label=f"budget ${budget:,.2f}")
        top = max(top, float(budget))
    marks = _stop_and_check_lines(view, axes)
    axes.set_ylim(0, top * 1.15 if top > 0 else 1.0)
    utc_time_axis(axes, *span(starts + times + marks))
    axes.set_ylabel("USD")
    axes.set_title(f"{view.label}: cumulative cost")
    legend_beside(axes)
    return figure


def _stop_and_check_lines(view: JobView, axes: Any) -> list[datetime]:
    marks: list[datetime] = []
    for number, (at, label) in enumerate(stops(view)):
        rule, action = label.split(": ")
        if number == 0 and action == "would-stop":
            axes.axvline(
                at,
                color="tab:orange",
                linestyle="--",
                linewidth=2,
                label=f"would-stop {clock(at)} ({rule}, nothing stopped)",
            )
        elif number == 0:
            axes.axvline(at, color="tab:orange", linewidth=2, label=f"stop {clock(at)} ({rule})")
        else:
            axes.axvline(at, color="tab:gray", linestyle=":", label=f"later: {label} {clock(at)}")
        marks.append(at)
    if view.budget_check_at is not None:
        at = datetime.fromisoformat(view.budget_check_at)
        axes.axvline(at, color="tab:green", linestyle="-.", linewidth=1, label=f"budget check {clock(at)}")
        marks.append(at)
    return marks


def billed(view: JobView) -> bool:
    """Some finished trial of the job was billed (a priced cost above $0, or billable seconds)."""
    return any(
        t.end_time is not None and ((t.cost_usd or 0) > 0 or (t.warm_pool_cost_usd or 0) > 0 or t.billable_seconds > 0)
        for t in view.trials
    )


def job_note(view: JobView) -> str | None:
    """A sentence in place of the cost plot when nothing was billed (None: the plot says it)."""
    if billed(view):
        return None
    found = stops(view)
    started = [t.start_time for t in view.trials if t.start_time is not None]
    if found and (not started or min(started) >= found[0][0]):
        at, label = found[0]
        return f"Stopped on arrival, nothing billed ({label} at {when(at)})."
    if found:
        return f"Nothing billed ({found[0][1]} at {when(found[0][0])})."
    return "No finished trial billed yet: nothing to draw."
