"""Building the replay's result: each tuning job's outcome, read from the replay's table and SageMaker,
and the whole :class:`governor_client.replay.model.ReplayResult` from the outcomes and what the run counted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from governor_client.replay.model import (
    SAVINGS_METHOD,
    ActionResult,
    DecisionResult,
    EarlyStoppingResult,
    EventCounts,
    FactsInfo,
    JobResult,
    LineProblem,
    NotificationResult,
    ObjectiveResult,
    PolicyInfo,
    ReplayResult,
    Savings,
    SweepInfo,
    TimingResult,
    stopped_job_savings,
)
from governor_client.replay.sagemaker import EventSourcedSageMaker
from tuning_governor.app.services import Services
from tuning_governor.domain.cost import MICRO
from tuning_governor.domain.reports import Report
from tuning_governor.domain.summary import summarise
from tuning_governor.models.records import JobSummary
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.policy import Policy


@dataclass(frozen=True, slots=True)
class Recorded:
    """What the result keeps of one report given to a channel."""

    channel: str
    job_key: str
    kind: str
    subject: str


@dataclass
class RecordingNotifier:
    """A report channel that records what it is given and sends nothing (never fails)."""

    channel: str
    outbox: list[Recorded]

    def send(self, report: Report) -> None:
        self.outbox.append(Recorded(self.channel, report.job_key, report.kind, report.subject))


@dataclass
class Tally:
    """What a replay counts as it runs: the result's ``events`` and ``sweeps``, and the unusable lines."""

    sweep_every: timedelta | None
    lines: int = 0
    processed: int = 0
    first_at: datetime | None = None
    last_at: datetime | None = None
    rejected: list[LineProblem] = field(default_factory=list)
    failed: list[LineProblem] = field(default_factory=list)
    sweeps: int = 0
    budget_checks: int = 0

    def saw(self, at: datetime) -> None:
        """One more event processed, dated ``at``."""
        self.processed += 1
        self.first_at = at if self.first_at is None else min(self.first_at, at)
        self.last_at = at if self.last_at is None else max(self.last_at, at)


def _money(value: Decimal | None) -> float | None:
    return None if value is None else float(value.quantize(MICRO))


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _plain_numbers(value: Any) -> Any:
    """A decision's stored numbers as JSON values: DynamoDB's Decimals become ints or floats."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Mapping):
        return {str(k): _plain_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain_numbers(v) for v in value]
        return sorted(items, key=str) if isinstance(value, set | frozenset) else items
    return value


def _decision(item: Mapping[str, Any]) -> DecisionResult:
    at = _time(item.get("at"))
    assert at is not None  # the store always writes it
    return DecisionResult(
        rule=str(item.get("rule")),
        verdict=str(item.get("verdict")),
        mode=str(item.get("mode")),
        action=str(item.get("action") or "pending"),
        at=at,
        message=str(item.get("message") or ""),
        numbers=_plain_numbers(item.get("numbers") or {}),
    )


def _job_result(
    summary: JobSummary, kind: Literal["final", "provisional"], decisions: list[DecisionResult], stop: datetime | None
) -> JobResult:
    cost = summary.cost
    es = cost.early_stopping
    objective = summary.objective
    return JobResult(
        status=summary.status,
        summary=kind,
        best_training_job=summary.best_training_job,
        best_hyperparameters=dict(summary.best_hyperparameters),
        objective=ObjectiveResult(name=objective.name, type=objective.type, value=objective.value)
        if objective
        else None,
        trials_by_status=dict(summary.trials_by_status),
        billable_instance_seconds=cost.billable_instance_seconds,
        cost_usd=_money(cost.cost_usd),
        cost_status=cost.status,
        spot_savings_usd=_money(cost.spot_savings_usd) if cost.status == "priced" else None,
        stop_requested_at=stop,
        early_stopping=EarlyStoppingResult(
            trials_stopped_early=es.trials_stopped_early,
            trials_cut_by_job_stop=es.trials_cut_by_job_stop,
            saved_billable_instance_seconds=es.saved_billable_instance_seconds,
            billable_instance_seconds_without_early_stopping=es.billable_instance_seconds_without_early_stopping,
        ),
        timing=TimingResult(
            wall_clock_seconds=summary.timing.wall_clock_seconds,
            estimate_without_early_stopping_seconds=summary.timing.estimate_without_early_stopping_seconds,
            one_at_a_time_seconds=summary.timing.one_at_a_time_seconds,
        ),
        decisions=decisions,
    )


@dataclass(frozen=True)
class JobOutcome:
    """What the result says of one tuning job: its name, its result, its accepted stops and, if it was
    stopped, the savings of its first stop."""

    name: str
    result: JobResult
    stops: list[DecisionResult]
    saved: Decimal | None


def accepted_stop(item: Mapping[str, Any]) -> bool:
    return item.get("action") == "stopped" and item.get("action_detail") == "stop-requested"


def _summary(
    key: str, meta: Mapping[str, Any], services: Services, sagemaker: EventSourcedSageMaker, now: datetime
) -> tuple[JobSummary, Literal["final", "provisional"]]:
    """The job's final summary if the governor wrote one, else one summarised at ``now`` from what is known."""
    store = services.store
    final = store.get_summary(key)
    if final is not None:
        return final, "final"
    job = sagemaker.tuning_job(key) or TuningJob.model_validate(
        {"HyperParameterTuningJobName": key, "HyperParameterTuningJobStatus": "Unknown"}
    )
    records = store.trial_records(key)
    region = meta.get("region") or (records[0].region if records else services.settings.region)
    policy: Policy = services.policy()
    provisional = summarise(
        job,
        sagemaker.trial_summaries(key),
        records,
        region=str(region),
        team=meta.get("team") or policy.team_of(job.tags, job.role_arns()),
        owner_tag=services.settings.owner_tag,
        now=now,
        stop_requested_at=_time(meta.get("stop_requested_at")),
        stopping_at=_time(meta.get("stopping_at")),
    )
    return provisional, "provisional"


