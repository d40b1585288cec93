"""What ``tuning-governor replay --html`` draws, gathered while the replay runs. No matplotlib here.

:class:`Timeline` is a :class:`governor_client.replay.engine.ReplayProbe`. During the run it samples each team's
spend in the calendar month as the governor judged it (``tuning_governor.app.queries.team_month``:
finished trials from the team's month item + what its running trials had accrued, the team-budget
rule's own figures). When the run ends, before the replay's table is dropped, it reads what the page
needs from the table: each job's team, the per-job views of ``tuning-governor report`` for the costliest
jobs, and, for a job the policy would have stopped in monitor mode, the replay's savings formula
applied at that decision (what enforcing it would have avoided).

Sampling: after every event, sweep or budget check that recorded a report (so each decision has a
point), and otherwise at most once per ``every`` of the events' time (1 minute to begin with), plus
once at the last event. Each sample costs two reads per team. When more than ``max_points`` samples
(not counting those at a report) are kept, ``every`` doubles and the samples off its grid are dropped (those at a report are kept), so a
long history costs about as many samples as a short one, whatever its length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from governor_client.replay.model import ReplayResult, stopped_job_savings
from governor_client.replay.sagemaker import EventSourcedSageMaker
from governor_client.report.page import JobView, applied_limits, collect
from tuning_governor.app.queries import team_month
from tuning_governor.app.services import Services
from tuning_governor.domain.pricing import PriceCatalog

STOP_ACTIONS = frozenset({"stopped", "would-stop"})
DEFAULT_SAMPLE_EVERY = timedelta(minutes=1)
DEFAULT_MAX_POINTS = 1500
DEFAULT_TOP_JOBS = 10


@dataclass(frozen=True)
class SpendPoint:
    """A team's spend in the month of ``at``, as the team-budget rule would have judged it at ``at``."""

    at: datetime
    month: str
    finished_usd: Decimal
    accrued_usd: Decimal
    lower_bound: bool
    """Some trial of the month is unpriced: the spend is at least this."""
    reported: bool = False
    """Sampled after a report was recorded (a decision or a summary): kept when samples are thinned."""

    @property
    def spent_usd(self) -> Decimal:
        return self.finished_usd + self.accrued_usd


def top_jobs(result: ReplayResult, count: int) -> list[str]:
    """The ``count`` costliest jobs of the result by cost in the history (unpriced ones after the priced,
    by billable instance-seconds), ties by name."""

    def order(name: str) -> tuple[int, float, str]:
        job = result.jobs[name]
        if job.cost_usd is not None:
            return (0, -job.cost_usd, name)
        return (1, -float(job.billable_instance_seconds), name)

    return sorted(result.jobs, key=order)[: max(0, count)]


@dataclass
class Timeline:
    """A ``ReplayProbe`` that keeps what the replay's HTML page draws (see the module docstring)."""

    every: timedelta = DEFAULT_SAMPLE_EVERY
    max_points: int = DEFAULT_MAX_POINTS
    jobs_drawn: int = DEFAULT_TOP_JOBS
    spend: dict[str, list[SpendPoint]] = field(default_factory=dict)
    """Team -> its samples, in time order."""
    job_teams: dict[str, str | None] = field(default_factory=dict)
    """Job name -> its team as the governor recorded it (None: no team tag)."""
    views: list[JobView] = field(default_factory=list)
    """``tuning-governor report``'s views of the ``jobs_drawn`` costliest jobs, costliest first."""
    account_views: list[JobView] = field(default_factory=list)
    """Every job's view (trials and decisions), for the account's instances-against-quota pictures."""
    if_enforced: dict[str, Decimal | None] = field(default_factory=dict)
    """Job -> the replay's savings formula at its first would-stop decision (monitor mode): what a stop
    then would have avoided. None when a counted trial is unpriced."""
    limits: dict[str, tuple[int, str]] = field(default_factory=dict)
    """The limit per instance type the replayed governor applied, with its source (``report.applied_limits``)."""
    _services: Services | None = None
    _sagemaker: EventSourcedSageMaker | None = None
    _catalog: PriceCatalog | None = None
    _last: datetime | None = None
    _teams_of: dict[str, str | None] = field(default_factory=dict)
    _origin: datetime | None = None
    _kept: int = 0

    # -- ReplayProbe -------------------------------------------------------------------------------------
    def attach(self, services: Services, sagemaker: EventSourcedSageMaker) -> None:
        self._services, self._sagemaker = services, sagemaker
        self._catalog = services.price_catalog(services.policy())

    def step(self, at: datetime, *, reported: bool) -> None:
        if reported or self._last is None or at - self._last >= self.every:
            self._sample(at, reported=reported)

    def finish(self, result: ReplayResult) -> None:
        services, sagemaker = self._require()
        last = result.events.last_at
        if last is not None and (self._last is None or last > self._last):
            self._sample(last)
        for points in self.spend.values():
            points.sort(key=lambda p: p.at)
        self._resolve_teams()
        keys = {sagemaker.job_name(key): key for key in sagemaker.job_keys()}
        self.job_teams = {name: self._teams_of.get(keys[name]) for name in result.jobs if name in keys}
        for name, job in result.jobs.items():
            would_stop = [d.at for d in job.decisions if d.action == "would-stop"]
            if would_stop and name in keys:
                records = services.store.trial_records(keys[name])
                self.if_enforced[name] = stopped_job_savings(records, min(would_stop))
        self.account_views = collect(services.store)
        types = {t for view in self.account_views for t in view.reserved}
        self.limits = applied_limits(services.policy(), services.quotas, types)
        drawn = top_jobs(result, self.jobs_drawn)
        views = {view.name: view for view in self.account_views if view.name in drawn}
        self.views = [views[name] for name in drawn if name in views]

    # -- sampling ----------------------------------------------------------------------------------------
    def _require(self) -> tuple[Services, EventSourcedSageMaker]:
        if self._services is None or self._sagemaker is None:
            raise RuntimeError("Timeline used before the replay attached it")
        return self._services, self._sagemaker

    def _resolve_teams(self) -> None:
        services, sagemaker = self._require()
        for key in sagemaker.job_keys():
            if key in self._teams_of:
                continue
            meta = services.store.get_job(key)
            if meta is not None:  # not yet recorded (its arrival not seen so far): asked again next sample
                self._teams_of[key] = meta.get("team") or None

    def _sample(self, at: datetime, *, reported: bool = False) -> None:
        services, _ = self._require()
        assert self._catalog is not None
        self._origin = at if self._origin is None else self._origin
        self._last = at if self._last is None else max(self._last, at)
        self._kept += 0 if reported else 1
        self._resolve_teams()
        for team in sorted({t for t in self._teams_of.values() if t}):
            facts = team_month(team, at, self._catalog, services)
            self.spend.setdefault(team, []).append(
                SpendPoint(
                    at=at,
                    month=facts.month,
                    finished_usd=facts.finished_usd,
                    accrued_usd=facts.accrued_usd,
                    lower_bound=facts.lower_bound,
                    reported=reported,
                )
            )
        if self._kept > self.max_points:
            self._thin()

    def _thin(self) -> None:
        """Double the sampling interval and drop the samples off its grid (not those at a report)."""
        assert self._origin is not None
        self.every *= 2
        origin, every = self._origin, self.every

        def keep(point: SpendPoint) -> bool:
            return point.reported or point.at == self._last or (point.at - origin) % every < every / 2

        times: set[datetime] = set()
        for team, points in self.spend.items():
            self.spend[team] = [p for p in points if keep(p)]
            times.update(p.at for p in self.spend[team] if not p.reported)
        self._kept = len(times)
