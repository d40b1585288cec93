"""A governed SageMaker account in one process: the AMT stand-in, EventBridge's delivery, the real handlers.

    with mock_aws(), Simulation(scenario, seed=7, faults=DeliveryFaults(max_delay_s=5, seed=1)) as sim:
        result = sim.run()
        sim.env.services.store.get_summary("xgb-churn-hb")

A :class:`Scenario` lists what data scientists do ("at virtual second T, create this tuning job / this
training job") and how trials behave. :meth:`Simulation.run` steps a virtual clock from one happening to
the next (a scenario action, a job's state change, a delivery coming due); every event the stand-in
emits goes through a :class:`~governor_sim.delivery.Deliverer` (duplicates, delays, reordering, drops)
and, when its delivery time has come, to the handler its rule routes it to
(:func:`governor_sim.runner.deliver_event`) against :func:`governor_sim.offline.build_environment`.

A delivery whose handler raises (outcome ``error``) is retried as the rules' RetryPolicy in
template.yaml would: again after ``RetryPolicy.delay_s``, up to ``maximum_retry_attempts`` retries and
within ``maximum_event_age_s`` of emission; after that it is dead-lettered.

**Event log** (``event_log=``): every delivery's EventBridge event, exactly as the target received it,
one JSON object per line, in delivery order (duplicates and retries included) — the input format of
``tuning-governor replay``. :func:`read_event_log` reads it back.

**Delivery log** (``delivery_log=``): line *n* describes line *n* of the event log:
``{"seq", "delivered_at", "emitted_at", "attempt", "copy", "event_id", "detail_type", "function",
"outcome"}`` with ISO-8601 UTC times. :func:`read_delivery_log` reads it back.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TextIO

from governor_sim.amt import AmtStandIn, DefaultTrialBehaviour, TrialBehaviour, VirtualClock
from governor_sim.amt.events import TRAINING_DETAIL_TYPE
from governor_sim.delivery import (
    CopyKind,
    Deliverer,
    DeliveryFaults,
    DeliveryStats,
    DroppedEvent,
    EventBridgeEvent,
    ScheduledDelivery,
)
from governor_sim.offline import OfflineEnvironment, build_environment, store_kind
from governor_sim.runner import deliver_event

DEFAULT_START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
DEFAULT_MAX_VIRTUAL_S = 30 * 24 * 3600.0


# -- scenario ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CreateTuningJob:
    """At ``at_s`` virtual seconds after the start, call CreateHyperParameterTuningJob(**request)."""

    at_s: float
    request: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.request["HyperParameterTuningJobName"])


@dataclass(frozen=True)
class CreateTrainingJob:
    """At ``at_s`` virtual seconds after the start, call CreateTrainingJob(**request) (a standalone job)."""

    at_s: float
    request: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.request["TrainingJobName"])


ScenarioAction = CreateTuningJob | CreateTrainingJob


@dataclass(frozen=True)
class Scenario:
    """Who creates which job when, and how the trials behave.

    ``failure_rate`` / ``spot_interruption_rate`` configure the stand-in's
    :class:`~governor_sim.amt.DefaultTrialBehaviour` (seeded with the simulation's seed); ``behaviour``
    replaces it altogether. ``launch_delay_s``, ``finish_delay_s`` and ``warm_pool_reuse`` are the
    stand-in's timing knobs (see :class:`~governor_sim.amt.AmtStandIn`).
    """

    actions: Sequence[ScenarioAction]
    failure_rate: float = 0.0
    spot_interruption_rate: float = 0.0
    launch_delay_s: float = 0.0
    finish_delay_s: float = 0.0
    warm_pool_reuse: bool = True
    behaviour: TrialBehaviour | None = None

    def trial_behaviour(self, seed: int) -> TrialBehaviour:
        if self.behaviour is not None:
            return self.behaviour
        return DefaultTrialBehaviour(
            seed=seed, failure_rate=self.failure_rate, spot_interruption_rate=self.spot_interruption_rate
        )

    @property
    def tuning_jobs(self) -> list[str]:
        return [a.name for a in self.actions if isinstance(a, CreateTuningJob)]

    @property
    def training_jobs(self) -> list[str]:
        return [a.name for a in self.actions if isinstance(a, CreateTrainingJob)]


@dataclass(frozen=True)
class RetryPolicy:
    """EventBridge's retries of a failed target invocation (template.yaml: 10 attempts, 3600 s)."""

    maximum_retry_attempts: int = 10
    maximum_event_age_s: float = 3600.0
    delay_s: float = 60.0


# -- results -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeliveryOutcome:
    """What happened to one delivery: ``outcome`` is the handler's (``recorded``, ``ignored``,
    ``duplicate``, ``finalised``, ``stale``, ``rejected``, ``error``…), ``unrouted``, or ``not-invoked``
    when the simulation runs without handlers; ``result`` is the handler's full return value."""

    seq: int
    delivered_at: datetime
    emitted_at: datetime
    attempt: int
    copy: CopyKind
    event_id: str | None
    detail_type: str | None
    function: str | None
    outcome: str
    result: dict[str, Any]


@dataclass(frozen=True)
class Progress:
    """A snapshot for a progress display; ``done`` is True on the last call of a run."""

    virtual_time: datetime
    virtual_elapsed_s: float
    actions_done: int
    actions_total: int
    events_emitted: int
    deliveries: int
    trial_events_delivered: int
    pending_deliveries: int
    errors: int
    dropped: int
    dead_lettered: int
    done: bool = False


@dataclass
class SimulationResult:
    """Everything a run produced besides the DynamoDB/SNS/Slack state (read that through ``sim.env``).

    ``trial_events_delivered`` counts deliveries of training-job state-change events (retries and
    duplicates included); ``truncated`` is True when the run stopped at ``max_virtual_s``.
    """

    started_at: datetime
    finished_at: datetime
    tuning_jobs: list[str]
    training_jobs: list[str]
    events_emitted: int = 0
    deliveries: int = 0
    trial_events_delivered: int = 0
    outcomes: list[DeliveryOutcome] = field(default_factory=list)
    outcome_counts: Counter[str] = field(default_factory=Counter)
    dropped: list[DroppedEvent] = field(default_factory=list)
    dead_lettered: list[ScheduledDelivery] = field(default_factory=list)
    delivery_stats: DeliveryStats = field(default_factory=DeliveryStats)
    truncated: bool = False

    @property
    def errors(self) -> int:
        return self.outcome_counts.get("error", 0)


@dataclass(frozen=True)
class LoggedDelivery:
    """One line of a delivery log (see the module docstring)."""

    seq: int
    delivered_at: datetime
    emitted_at: datetime
    attempt: int
    copy: str
    event_id: str | None
    detail_type: str | None
    function: str | None
    outcome: str


def read_event_log(path: str | Path) -> Iterator[EventBridgeEvent]:
    """The events of an event log, in delivery order."""
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                event: EventBridgeEvent = json.loads(line)
                yield event


def read_delivery_log(path: str | Path) -> Iterator[LoggedDelivery]:
    """The deliveries of a delivery log, in delivery order."""
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            data = json.loads(line)
            yield LoggedDelivery(
                seq=int(data["seq"]),
                delivered_at=datetime.fromisoformat(data["delivered_at"]),
                emitted_at=datetime.fromisoformat(data["emitted_at"]),
                attempt=int(data["attempt"]),
                copy=str(data["copy"]),
                event_id=data.get("event_id"),
                detail_type=data.get("detail_type"),
                function=data.get("function"),
                outcome=str(data["outcome"]),
            )


# -- the simulation ----------------------------------------------------------------------------------------


class _Discard(io.TextIOBase):
    """A text sink for the handlers' stdout (EMF metric lines) when running quietly."""

    def write(self, s: str) -> int:
        return len(s)


class Simulation:
    """Runs a :class:`Scenario` against the real handlers on moto. Use inside ``moto.mock_aws()``.

    Callers may rely on:

    * the same scenario, ``seed`` and ``faults`` give the same deliveries, in the same order, at the same
      virtual times; and the stand-in emits the same events whatever ``faults`` are, as long as no handler
      changes a job (a policy in monitor mode, the default, never stops one);
    * ``environment`` is passed to :func:`~governor_sim.offline.build_environment` as keyword arguments
      (e.g. a ``policy``); its ``store`` defaults to ``$TUNING_GOVERNOR_STORE``, else ``memory`` (the
      in-memory table; ``"moto"`` runs the DynamoDB adapter on moto);
    * ``handlers=False`` runs everything but the handlers (the outcome is ``not-invoked``): the
      simulator's own cost, as a baseline;
    * ``on_progress`` is called at most once per ``progress_every_s`` of virtual time, and once at the end
      with ``done=True``;
    * ``quiet_handlers`` raises the Powertools logger to WARNING and disables EMF metric output for the
      duration of :meth:`run` (both restored afterwards), and discards what handlers print while they
      run (the progress callback's output is untouched);
    * entering installs the stand-in and creates the governor's resources (:attr:`env`); leaving
      uninstalls the stand-in (moto's state stays until ``mock_aws`` ends).
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int = 7,
        faults: DeliveryFaults | None = None,
        retry: RetryPolicy | None = None,
        handlers: bool = True,
        start: datetime = DEFAULT_START,
        slack_url: str | None = None,
        sns: bool = True,
        event_log: str | Path | TextIO | None = None,
        delivery_log: str | Path | TextIO | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        progress_every_s: float = 600.0,
        quiet_handlers: bool = False,
        keep_outcomes: bool = True,
        max_virtual_s: float = DEFAULT_MAX_VIRTUAL_S,
        environment: Mapping[str, Any] | None = None,
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.faults = faults or DeliveryFaults()
        self.retry = retry or RetryPolicy()
        self.handlers = handlers
        self.start = start if start.tzinfo else start.replace(tzinfo=UTC)
        self.slack_url = slack_url
        self.sns = sns
        self.event_log = event_log
        self.delivery_log = delivery_log
        self.on_progress = on_progress
        self.progress_every_s = progress_every_s
        self.quiet_handlers = quiet_handlers
        self.keep_outcomes = keep_outcomes
        self.max_virtual_s = max_virtual_s
        self.environment = dict(environment or {})
        self.clock = VirtualClock(self.start)
        self.deliverer = Deliverer(self.faults)
        self._amt: AmtStandIn | None = None
        self._env: OfflineEnvironment | None = None
        self._ran = False
        self._logs: tuple[TextIO | None, TextIO | None] = (None, None)

    # -- lifecycle ---------------------------------------------------------------------------------------

    @property
    def amt(self) -> AmtStandIn:
        if self._amt is None:
            raise RuntimeError("enter the Simulation (with ...) first")
        return self._amt

    @property
    def env(self) -> OfflineEnvironment:
        if self._env is None:
            raise RuntimeError("enter the Simulation (with ...) first")
        return self._env

    def __enter__(self) -> Self:
        scenario = self.scenario
        amt = AmtStandIn(
            clock=self.clock,
            seed=self.seed,
            behaviour=scenario.trial_behaviour(self.seed),
            launch_delay_s=scenario.launch_delay_s,
            finish_delay_s=scenario.finish_delay_s,
            warm_pool_reuse=scenario.warm_pool_reuse,
        )
        amt.install()
        try:
            environment = dict(self.environment)
            environment["store"] = store_kind(environment.get("store"))
            self._env = build_environment(slack_url=self.slack_url, clock=self.clock.now, sns=self.sns, **environment)
        except Exception:
            amt.uninstall()
            raise
        self._amt = amt
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._amt is not None:
            self._amt.uninstall()

    # -- running -----------------------------------------------------------------------------------------

    def run(self) -> SimulationResult:
        """Run the scenario until nothing is left to happen (or ``max_virtual_s``); see the class docstring.

        A simulation runs once (``RuntimeError`` on a second call): its jobs and clock have moved on.
        """
        if self._ran:
            raise RuntimeError("a Simulation runs once; create a new one (in a fresh mock_aws) to run again")
        self._ran = True
        with contextlib.ExitStack() as stack:
            self._logs = (_open_log(stack, self.event_log), _open_log(stack, self.delivery_log))
            if self.quiet_handlers and self.handlers:
                stack.enter_context(_quiet_handlers())
            return self._run()

    def _run(self) -> SimulationResult:
        amt, env = self.amt, self.env
        actions = sorted(enumerate(self.scenario.actions), key=lambda pair: (pair[1].at_s, pair[0]))
        result = SimulationResult(
            started_at=self.clock.now(),
            finished_at=self.clock.now(),
            tuning_jobs=self.scenario.tuning_jobs,
            training_jobs=self.scenario.training_jobs,
            dropped=self.deliverer.dropped,
            delivery_stats=self.deliverer.stats,
        )
        deadline = self.start + timedelta(seconds=self.max_virtual_s)
        next_action = 0
        last_progress = self.clock.now()
        while True:
            candidates = [
                t
                for t in (
                    self.start + timedelta(seconds=actions[next_action][1].at_s)
                    if next_action < len(actions)
                    else None,
                    amt.next_due(),
                    self.deliverer.next_due(),
                )
                if t is not None
            ]
            if not candidates:
                break
            now = max(min(candidates), self.clock.now())
            if now > deadline:
                result.truncated = True
                break
            amt.advance_to(now)
            while next_action < len(actions) and self.start + timedelta(seconds=actions[next_action][1].at_s) <= now:
                self._perform(actions[next_action][1], env)
                next_action += 1
            # Handlers may change jobs (a stop), which emits events at once: deliver until nothing is due now.
            while True:
                for event in amt.drain_events():
                    self.deliverer.submit(event, emitted_at=now)
                    result.events_emitted += 1
                due = self.deliverer.due(now)
                if not due:
                    break
                for delivery in due:
                    self._deliver(delivery, now, result)
            if self.on_progress is not None and (now - last_progress).total_seconds() >= self.progress_every_s:
                last_progress = now
                self.on_progress(self._progress(result, next_action, len(actions)))
        result.finished_at = self.clock.now()
        if self.on_progress is not None:
            self.on_progress(self._progress(result, next_action, len(actions), done=True))
        return result

    @staticmethod
    def _perform(action: ScenarioAction, env: OfflineEnvironment) -> None:
        if isinstance(action, CreateTuningJob):
            env.sagemaker.create_hyper_parameter_tuning_job(**action.request)
        else:
            env.sagemaker.create_training_job(**action.request)

    def _deliver(self, delivery: ScheduledDelivery, now: datetime, result: SimulationResult) -> None:
        event = delivery.event
        detail_type = event.get("detail-type")
        if self.handlers and self.quiet_handlers:
            with contextlib.redirect_stdout(_DISCARD):
                outcome = deliver_event(event, self.env.services)
            function, payload = outcome.function, outcome.outcome
        elif self.handlers:
            outcome = deliver_event(event, self.env.services)
            function, payload = outcome.function, outcome.outcome
        else:
            function, payload = None, {"outcome": "not-invoked"}
        kind = str(payload.get("outcome"))
        seq = result.deliveries
        result.deliveries += 1
        result.outcome_counts[kind] += 1
        if detail_type == TRAINING_DETAIL_TYPE:
            result.trial_events_delivered += 1
        if self.keep_outcomes:
            result.outcomes.append(
                DeliveryOutcome(
                    seq=seq,
                    delivered_at=now,
                    emitted_at=delivery.emitted_at,
                    attempt=delivery.attempt,
                    copy=delivery.copy,
                    event_id=delivery.event_id,
                    detail_type=str(detail_type) if detail_type is not None else None,
                    function=function,
                    outcome=kind,
                    result=payload,
                )
            )
        event_log, delivery_log = self._logs
        if event_log is not None:
            event_log.write(json.dumps(event, separators=(",", ":")) + "\n")
        if delivery_log is not None:
            line = {
                "seq": seq,
                "delivered_at": now.isoformat(),
                "emitted_at": delivery.emitted_at.isoformat(),
                "attempt": delivery.attempt,
                "copy": delivery.copy,
                "event_id": delivery.event_id,
                "detail_type": detail_type,
                "function": function,
                "outcome": kind,
            }
            delivery_log.write(json.dumps(line, separators=(",", ":")) + "\n")
        if kind == "error":
            self._retry_or_dead_letter(delivery, now, result)

    def _retry_or_dead_letter(self, delivery: ScheduledDelivery, now: datetime, result: SimulationResult) -> None:
        policy = self.retry
        retry_at = now + timedelta(seconds=policy.delay_s)
        within_age = (retry_at - delivery.emitted_at).total_seconds() <= policy.maximum_event_age_s
        if delivery.attempt <= policy.maximum_retry_attempts and within_age:
            self.deliverer.redeliver(delivery, retry_at)
        else:
            result.dead_lettered.append(delivery)

    def _progress(
        self, result: SimulationResult, actions_done: int, actions_total: int, done: bool = False
    ) -> Progress:
        now = self.clock.now()
        return Progress(
            virtual_time=now,
            virtual_elapsed_s=(now - self.start).total_seconds(),
            actions_done=actions_done,
            actions_total=actions_total,
            events_emitted=result.events_emitted,
            deliveries=result.deliveries,
            trial_events_delivered=result.trial_events_delivered,
            pending_deliveries=self.deliverer.pending,
            errors=result.errors,
            dropped=len(result.dropped),
            dead_lettered=len(result.dead_lettered),
            done=done,
        )


_DISCARD = _Discard()


def _open_log(stack: contextlib.ExitStack, target: str | Path | TextIO | None) -> TextIO | None:
    if target is None:
        return None
    if isinstance(target, (str, Path)):
        return stack.enter_context(Path(target).open("w", encoding="utf-8"))
    return target


@contextlib.contextmanager
def _quiet_handlers() -> Iterator[None]:
    """Powertools logger at WARNING and EMF metrics off; both restored afterwards."""
    from tuning_governor.observability import logger  # noqa: PLC0415 - the handlers' own singleton

    previous_level = logger.log_level
    previous_flag = os.environ.get("POWERTOOLS_METRICS_DISABLED")
    logger.setLevel("WARNING")
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    try:
        yield
    finally:
        logger.setLevel(previous_level)
        if previous_flag is None:
            os.environ.pop("POWERTOOLS_METRICS_DISABLED", None)
        else:
            os.environ["POWERTOOLS_METRICS_DISABLED"] = previous_flag
