"""Instances against the quota: per instance type, what the account's jobs held over time, stacked by
team and job, against the limit the governor applied, with each arrival that breached it marked.

Built from the governor's table (the report's :class:`~governor_client.report.page.JobView` s). The stacked
areas are what the governor's capacity ledger counts as used: each admitted job's reservation (its
``demand``: instances per trial x parallel trials) from its creation until its last trial ends. The
line beside them is what its finished trials really held (start to end). Concurrency decisions give
the limit the governor applied (the applied Service Quota or the policy's quota, with its source) and
the arrivals it judged over it; a job stopped on arrival reserved nothing.

The limit is drawn for the whole window: the limits the caller read as the governor does (``applied``),
else the first one a concurrency decision read, from the window's start (a quota holds until it is
changed). A job's reservation ends when the job ended, or at the governor's stop if that came first (in
a replay the history ran on past it). Every type of a page shares one time axis (``TypeUsage.window``).
A request the queue held is drawn as its wait: from its submission to its admission, with its place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from governor_client.report.html import pyplot
from governor_client.report.job_view import JobView, stops
from governor_client.report.pictures.axes import clock, legend_below, span, utc_time_axis
from tuning_governor.models.queue import QueuedRequest

NAMED_JOBS = 8
"""Jobs drawn by name in a view; the others are stacked per team as ``<team>: k other jobs``."""


@dataclass(frozen=True)
class Holding:
    """Instances of the type held by a job (its reservation, or one trial) from ``start`` to ``end``."""

    job: str
    team: str | None
    start: datetime
    end: datetime
    instances: int


@dataclass(frozen=True)
class Breach:
    """An arrival the governor judged over the limit: usage + demand > limit."""

    job: str
    team: str | None
    at: datetime
    usage: int
    demand: int
    limit: int
    action: str


@dataclass(frozen=True)
class Wait:
    """A submission the queue held: from ``queued`` to ``admitted`` (None: still waiting at the end)."""

    label: str
    """The submission's client token (what its owner typed; the stack names the generated job)."""
    team: str
    queued: datetime
    admitted: datetime | None
    position: int
    """Its place in the queue when it was submitted (1: next)."""
    demand: int
    """Instances of the type it asks for."""

    def text(self) -> str:
        end = f"admitted {clock(self.admitted)}" if self.admitted else "still waiting"
        waited = f", waited {(self.admitted - self.queued) / timedelta(minutes=1):.1f} min" if self.admitted else ""
        return f"{self.label} ({self.team}): queued {clock(self.queued)} at position {self.position}, {end}{waited}"


@dataclass
class TypeUsage:
    """What the account held of one instance type, and the limit applied to it."""

    instance_type: str
    holdings: list[Holding] = field(default_factory=list)
    """The admitted jobs' reservations: what the capacity ledger counts as used."""
    running: list[Holding] = field(default_factory=list)
    """What the finished trials held, start to end."""
    limits: list[tuple[datetime, int, str]] = field(default_factory=list)
    """(time of the decision, limit, its source), in time order; one per change."""
    breaches: list[Breach] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)
    window: tuple[datetime, datetime] | None = None
    """The page's time axis (every type's the same): from the first job's creation to the last end."""

    def level_at(self, at: datetime) -> int:
        """Instances reserved at ``at`` (a job holds its reservation from its creation until it ends)."""
        return sum(h.instances for h in self.holdings if h.start <= at < h.end)

    def running_series(self) -> tuple[list[datetime], list[int]]:
        """The instances the trials held, as a step series over the times it changed."""
        times = sorted({h.start for h in self.running} | {h.end for h in self.running})
        return times, [sum(h.instances for h in self.running if h.start <= at < h.end) for at in times]

    def series(self) -> tuple[list[datetime], dict[str, list[int]]]:
        """The change times and, per stack label (``team / job``), the instances held from each time on."""
        labels = _labels(self.holdings)
        times = sorted({h.start for h in self.holdings} | {h.end for h in self.holdings})
        levels: dict[str, list[int]] = {label: [0] * len(times) for label in dict.fromkeys(labels.values())}
        index = {at: n for n, at in enumerate(times)}
        for holding in self.holdings:
            row = levels[labels[holding.job]]
            for n in range(index[holding.start], index[holding.end]):
                row[n] += holding.instances
        return times, levels


def _labels(holdings: list[Holding]) -> dict[str, str]:
    """Job -> its stack label: the ``NAMED_JOBS`` biggest holders by name, the rest grouped per team."""
    weight: dict[str, float] = {}
    team_of: dict[str, str | None] = {}
    for h in holdings:
        weight[h.job] = weight.get(h.job, 0.0) + h.instances * (h.end - h.start).total_seconds()
        team_of[h.job] = h.team
    ranked = sorted(weight, key=lambda job: (-weight[job], job))
    named = set(ranked[:NAMED_JOBS])
    others: dict[str | None, int] = {}
    for job in ranked[NAMED_JOBS:]:
        others[team_of[job]] = others.get(team_of[job], 0) + 1
    out = {}
    for job in sorted(ranked, key=lambda j: (team_of[j] or "~", j)):
        team = team_of[job] or "no team"
        out[job] = f"{team} / {job}" if job in named else f"{team}: {others[team_of[job]]} other job(s)"
    return out


