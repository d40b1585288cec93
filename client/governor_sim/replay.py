"""What would a policy have done to captured events? ``tuning-governor replay`` and its library API.

    tuning-governor replay EVENTS.jsonl --policy POLICY.yaml --out RESULT.json

The events file holds one EventBridge event per line, exactly as a rule's target receives it (the
shapes in ``events/``). Each line is checked, then delivered, in file order, to the real Lambda
handlers in-process (:func:`governor_sim.runner.deliver_event`) with:

* ``sagemaker``: :class:`EventSourcedSageMaker`, answering every SageMaker call the governor makes from
  the events read so far (a job's state is its latest event's detail, i.e. its Describe response);
* ``store``: the governor's table in memory (:class:`governor_sim.memory_store.MemoryStore`, the default),
  or with ``--store moto`` the DynamoDB adapter on a table on moto (:func:`governor_sim.offline.create_table`);
  both give the same result (tests/integration/replay/test_store_equivalence.py);
* ``clock``: the envelope time of the event being processed, so decisions are dated by the event that
  decided them;
* ``policy``: the given policy (its ``prices`` override the catalog); ``quotas`` None: Service Quotas
  are unknown in a replay, the policy's ``quotas`` are the limits;
* notifiers that record reports on channels ``sns`` and ``slack`` and send nothing.

Between the events, the scheduled sweep (:func:`tuning_governor.sweep.run_sweep`) runs with the same
services every ``--sweep-every`` of the events' time (default: template.yaml's ``SweepSchedule``,
5 minutes), its clock at its own time, as the deployed governor would run it.

Nothing leaves the machine. The result (:class:`governor_sim.replay_model.ReplayResult`) lists every
tuning job's summary and decisions, the stops issued, the reports, the unusable lines and the savings;
``docs/replay.md`` defines each figure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import re
import shutil
import sys
import tempfile
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO, Literal, Protocol, TextIO

import boto3
from moto import mock_aws

from governor_sim.capture import CaptureError, download, folder_lines, is_s3_uri
from governor_sim.memory_store import MemoryStore
from governor_sim.offline import STORE_KINDS, create_table, store_kind
from governor_sim.replay_forget import job_key_of, last_lines, logged_event, settled
from governor_sim.replay_model import (
    SAVINGS_METHOD,
    ActionResult,
    DecisionResult,
    EarlyStoppingResult,
    EventCounts,
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
from governor_sim.runner import deliver_event
from tuning_governor.adapters.checks import CHECK_KEY, PendingChecks
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.store import GovernorStore
from tuning_governor.domain.cost import MICRO
from tuning_governor.domain.reports import Report
from tuning_governor.domain.summary import summarise
from tuning_governor.errors import JobNotFound, RejectedEvent
from tuning_governor.models.events import (
    TRAINING_DETAIL_TYPE,
    TUNING_DETAIL_TYPE,
    TrainingJobStateChange,
    TuningJobStateChange,
)
from tuning_governor.models.records import JobSummary
from tuning_governor.models.sagemaker import TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import ObjectiveMetric, TrialSummary, TuningJob
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy, PolicyError, parse_policy
from tuning_governor.ports import StopResult
from tuning_governor.service import OBJECTIVE_HYPERPARAMETER, Services, parse_event, parsed_already
from tuning_governor.settings import Settings
from tuning_governor.sweep import run_budget_check, run_sweep

DEFAULT_REGION = "us-east-1"
#: template.yaml's ``SweepSchedule`` default (a test holds them equal): the sweep a replay runs unless told.
DEFAULT_SWEEP_SCHEDULE = "rate(5 minutes)"
# Deleting a job long after it ran says nothing about the run: such events never replace a known state.
DELETION_STATES = frozenset({"Deleting", "DeleteFailed"})
TERMINAL = TUNING_TERMINAL | TRAINING_TERMINAL
RANGE_KINDS = ("IntegerParameterRanges", "ContinuousParameterRanges", "CategoricalParameterRanges", "AutoParameters")
MAX_REASON = 300
StateChange = TuningJobStateChange | TrainingJobStateChange


class ReplayInputError(Exception):
    """The events file cannot be read or the policy is invalid. The message is one line."""


# -- SageMaker, answered from the events -------------------------------------------------------------------
@dataclass
class _Latest[J]:
    job: J
    status: str
    modified: datetime


@dataclass(frozen=True)
class StopCall:
    """A StopHyperParameterTuningJob call the replay made that SageMaker would have accepted."""

    job: str
    at: datetime


def _remember[J](table: dict[str, _Latest[J]], key: str, job: J, status: str, modified: datetime) -> None:
    known = table.get(key)
    if known is not None and (
        status in DELETION_STATES
        or modified < known.modified
        or (known.status in TERMINAL and status not in TERMINAL)  # as the store: never back from terminal
    ):
        return
    table[key] = _Latest(job, status, modified)


def _range_names(detail: Mapping[str, Any]) -> set[str]:
    """Names of the tuned hyperparameters: every ParameterRanges entry, of every training definition."""
    sources: list[Any] = []
    config = detail.get("HyperParameterTuningJobConfig")
    if isinstance(config, dict):
        sources.append(config.get("ParameterRanges"))
    definitions = detail.get("TrainingJobDefinitions")
    single = detail.get("TrainingJobDefinition")
    for definition in [*(definitions if isinstance(definitions, list) else []), single]:
        if isinstance(definition, dict):
            sources.append(definition.get("HyperParameterRanges"))
    names: set[str] = set()
    for ranges in sources:
        if not isinstance(ranges, dict):
            continue
        for kind in RANGE_KINDS:
            items = ranges.get(kind)
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and isinstance(item.get("Name"), str):
                    names.add(item["Name"])
    return names


class EventSourcedSageMaker(SageMakerGateway):
    """``SageMakerGateway`` answered from replayed events instead of the SageMaker API.

    Call :meth:`observe` with each event before it is delivered. Callers may rely on:

    * a job's state is the detail of its *latest* event read so far: the one with the greatest
      ``LastModifiedTime`` (the envelope time when absent); on a tie the later line wins. As in the
      governor's table, a terminal status (Completed, Stopped, Failed) is never replaced by a
      non-terminal one, and events with status Deleting or DeleteFailed never replace a known state.
      Describe responses carry no Tags (as in SageMaker); ``list_tags`` answers from the latest
      event's Tags;
    * ``list_trials`` lists the training jobs whose ``TuningJobArn`` names the tuning job, sorted by
      name: TunedHyperParameters are the trial's hyperparameters named in the tuning job's
      ParameterRanges (when no range is known: those not in StaticHyperParameters and not starting with
      ``_``), the objective value is the FinalMetricDataList entry named like the objective
      (``_tuning_objective_metric``, else the tuning job's objective);
    * ``stop_tuning_job`` makes no call: it returns ``"stop-requested"`` and appends to :attr:`stops`
      for a job whose latest status is running, ``"already-stopping"`` if the replay stopped it before
      or its status is Stopping, ``"already-ended"`` if terminal, ``"not-found"`` if never seen. The
      job's later events are still processed as they happened: a replay cannot know what SageMaker
      would have done after the stop;
    * unknown names raise ``JobNotFound``, as the real gateway does.
    """

    def __init__(self, clock: Callable[[], datetime]) -> None:
        # No SageMaker client on purpose: every call below is answered from the events observed.
        self._clock = clock
        self._tuning: dict[str, _Latest[TuningJob]] = {}
        self._training: dict[str, _Latest[TrainingJob]] = {}
        self._ranges: dict[str, set[str]] = {}
        self._trials: dict[str, dict[str, None]] = {}
        self._jobs_seen: dict[str, None] = {}
        self._stopped: set[str] = set()
        self.stops: list[StopCall] = []

    def observe(self, event: StateChange, detail: Mapping[str, Any]) -> None:
        """Take one event into the state (``detail`` is the event's raw ``detail`` object)."""
        if isinstance(event, TuningJobStateChange):
            job = event.detail
            self._jobs_seen.setdefault(job.key)
            self._ranges.setdefault(job.key, set()).update(_range_names(detail))
            _remember(self._tuning, job.key, job, job.status, job.last_modified_time or event.time)
            return
        trial = event.detail
        key = trial.name.lower()
        _remember(self._training, key, trial, trial.status, trial.last_modified_time or event.time)
        if trial.tuning_job_arn:
            tuning_key = trial.tuning_job_arn.rsplit("/", 1)[-1].lower()
            self._jobs_seen.setdefault(tuning_key)
            self._trials.setdefault(tuning_key, {})[key] = None

    # -- what the replay reads back ------------------------------------------------------------------------
    def job_keys(self) -> list[str]:
        """Keys (lower-case names) of every tuning job seen, by its own events or its trials', first seen first."""
        return list(self._jobs_seen)

    def tuning_job(self, key: str) -> TuningJob | None:
        """The latest known state of a tuning job, with its Tags; None if only its trials were seen."""
        known = self._tuning.get(key)
        return known.job if known else None

    def job_name(self, key: str) -> str:
        """The tuning job's name as SageMaker spells it (the lower-case key if only its trials were seen)."""
        known = self._tuning.get(key)
        return known.job.name if known else key

    def trials_of(self, key: str) -> list[TrainingJob]:
        """The latest known state of each trial of tuning job ``key``, first seen first."""
        return [self._training[name].job for name in self._trials.get(key, {})]

    def forget(self, key: str) -> None:
        """Drop tuning job ``key`` and its trials (a settled job, see ``governor_sim.replay_forget``). It
        stays in :meth:`job_keys`, so the result keeps the order jobs were first seen in."""
        for name in self._trials.pop(key, {}):
            self._training.pop(name, None)
        self._tuning.pop(key, None)
        self._ranges.pop(key, None)
        self._stopped.discard(key)

    # -- SageMakerGateway ----------------------------------------------------------------------------------
    def describe_training_job(self, name: str) -> TrainingJob:
        known = self._training.get(name.lower())
        if known is None:
            raise JobNotFound(f"{name}: no event of this training job in the replayed history")
        return known.job.model_copy(update={"tags": {}})

    def describe_tuning_job(self, name: str) -> TuningJob:
        known = self._tuning.get(name.lower())
        if known is None:
            raise JobNotFound(f"{name}: no event of this tuning job in the replayed history")
        return known.job.model_copy(update={"tags": {}})

    def list_trials(self, tuning_job_name: str) -> list[TrialSummary]:
        key = tuning_job_name.lower()
        tuning = self.tuning_job(key)
        trials = sorted(self.trials_of(key), key=lambda t: t.name)
        return [self._summary(trial, tuning, key) for trial in trials]

    def _summary(self, trial: TrainingJob, tuning: TuningJob | None, key: str) -> TrialSummary:
        ranges = self._ranges.get(key, set())
        if ranges:
            tuned = {k: v for k, v in trial.hyper_parameters.items() if k in ranges}
        else:
            static = {k for d in (tuning.definitions() if tuning else []) for k in d.static_hyper_parameters}
            tuned = {k: v for k, v in trial.hyper_parameters.items() if k not in static and not k.startswith("_")}
        objective = tuning.objective if tuning else None
        name = trial.hyper_parameters.get(OBJECTIVE_HYPERPARAMETER, "").strip('"') or (
            objective.metric_name if objective else None
        )
        value = trial.metric(name) if name else None
        metric = None
        if name is not None and value is not None:
            metric = ObjectiveMetric(type=objective.type if objective else None, metric_name=name, value=value)
        if metric is not None:
            objective_status = "Succeeded"
        elif trial.status in TUNING_TERMINAL:
            objective_status = "Failed"
        else:
            objective_status = "Pending"
        return TrialSummary(
            training_job_name=trial.name,
            training_job_arn=trial.arn,
            tuning_job_name=tuning.name if tuning else key,
            creation_time=trial.creation_time,
            training_start_time=trial.training_start_time,
            training_end_time=trial.training_end_time,
            training_job_status=trial.status,
            tuned_hyper_parameters=tuned,
            failure_reason=trial.failure_reason,
            final_hyper_parameter_tuning_job_objective_metric=metric,
            objective_status=objective_status,
        )

    def list_tuning_jobs(self, status: str) -> list[dict[str, Any]]:
        return [
            {
                "HyperParameterTuningJobName": known.job.name,
                "HyperParameterTuningJobArn": known.job.arn,
                "HyperParameterTuningJobStatus": known.job.status,
                "CreationTime": known.job.creation_time,
                "LastModifiedTime": known.job.last_modified_time,
            }
            for known in self._tuning.values()
            if known.job.status == status
        ]

    def list_warm_pools(self, modified_after: datetime) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for known in self._training.values():
            pool = known.job.warm_pool_status
            modified = known.job.last_modified_time
            if modified is not None and modified <= modified_after:
                continue  # as ListTrainingJobs' LastModifiedTimeAfter
            if pool is not None and pool.status == "Available":
                out.append(
                    {
                        "TrainingJobName": known.job.name,
                        "TrainingJobArn": known.job.arn,
                        "TrainingJobStatus": known.job.status,
                        "CreationTime": known.job.creation_time,
                        "WarmPoolStatus": {"Status": pool.status},
                    }
                )
        return out

    def stop_tuning_job(self, name: str) -> StopResult:
        key = name.lower()
        known = self._tuning.get(key)
        if known is None:
            return "not-found"
        if key in self._stopped or known.job.status == "Stopping":
            return "already-stopping"
        if known.job.status in TUNING_TERMINAL:
            return "already-ended"
        self._stopped.add(key)
        self.stops.append(StopCall(job=known.job.name, at=self._clock()))
        return "stop-requested"

    def list_tags(self, arn: str) -> dict[str, str]:
        wanted = arn.lower()
        for table in (self._tuning, self._training):
            for known in table.values():
                if (known.job.arn or "").lower() == wanted:
                    return dict(known.job.tags)
        raise JobNotFound(f"{arn}: no event of this resource in the replayed history")


# -- notifications, recorded -------------------------------------------------------------------------------
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


# -- reading events ----------------------------------------------------------------------------------------
def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 3] + "..."


def parse_line(text: str) -> tuple[dict[str, Any], StateChange]:
    """One line as an EventBridge event of SageMaker's, or ``RejectedEvent`` saying why not.

    The checks, in order: valid JSON; an object; ``source`` aws.sagemaker; ``detail-type`` the tuning
    or training job state change; the governor's own event models (the handlers' validation).
    """
    try:
        event = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RejectedEvent(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise RejectedEvent(f"not valid JSON: {type(exc).__name__}") from None
    if not isinstance(event, dict):
        raise RejectedEvent(f"{_kind(event)}, not an event object")
    event = logged_event(event)  # a line of the simulator's event log: replay its event
    source, detail_type = event.get("source"), event.get("detail-type")
    if source != "aws.sagemaker":
        raise RejectedEvent(_short(f"source {json.dumps(source)} is not aws.sagemaker"))
    model: type[TuningJobStateChange] | type[TrainingJobStateChange]
    if detail_type == TUNING_DETAIL_TYPE:
        model = TuningJobStateChange
    elif detail_type == TRAINING_DETAIL_TYPE:
        model = TrainingJobStateChange
    else:
        raise RejectedEvent(
            _short(f"detail-type {json.dumps(detail_type)} is not a SageMaker tuning or training job state change")
        )
    try:
        parsed: StateChange = parse_event(event, model)
    except RejectedEvent as exc:
        raise RejectedEvent(_short(exc.reason)) from None
    return event, parsed


# -- the sweep's schedule ----------------------------------------------------------------------------------
_RATE = re.compile(r"rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)")
_SHORT = re.compile(r"(\d+)\s*(s|m|min|h)?")
_UNITS = {"s": 1, "m": 60, "min": 60, "minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}
_UNITS |= {"day": 86400, "days": 86400}


def parse_sweep_every(text: str) -> timedelta | None:
    """The sweep interval ``text`` names; None (no sweep) for ``0`` or ``off``.

    Accepted: a whole number of minutes (``5``), seconds, minutes or hours (``90s``, ``15m``, ``1h``),
    or an EventBridge rate expression as template.yaml's ``SweepSchedule`` takes it (``rate(5 minutes)``).
    Anything else (cron expressions included: their times are not an interval) raises ``ReplayInputError``.
    """
    value = " ".join(text.strip().lower().split())
    if value in {"0", "off", "none"}:
        return None
    match = _RATE.fullmatch(value) or _SHORT.fullmatch(value)
    if match is None:
        raise ReplayInputError(
            f"sweep interval {text!r} is not one of: 0 (no sweep), minutes (5), 90s, 15m, 1h, rate(5 minutes)"
        )
    seconds = int(match.group(1)) * _UNITS[match.group(2) or "m"]
    if seconds <= 0:
        raise ReplayInputError(f"sweep interval {text!r} must be longer than 0 (or 0 alone: no sweep)")
    return timedelta(seconds=seconds)


_default = parse_sweep_every(DEFAULT_SWEEP_SCHEDULE)
assert _default is not None
DEFAULT_SWEEP_EVERY: timedelta = _default
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _first_sweep_from(at: datetime, every: timedelta) -> datetime:
    """The first sweep time at or after ``at``: sweeps fall on multiples of ``every`` since 1970-01-01 UTC."""
    periods = -((_EPOCH - at) // every)  # ceiling division
    return _EPOCH + periods * every


# -- running -----------------------------------------------------------------------------------------------
class ReplayProbe(Protocol):
    """Watches a replay as it runs, reading the governor's state and changing nothing (e.g.
    ``governor_sim.replay_timeline.Timeline``, which ``--html`` draws from).

    ``attach`` is called once, before the first line; ``step`` after each event the handlers processed,
    each sweep run and each budget check, with the time the governor judged at and whether a report was
    recorded by it; ``finish`` with the result, while the replay's table can still be read.
    """

    def attach(self, services: Services, sagemaker: EventSourcedSageMaker) -> None: ...

    def step(self, at: datetime, *, reported: bool) -> None: ...

    def finish(self, result: ReplayResult) -> None: ...


@dataclass
class _Clock:
    at: datetime = field(default_factory=lambda: datetime.fromtimestamp(0, tz=UTC))

    def __call__(self) -> datetime:
        return self.at


@contextlib.contextmanager
def quiet_handlers() -> Iterator[None]:
    """Silence the handlers' Powertools log lines and metric warnings while the replay runs.

    EMF metric lines are printed to stdout; the replay swallows them per delivery.
    """
    previous = logger.log_level
    logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="No application metrics to publish")
            yield
    finally:
        logger.setLevel(previous)


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
class _JobOutcome:
    """What the result says of one tuning job: its name, its result, its accepted stops and, if it was
    stopped, the savings of its first stop."""

    name: str
    result: JobResult
    stops: list[DecisionResult]
    saved: Decimal | None


class _Replay:
    """One replay: the services, the event-sourced SageMaker and what was recorded.

    With ``last_lines`` (:func:`governor_sim.replay_forget.last_lines` of the same lines; given by
    :func:`replay_lines` with the in-memory store and no probe only), a tuning job is forgotten once its last line is processed and it has settled: its outcome is
    taken then, as :meth:`result` would take it at the end, and its items and SageMaker state dropped.
    """

    def __init__(
        self,
        services: Services,
        sagemaker: EventSourcedSageMaker,
        clock: _Clock,
        policy: Policy,
        sweep_every: timedelta | None = None,
        *,
        probe: ReplayProbe | None = None,
        last_lines: Mapping[str, int] | None = None,
    ) -> None:
        self.services = services
        self.probe = probe
        self.sagemaker = sagemaker
        self.clock = clock
        self.policy = policy
        self.sweep_every = sweep_every
        self.next_sweep: datetime | None = None
        self.sweeps = 0
        self.budget_checks = 0
        self.checks = PendingChecks()
        services.checks = self.checks
        self._idle = False  # the last sweep run found nothing to do, and no event has come since
        self.outbox: list[Recorded] = []
        services.notifiers = [RecordingNotifier("sns", self.outbox), RecordingNotifier("slack", self.outbox)]
        self.rejected: list[LineProblem] = []
        self.failed: list[LineProblem] = []
        self.lines = 0
        self.processed = 0
        self.first_at: datetime | None = None
        self.last_at: datetime | None = None
        self._last_lines: Mapping[str, int] = last_lines or {}
        self._ended: set[str] = set()  # past their last line, not settled yet
        self._forgotten: dict[str, _JobOutcome] = {}

    def feed(self, number: int, raw: bytes | str) -> None:
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            self.lines += 1
            self.rejected.append(LineProblem(line=number, reason="not UTF-8 text"))
            return
        if not text.strip():
            return
        self.lines += 1
        try:
            event, parsed = parse_line(text)
        except RejectedEvent as exc:
            self.rejected.append(LineProblem(line=number, reason=exc.reason))
            return
        key = job_key_of(event)
        if key is not None and key in self._forgotten:
            raise ReplayInputError(
                f"line {number}: tuning job {key} appears after what the first reading found to be its last"
                " line: the events changed while they were replayed"
            )
        self._sweep_before(parsed.time, number)
        self.sagemaker.observe(parsed, event["detail"])
        self._idle = False
        self.clock.at = parsed.time
        reports = len(self.outbox)
        # The handler's own parse_event of this event object returns what parse_line validated.
        with contextlib.redirect_stdout(io.StringIO()), parsed_already(event, type(parsed), parsed):
            outcome = deliver_event(event, self.services).outcome
        self._step(parsed.time, reports)
        self.processed += 1
        self.first_at = parsed.time if self.first_at is None else min(self.first_at, parsed.time)
        self.last_at = parsed.time if self.last_at is None else max(self.last_at, parsed.time)
        if outcome.get("outcome") == "error":
            reason = f"{outcome.get('error')}: {outcome.get('reason')}"
            self.failed.append(LineProblem(line=number, reason=_short(reason)))
        if key is not None and self._last_lines.get(key) == number:
            self._ended.add(key)
            self._forget_settled()

    # -- forgetting settled jobs --------------------------------------------------------------------------
    def _forget_settled(self) -> None:
        """Take the outcome of every ended job that has settled, then drop its state (see replay_forget)."""
        store = self.services.store
        assert isinstance(store, MemoryStore)  # replay_lines passes last_lines with the in-memory store only
        for key in sorted(self._ended):
            if settled(key, self.sagemaker, store, self.checks):
                self._forgotten[key] = self._outcome(key)
                store.forget_job(key)
                self.sagemaker.forget(key)
                self._ended.discard(key)

    # -- the scheduled sweep, on the event timeline -------------------------------------------------------
    def _sweep_before(self, at: datetime, number: int) -> None:
        """Run every sweep due strictly before ``at`` (the time of the line about to be processed).

        Sweeps fall on multiples of the interval (UTC), from the first line's time on; a sweep at S runs
        after the lines dated S or earlier that come before the first line dated after S. None runs after
        the last line: what happened then is not in the history.
        """
        every = self.sweep_every
        if every is not None and self.next_sweep is None:
            self.next_sweep = _first_sweep_from(at, every)
        while True:
            check = self.checks.next_due()
            sweep = self.next_sweep if every is not None else None
            due = [t for t in (check, sweep) if t is not None and t < at]
            if not due:
                return
            if check is not None and check == min(due) and (sweep is None or check < sweep):
                self._budget_checks(check, number)
            else:
                assert sweep is not None and every is not None
                self._sweep(sweep, number)
                self.next_sweep = sweep + every

    def _budget_checks(self, at: datetime, number: int) -> None:
        """The one-time checks due at ``at`` (EventBridge Scheduler invoking BudgetCheckFunction)."""
        for when, key in self.checks.due(at):
            self.budget_checks += 1
            self.clock.at = when
            reports = len(self.outbox)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    run_budget_check({CHECK_KEY: {"job": key}}, self.services)
            except Exception as exc:  # as a failed invocation: the next sweep judges the job anyway
                self.failed.append(
                    LineProblem(
                        line=number, reason=_short(f"budget check at {_when(when)}: {type(exc).__name__}: {exc}")
                    )
                )
            finally:
                metrics.clear_metrics()
            self._idle = False
            self._step(when, reports)
        if self._ended:
            self._forget_settled()

    def _sweep(self, at: datetime, number: int) -> None:
        self.sweeps += 1
        if self._idle:
            return  # nothing has changed since a sweep that found nothing running: this one would do the same
        self.clock.at = at
        reports = len(self.outbox)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                report = run_sweep(self.services)
        except Exception as exc:  # as a failed scheduled run: the next sweep is the retry
            self.failed.append(
                LineProblem(line=number, reason=_short(f"sweep at {_when(at)}: {type(exc).__name__}: {exc}"))
            )
            return
        finally:
            metrics.clear_metrics()  # the sweep handler would flush them; a replay prints none
            self._step(at, reports)
        self._idle = not report["errors"] and self._nothing_running()
        if self._ended:
            self._forget_settled()

    def _step(self, at: datetime, reports_before: int) -> None:
        if self.probe is not None:
            self.probe.step(at, reported=len(self.outbox) > reports_before)

    def _nothing_running(self) -> bool:
        sagemaker, store = self.sagemaker, self.services.store
        return (
            not any(sagemaker.list_tuning_jobs(status) for status in ("InProgress", "Stopping"))
            and not sagemaker.list_warm_pools(modified_after=datetime.min.replace(tzinfo=UTC))
            and not any(store.jobs_with_status(status) for status in ("InProgress", "Stopping"))
            and not store.warm_pool_names()
        )

    def _summary(self, key: str, meta: Mapping[str, Any]) -> tuple[JobSummary, Literal["final", "provisional"]]:
        store = self.services.store
        final = store.get_summary(key)
        if final is not None:
            return final, "final"
        job = self.sagemaker.tuning_job(key) or TuningJob.model_validate(
            {"HyperParameterTuningJobName": key, "HyperParameterTuningJobStatus": "Unknown"}
        )
        records = store.trial_records(key)
        region = meta.get("region") or (records[0].region if records else self.services.settings.region)
        provisional = summarise(
            job,
            self.sagemaker.list_trials(job.name),
            records,
            region=str(region),
            team_tag=self.policy.team_tag,
            owner_tag=self.services.settings.owner_tag,
            now=self.last_at or self.clock.at,
            stop_requested_at=_time(meta.get("stop_requested_at")),
            stopping_at=_time(meta.get("stopping_at")),
        )
        return provisional, "provisional"

    def _outcome(self, key: str) -> _JobOutcome:
        store = self.services.store
        meta = store.get_job(key) or {}
        summary, kind = self._summary(key, meta)
        items = store.decisions(key)
        decisions = sorted((_decision(i) for i in items), key=lambda d: (d.at, d.rule, d.verdict))
        # An accepted stop: the guard stopped the job and SageMaker took the request (not a second
        # stop of a job already stopping, nor one of a job that had ended).
        stops = [_decision(i) for i in items if _accepted_stop(i)]
        first = min(stops, key=lambda d: (d.at, d.rule), default=None)
        saved = stopped_job_savings(store.trial_records(key), first.at) if first is not None else None
        return _JobOutcome(
            name=self.sagemaker.job_name(key),
            result=_job_result(summary, kind, decisions, first.at if first is not None else None),
            stops=stops,
            saved=saved,
        )

    def result(self, policy_source: str) -> ReplayResult:
        outcomes = {key: self._forgotten.get(key) or self._outcome(key) for key in self.sagemaker.job_keys()}
        jobs = {outcome.name: outcome.result for outcome in outcomes.values()}
        actions = [
            ActionResult(job=outcome.name, action="stop", rule=d.rule, at=d.at)
            for outcome in outcomes.values()
            for d in outcome.stops
        ]
        actions.sort(key=lambda a: (a.at, a.job, a.rule))
        saved = {outcome.name: outcome.saved for outcome in outcomes.values()}
        by_job: dict[str, float | None] = {}
        total = Decimal(0)
        for action in actions:
            if action.job in by_job:
                continue
            by_job[action.job] = _money(saved[action.job])
            total += saved[action.job] or Decimal(0)
        names = {key: outcome.name for key, outcome in outcomes.items()}
        notifications = [
            NotificationResult(channel=r.channel, job=names.get(r.job_key, r.job_key), kind=r.kind, subject=r.subject)
            for r in self.outbox
        ]
        return ReplayResult(
            policy=PolicyInfo(source=policy_source, mode=self.policy.mode),
            events=EventCounts(
                lines=self.lines,
                processed=self.processed,
                rejected=len(self.rejected),
                failed=len(self.failed),
                first_at=self.first_at,
                last_at=self.last_at,
            ),
            sweeps=SweepInfo(
                every_seconds=int(self.sweep_every.total_seconds()) if self.sweep_every else None,
                runs=self.sweeps,
                budget_checks=self.budget_checks,
            ),
            jobs=jobs,
            actions=actions,
            notifications=notifications,
            rejected_events=self.rejected,
            failed_events=self.failed,
            savings=Savings(
                usd=float(total.quantize(MICRO)),
                by_job=by_job,
                complete=all(v is not None for v in by_job.values()),
                method=SAVINGS_METHOD,
            ),
        )


def _accepted_stop(item: Mapping[str, Any]) -> bool:
    return item.get("action") == "stopped" and item.get("action_detail") == "stop-requested"


def replay_lines(
    lines: Iterable[bytes | str],
    policy: Policy,
    *,
    policy_source: str = "<policy>",
    region: str = DEFAULT_REGION,
    sweep_every: timedelta | None = DEFAULT_SWEEP_EVERY,
    probe: ReplayProbe | None = None,
    store: str | None = None,
    reread: Callable[[], Iterable[bytes | str]] | None = None,
) -> ReplayResult:
    """Replay events (one EventBridge event per item, e.g. the lines of a JSONL file) under ``policy``.

    Lines are numbered from 1; blank lines are skipped (not counted). A line that is not a valid event
    is reported in ``rejected_events`` and the run goes on. The sweep (``tuning_governor.sweep.run_sweep``)
    runs every ``sweep_every`` of the events' time, with the clock at its own time, interleaved with the
    events (see ``_Replay._sweep_before``); None runs none. Runs inside its own ``moto.mock_aws()``
    (nesting inside another is fine: its table has a unique name and is deleted afterwards); ``region``
    is the governor's own region (the events' regions price their trials). ``store``: ``memory`` (the
    in-memory table) or ``moto`` (the DynamoDB adapter on moto); default ``$TUNING_GOVERNOR_STORE``, else
    ``memory``; both give the same result. Quiet: the handlers' logs and metrics are suppressed.
    Deterministic: the same lines and policy give the same result.
    A ``probe`` watches the run (see ``ReplayProbe``); it does not change the result.
    ``reread``: a second reading of the same lines (a file opened again). Given it, with the in-memory
    store and no probe, the replay first finds each tuning job's last line and forgets each job once
    nothing left can change it (``governor_sim.replay_forget``): the same result, in memory that does
    not grow with the number of jobs that have ended.
    """
    clock = _Clock()
    sagemaker = EventSourcedSageMaker(clock)
    table = f"tuning-governor-replay-{uuid.uuid4().hex[:12]}"
    kind = store_kind(store)
    with quiet_handlers(), mock_aws():
        dynamodb = None
        governor_store: GovernorStore | MemoryStore = MemoryStore()
        if kind == "moto":
            dynamodb = boto3.client("dynamodb", region_name=region)
            create_table(dynamodb, table)
            governor_store = GovernorStore(dynamodb, table)
        try:
            settings = Settings.model_validate(
                {"TABLE_NAME": table, "AWS_REGION": region, "POLICY_PARAMETER": "", "POLICY_FILE": ""}
            )
            services = Services(
                settings=settings,
                sagemaker=sagemaker,
                store=governor_store,
                clock=clock,
                policy=lambda: policy,
                quotas=None,
            )
            if probe is not None:
                probe.attach(services, sagemaker)
            ends = last_lines(reread()) if reread is not None and probe is None and kind == "memory" else None
            run = _Replay(services, sagemaker, clock, policy, sweep_every, probe=probe, last_lines=ends)
            for number, raw in enumerate(lines, start=1):
                run.feed(number, raw)
            result = run.result(policy_source)
            if probe is not None:
                probe.finish(result)
            return result
        finally:
            if dynamodb is not None:
                dynamodb.delete_table(TableName=table)


def replay_file(
    path: str | Path,
    policy: Policy,
    *,
    policy_source: str = "<policy>",
    sweep_every: timedelta | None = DEFAULT_SWEEP_EVERY,
    probe: ReplayProbe | None = None,
    store: str | None = None,
) -> ReplayResult:
    """``replay_lines`` over a JSONL file (``-`` = standard input). ``ReplayInputError`` if it cannot be read.

    The file is read twice (``reread``: the replay forgets each job once it has settled). Standard input
    is first copied to a temporary file, removed afterwards, so that it can be read twice too.
    """
    source = str(path)

    def unreadable(exc: OSError) -> ReplayInputError:
        return ReplayInputError(f"cannot read events file {source}: {exc.strerror or type(exc).__name__}")

    def read(handle: BinaryIO) -> Iterator[bytes]:
        try:
            yield from handle
        except OSError as exc:
            raise unreadable(exc) from None

    if source == "-":
        with tempfile.TemporaryDirectory(prefix="tuning-governor-stdin-") as folder:
            copy = Path(folder) / "events.jsonl"
            try:
                with copy.open("wb") as spool:
                    shutil.copyfileobj(sys.stdin.buffer, spool)
            except OSError as exc:
                raise ReplayInputError(
                    f"cannot copy standard input to a temporary file: {exc.strerror or type(exc).__name__}"
                ) from None
            return replay_file(
                copy, policy, policy_source=policy_source, sweep_every=sweep_every, probe=probe, store=store
            )

    def reread() -> Iterator[bytes]:
        try:
            with open(path, "rb") as again:
                yield from read(again)
        except OSError as exc:
            raise unreadable(exc) from None

    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; only opening errors are caught here
    except OSError as exc:
        raise unreadable(exc) from None
    with handle:
        return replay_lines(
            read(handle),
            policy,
            policy_source=policy_source,
            sweep_every=sweep_every,
            probe=probe,
            store=store,
            reread=reread,
        )


def replay_events(
    source: str | Path,
    policy: Policy,
    *,
    policy_source: str = "<policy>",
    sweep_every: timedelta | None = DEFAULT_SWEEP_EVERY,
    s3: Any = None,
    probe: ReplayProbe | None = None,
    store: str | None = None,
) -> ReplayResult:
    """``replay_lines`` over a JSONL file (``-`` = stdin), a capture folder or an ``s3://bucket/prefix``.

    A folder or prefix is read as the template's capture path writes it (``governor_sim.capture``:
    objects in key order, gzip or not). An ``s3://`` prefix is downloaded first, with ``s3`` or a boto3
    S3 client of the caller's credentials, to a temporary folder removed afterwards. ``ReplayInputError``
    with one line when the source cannot be read.
    """
    text = str(source)
    try:
        if is_s3_uri(text):
            with tempfile.TemporaryDirectory(prefix="tuning-governor-capture-") as folder:
                download(text, Path(folder), s3 if s3 is not None else boto3.client("s3"))
                return replay_lines(
                    folder_lines(Path(folder)),
                    policy,
                    policy_source=policy_source,
                    sweep_every=sweep_every,
                    probe=probe,
                    store=store,
                    reread=lambda: folder_lines(Path(folder)),
                )
        if text != "-" and Path(text).is_dir():
            return replay_lines(
                folder_lines(Path(text)),
                policy,
                policy_source=policy_source,
                sweep_every=sweep_every,
                probe=probe,
                store=store,
                reread=lambda: folder_lines(Path(text)),
            )
    except CaptureError as exc:
        raise ReplayInputError(str(exc)) from None
    return replay_file(source, policy, policy_source=policy_source, sweep_every=sweep_every, probe=probe, store=store)


def load_policy(path: str | Path) -> Policy:
    """Read and validate a policy file; ``ReplayInputError`` with a one-line message if it cannot be used."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReplayInputError(f"cannot read policy file {path}: {exc.strerror or type(exc).__name__}") from None
    except UnicodeDecodeError:
        raise ReplayInputError(f"cannot read policy file {path}: not UTF-8 text") from None
    try:
        return parse_policy(text, str(path))
    except PolicyError as exc:
        raise ReplayInputError(policy_error_line(exc)) from None


def policy_error_line(exc: PolicyError) -> str:
    """The first line of a ``PolicyError`` message, followed by its first problem, on one line."""
    line = str(exc).splitlines()[0] if str(exc) else "policy is invalid"
    if exc.problems:
        more = len(exc.problems) - 1
        line = f"{line.rstrip(':')}: {exc.problems[0]}" + (f" (and {more} more)" if more else "")
    return " ".join(line.split())


# -- the human summary -------------------------------------------------------------------------------------
def _usd(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if value else "-"


def interval_text(seconds: int) -> str:
    """A sweep interval as people read it: ``5 min``, ``90 s``."""
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def render_summary(result: ReplayResult, *, events_source: str, out: str | None = None) -> str:
    """What a person reads after a replay: events, jobs, cost, stops by rule, savings, where the result went."""
    events, jobs = result.events, result.jobs
    finished = sum(1 for job in jobs.values() if job.summary == "final")
    spent = sum(job.cost_usd for job in jobs.values() if job.cost_usd is not None)
    unpriced = sum(1 for job in jobs.values() if job.cost_usd is None)
    span = f", {_when(events.first_at)} .. {_when(events.last_at)}" if events.first_at else ""
    lines = [
        f"Replay of {events_source} under {result.policy.source} (mode {result.policy.mode})",
        f"Events: {events.lines} read, {events.processed} processed, {events.rejected} rejected,"
        f" {events.failed} failed{span}",
        f"Tuning jobs: {len(jobs)} ({finished} finished, {len(jobs) - finished} unfinished when the history ends)",
        f"Cost in the history: ${spent:,.2f}" + (f" (+ {unpriced} job(s) not fully priced)" if unpriced else ""),
    ]
    if result.sweeps.every_seconds:
        interval = interval_text(result.sweeps.every_seconds)
        lines.append(f"Sweeps: {result.sweeps.runs} (every {interval}, on the events' timeline)")
    else:
        lines.append("Sweeps: none (--sweep-every 0)")
    verdicts = Counter(d.action for job in jobs.values() for d in job.decisions)
    if verdicts:
        lines.append("Decisions: " + ", ".join(f"{action} {n}" for action, n in sorted(verdicts.items())))
    by_rule = Counter(action.rule for action in result.actions)
    if by_rule:
        lines.append(
            f"Stops: {len(result.actions)} (" + ", ".join(f"{r} {n}" for r, n in sorted(by_rule.items())) + ")"
        )
    elif result.policy.mode == "monitor" and verdicts.get("would-stop"):
        lines.append("Stops: 0 (monitor mode stops nothing; replay with --mode enforce to see what stops would save)")
    else:
        lines.append("Stops: 0")
    for action in result.actions:
        saved = result.savings.by_job.get(action.job)
        lines.append(f"  {_when(action.at)}  stop {action.job} ({action.rule}), would have saved {_usd(saved)}")
    lines.append(
        f"Would have saved: ${result.savings.usd:,.2f}"
        + ("" if result.savings.complete else " (stopped jobs with unpriced trials not included)")
    )
    channels = Counter(n.channel for n in result.notifications)
    lines.append(
        f"Notifications (recorded, not sent): {len(result.notifications)}"
        + (" (" + ", ".join(f"{c} {n}" for c, n in sorted(channels.items())) + ")" if channels else "")
    )
    if result.rejected_events:
        numbers = [str(p.line) for p in result.rejected_events[:10]]
        more = "" if len(result.rejected_events) <= 10 else f" and {len(result.rejected_events) - 10} more"
        lines.append(f"Rejected lines: {', '.join(numbers)}{more} (reasons in the result)")
    if result.failed_events:
        lines.append(
            f"Failed events (handler raised): lines {', '.join(str(p.line) for p in result.failed_events[:10])}"
        )
    if out:
        lines.append(f"Result: {'standard output' if out == '-' else out}")
    return "\n".join(lines) + "\n"


# -- the command -------------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``replay`` subcommand's arguments."""
    parser.add_argument(
        "events",
        metavar="EVENTS",
        help=(
            "captured EventBridge events: a JSONL file (- = stdin), a folder of capture objects or an"
            " s3://bucket/prefix as the template's CaptureEvents path writes them (gzip too)"
        ),
    )
    parser.add_argument(
        "--policy", required=True, metavar="POLICY.yaml", help="the governance policy to replay under (YAML or JSON)"
    )
    parser.add_argument(
        "--out",
        metavar="RESULT.json",
        help="write the result as JSON here (- = stdout; the summary then goes to stderr)",
    )
    parser.add_argument(
        "--mode",
        choices=("enforce", "monitor"),
        help="override the policy's mode, e.g. to see what a monitor-mode policy would save if it enforced",
    )
    parser.add_argument(
        "--sweep-every",
        type=_sweep_argument,
        default=DEFAULT_SWEEP_EVERY,
        metavar="INTERVAL",
        help=(
            f"run the scheduled sweep on the event timeline this often: 5 (minutes), 90s, 15m, 1h or"
            f" rate(5 minutes); 0 = no sweep (default: {DEFAULT_SWEEP_SCHEDULE}, as template.yaml deploys it)"
        ),
    )
    parser.add_argument(
        "--html",
        metavar="DIR",
        help=(
            "also write the what-if as a self-contained HTML page, DIR/index.html, with its PNGs: spend by team"
            " with the monthly budgets, each stop, the savings and the costliest jobs' plots (needs matplotlib)"
        ),
    )
    parser.add_argument(
        "--html-jobs",
        type=_job_count,
        default=10,
        metavar="N",
        help="with --html: draw the N costliest jobs' plots (default 10; 0 = none)",
    )
    parser.add_argument(
        "--store",
        choices=STORE_KINDS,
        default=None,
        help=(
            "where the governor's table lives during the replay: memory (fast) or moto (the DynamoDB adapter on"
            " moto's DynamoDB, the full AWS path; slow on long histories); the result is the same"
            " (default: $TUNING_GOVERNOR_STORE, else memory)"
        ),
    )


def _job_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


def _sweep_argument(text: str) -> timedelta | None:
    try:
        return parse_sweep_every(text)
    except ReplayInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run_command(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``replay`` with parsed arguments. 0 on success; 2 with one line on stderr when an input is unusable."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        policy = load_policy(args.policy)
        if args.mode:
            policy = policy.model_copy(update={"mode": args.mode})
        try:
            store = store_kind(getattr(args, "store", None))
        except ValueError as exc:  # a bad $TUNING_GOVERNOR_STORE
            raise ReplayInputError(str(exc)) from None
        if args.out and args.out != "-" and not Path(args.out).resolve().parent.is_dir():
            raise ReplayInputError(f"cannot write {args.out}: its directory does not exist")
        html_dir = getattr(args, "html", None)
        if html_dir and not Path(html_dir).resolve().parent.is_dir():
            raise ReplayInputError(f"cannot write {html_dir}: its parent directory does not exist")
        probe = _html_probe(args) if html_dir else None
        result = replay_events(
            args.events,
            policy,
            policy_source=str(args.policy),
            sweep_every=args.sweep_every,
            probe=probe,
            store=store,
        )
        text = result.model_dump_json(indent=2) + "\n"
        if args.out and args.out != "-":
            try:
                Path(args.out).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise ReplayInputError(f"cannot write {args.out}: {exc.strerror or type(exc).__name__}") from None
        page = _write_html(args, result, policy, probe) if html_dir else None
    except ReplayInputError as exc:
        print(f"tuning-governor replay: {exc}", file=err)
        return 2
    summary_stream = out
    if args.out == "-":
        out.write(text)
        summary_stream = err
    summary_stream.write(render_summary(result, events_source=str(args.events), out=args.out))
    if page is not None:
        summary_stream.write(f"HTML report: {page}\n")
    return 0


def _html_probe(args: argparse.Namespace) -> ReplayProbe:
    from governor_sim.replay_timeline import Timeline  # noqa: PLC0415 - only with --html (imports replay)

    return Timeline(jobs_drawn=args.html_jobs)


def _write_html(args: argparse.Namespace, result: ReplayResult, policy: Policy, probe: ReplayProbe | None) -> Path:
    # matplotlib (client-side extra) is imported only when a page is asked for
    from governor_sim.replay_html import ReplayInputs, write_replay_page  # noqa: PLC0415
    from governor_sim.replay_timeline import Timeline  # noqa: PLC0415

    assert isinstance(probe, Timeline)
    every = args.sweep_every
    sweep = f"every {interval_text(int(every.total_seconds()))}" if every else "none (--sweep-every 0)"
    inputs = ReplayInputs(events=str(args.events), policy=str(args.policy), sweep_every=sweep)
    try:
        return write_replay_page(result, probe, policy, inputs, Path(args.html))
    except OSError as exc:
        raise ReplayInputError(f"cannot write {args.html}: {exc.strerror or type(exc).__name__}") from None