def job_outcome(key: str, services: Services, sagemaker: EventSourcedSageMaker, now: datetime) -> JobOutcome:
    """What the result says of tuning job ``key`` at ``now`` (the last event's time): read from the
    replay's table and SageMaker, so taken before the job is forgotten or the table dropped."""
    store = services.store
    meta = store.get_job(key) or {}
    summary, kind = _summary(key, meta, services, sagemaker, now)
    items = store.decisions(key)
    decisions = sorted((_decision(i) for i in items), key=lambda d: (d.at, d.rule, d.verdict))
    # An accepted stop: the guard stopped the job and SageMaker took the request (not a second
    # stop of a job already stopping, nor one of a job that had ended).
    stops = [_decision(i) for i in items if accepted_stop(i)]
    first = min(stops, key=lambda d: (d.at, d.rule), default=None)
    saved = stopped_job_savings(store.trial_records(key), first.at) if first is not None else None
    return JobOutcome(
        name=sagemaker.job_name(key),
        result=_job_result(summary, kind, decisions, first.at if first is not None else None),
        stops=stops,
        saved=saved,
    )


def _savings(actions: list[ActionResult], outcomes: Mapping[str, JobOutcome]) -> Savings:
    """The savings of the first accepted stop of each stopped job (``docs/reference/replay.md``)."""
    saved = {outcome.name: outcome.saved for outcome in outcomes.values()}
    by_job: dict[str, float | None] = {}
    total = Decimal(0)
    for action in actions:
        if action.job in by_job:
            continue
        by_job[action.job] = _money(saved[action.job])
        total += saved[action.job] or Decimal(0)
    return Savings(
        usd=float(total.quantize(MICRO)),
        by_job=by_job,
        complete=all(v is not None for v in by_job.values()),
        method=SAVINGS_METHOD,
    )


def build_result(
    policy: PolicyInfo, tally: Tally, outcomes: Mapping[str, JobOutcome], outbox: list[Recorded], facts: FactsInfo
) -> ReplayResult:
    """The result of a replay: ``outcomes`` by job key, in the order jobs were first seen."""
    jobs = {outcome.name: outcome.result for outcome in outcomes.values()}
    actions = [
        ActionResult(job=outcome.name, action="stop", rule=d.rule, at=d.at)
        for outcome in outcomes.values()
        for d in outcome.stops
    ]
    actions.sort(key=lambda a: (a.at, a.job, a.rule))
    names = {key: outcome.name for key, outcome in outcomes.items()}
    notifications = [
        NotificationResult(channel=r.channel, job=names.get(r.job_key, r.job_key), kind=r.kind, subject=r.subject)
        for r in outbox
    ]
    return ReplayResult(
        policy=policy,
        events=EventCounts(
            lines=tally.lines,
            processed=tally.processed,
            rejected=len(tally.rejected),
            failed=len(tally.failed),
            first_at=tally.first_at,
            last_at=tally.last_at,
        ),
        sweeps=SweepInfo(
            every_seconds=int(tally.sweep_every.total_seconds()) if tally.sweep_every else None,
            runs=tally.sweeps,
            budget_checks=tally.budget_checks,
        ),
        jobs=jobs,
        actions=actions,
        notifications=notifications,
        rejected_events=tally.rejected,
        failed_events=tally.failed,
        savings=_savings(actions, outcomes),
        facts=facts,
    )