def window(views: Iterable[JobView]) -> tuple[datetime, datetime] | None:
    """From the first job's creation to the last trial's end (or creation) of ``views``; None if no time."""
    times = [v.created for v in views if v.created is not None]
    times += [t.end_time for v in views for t in v.trials if t.end_time is not None]
    return (min(times), max(times)) if times else None


def account_usage(
    views: Iterable[JobView],
    within: tuple[datetime, datetime] | None = None,
    *,
    applied: Mapping[str, tuple[int, str]] | None = None,
    queue: Sequence[QueuedRequest] = (),
) -> dict[str, TypeUsage]:
    """Per instance type (sorted), the account's reservations, trials, applied limits, breaching
    arrivals and queue waits; with ``within``, only jobs whose time (creation to last trial end)
    overlaps it. ``applied``: the limit (and its source) per type as the governor reads it, drawn for
    the whole window; ``queue``: the submissions the queue held."""
    views = [v for v in views if within is None or _overlaps(v, within)]
    out: dict[str, TypeUsage] = {}
    for view in views:
        for trial in view.trials:
            if trial.start_time is None or trial.end_time is None:
                continue
            for itype, count in trial.instances.items():
                if count:
                    holding = Holding(view.label, view.team, trial.start_time, trial.end_time, count)
                    out.setdefault(itype, TypeUsage(itype)).running.append(holding)
        for decision in view.decisions:
            if decision.get("rule") == "concurrency" and decision.get("at"):
                _read_concurrency(view, decision, out)
    last = max(
        [h.end for u in out.values() for h in u.running] + [b.at for u in out.values() for b in u.breaches],
        default=None,
    )
    for view in views:
        _reserve(view, out, last)
    _waits(queue, views, out)
    shared = _shared_window(out)
    for itype, usage in out.items():
        usage.window = shared
        usage.limits = _whole_window(_changes(sorted(usage.limits)), (applied or {}).get(itype), shared)
        usage.breaches.sort(key=lambda b: (b.at, b.job))
    return dict(sorted(out.items()))


def _shared_window(out: Mapping[str, TypeUsage]) -> tuple[datetime, datetime] | None:
    times = [t for u in out.values() for h in u.holdings + u.running for t in (h.start, h.end)]
    times += [b.at for u in out.values() for b in u.breaches]
    times += [t for u in out.values() for w in u.waits for t in (w.queued, w.admitted) if t is not None]
    return (min(times), max(times)) if times else None


def _whole_window(
    read: list[tuple[datetime, int, str]], applied: tuple[int, str] | None, shared: tuple[datetime, datetime] | None
) -> list[tuple[datetime, int, str]]:
    """The limits from the window's start: the applied one, else the first one read, moved back to it."""
    if shared is None:
        return read
    if applied is not None:
        first = (shared[0], applied[0], applied[1])
        return _changes([first, *[item for item in read if item[0] > shared[0]]])
    if read:
        return [(min(shared[0], read[0][0]), read[0][1], read[0][2]), *read[1:]]
    return read


def _waits(queue: Sequence[QueuedRequest], views: list[JobView], out: dict[str, TypeUsage]) -> None:
    """Each request the queue held (submitted before its admission), on every type it asks for."""
    created = {v.name.lower(): v.created for v in views}
    ordered = sorted(queue, key=lambda r: r.order())
    for request in ordered:
        admitted = created.get(request.job_name.lower())
        if admitted is not None and admitted <= request.enqueued_at:
            continue  # created at once: it never waited
        ahead = [
            other
            for other in ordered[: ordered.index(request)]
            if other.enqueued_at <= request.enqueued_at
            and (created.get(other.job_name.lower()) or datetime.max.replace(tzinfo=request.enqueued_at.tzinfo))
            > request.enqueued_at
        ]
        label = request.client_token  # the stack beside it names the generated job too
        for itype, count in request.demand.items():
            wait = Wait(label, request.team, request.enqueued_at, admitted, len(ahead) + 1, count)
            out.setdefault(itype, TypeUsage(itype)).waits.append(wait)


def _overlaps(view: JobView, within: tuple[datetime, datetime]) -> bool:
    span_of = window([view])
    return span_of is not None and span_of[0] <= within[1] and within[0] <= span_of[1]


def _reserve(view: JobView, out: dict[str, TypeUsage], last: datetime | None) -> None:
    """The job's reservation from its creation to its last trial's end (or its stop, or the picture's end)."""
    turned_away = any(d.get("rule") == "concurrency" and d.get("action") == "stopped" for d in view.decisions)
    if view.created is None or turned_away:
        return
    ends = [t.end_time for t in view.trials if t.end_time is not None]
    end = max(ends) if ends and view.status not in {"InProgress", "Stopping"} else last
    stopped = [at for at, label in stops(view.decisions) if label.endswith(": stopped")]
    if stopped and end is not None:
        end = min(end, stopped[0])  # the stop ends it (a replay's history ran on past it)
    if end is None or end <= view.created:
        return
    for itype, count in view.reserved.items():
        if count:
            out.setdefault(itype, TypeUsage(itype)).holdings.append(
                Holding(view.label, view.team, view.created, end, count)
            )


def _read_concurrency(view: JobView, decision: dict[str, Any], out: dict[str, TypeUsage]) -> None:
    at = datetime.fromisoformat(str(decision["at"]))
    for itype, row in ((decision.get("numbers") or {}).get("instance_types") or {}).items():
        if not isinstance(row, dict) or row.get("limit") is None:
            continue
        usage = out.setdefault(str(itype), TypeUsage(str(itype)))
        limit = int(row["limit"])
        usage.limits.append((at, limit, str(row.get("limit_source") or row.get("source") or "")))
        used, demand = int(row.get("usage") or 0), int(row.get("demand") or 0)
        if decision.get("verdict") == "breach" or used + demand > limit:
            usage.breaches.append(
                Breach(view.label, view.team, at, used, demand, limit, str(decision.get("action") or ""))
            )


def _changes(limits: list[tuple[datetime, int, str]]) -> list[tuple[datetime, int, str]]:
    out: list[tuple[datetime, int, str]] = []
    for item in limits:
        if not out or out[-1][1] != item[1]:
            out.append(item)
    return out


def account_figure(usage: TypeUsage) -> Any | None:
    """The stacked usage, the applied limit and the breaching arrivals of one type (None: nothing to draw)."""
    times, levels = usage.series()
    marks = [b.at for b in usage.breaches] + [at for at, _, _ in usage.limits]
    if not times and not marks and not usage.waits:
        return None
    marks += [at for w in usage.waits for at in (w.queued, w.admitted) if at is not None]
    marks += list(usage.window or ())
    figure, axes = pyplot().subplots(figsize=(10, 3.6))
    if times:
        axes.stackplot(times, *levels.values(), labels=list(levels), step="post", alpha=0.8)
    top = max([sum(column) for column in zip(*levels.values(), strict=True)] or [0])
    held_times, held = usage.running_series()
    if held_times:
        axes.step(held_times, held, where="post", color="black", linewidth=1, label="held by the recorded trials")
    _limit_line(usage, axes, times + marks)
    for breach in usage.breaches:
        label = f"{breach.job} ({breach.team or 'no team'}) arrives {clock(breach.at)}: "
        label += f"{breach.usage} + {breach.demand} > {breach.limit}, {breach.action}"
        axes.plot([breach.at, breach.at], [breach.usage, breach.usage + breach.demand], color="tab:red", linewidth=3)
        axes.plot([breach.at], [breach.usage + breach.demand], "X", color="tab:red", markersize=10, label=label)
        top = max(top, breach.usage + breach.demand)
    for wait in usage.waits:
        level = usage.level_at(wait.queued) + wait.demand
        axes.plot(
            [wait.queued, wait.admitted or span(times + marks)[1]],
            [level, level],
            color="tab:purple",
            linestyle=":",
            linewidth=2.5,
            marker="|",
            markersize=12,
            label=wait.text(),
        )
        top = max(top, level)
    top = max([top] + [limit for _, limit, _ in usage.limits])
    axes.set_ylim(0, top * 1.15 + 0.5)
    utc_time_axis(axes, *span(times + marks))
    axes.set_ylabel("instances")
    axes.set_title(f"{usage.instance_type}: instances counted (reserved by team / job) against the quota")
    legend_below(axes)
    return figure


def _limit_line(usage: TypeUsage, axes: Any, times: list[datetime]) -> None:
    if not usage.limits:
        return
    start, end = span(times)
    xs = [start] + [at for at, _, _ in usage.limits[1:]] + [end]
    ys = [limit for _, limit, _ in usage.limits] + [usage.limits[-1][1]]
    axes.step(xs, ys, where="post", color="black", linestyle="--", linewidth=1.5, label=limit_label(usage))


def limit_label(usage: TypeUsage) -> str:
    """``applied limit 8 (Service Quota L-... (...))``: the limit in force at the end, and its source."""
    _, limit, source = usage.limits[-1]
    return f"applied limit {limit}" + (f" ({source})" if source else "")
