"""The simulation loop: a virtual clock stepped from one happening to the next, every event delivered.

:meth:`Simulation.run` steps a virtual clock from one happening to the next (a scenario action, a job's
state change, a delivery coming due); every event the stand-in emits goes through a
:class:`~governor_client.simulator.delivery.Deliverer` (duplicates, delays, reordering, drops) and, when its delivery
time has come, to the handler its rule routes it to (:func:`governor_client.simulator.runner.deliver_event`) against
:func:`governor_client.offline.environment.build_environment`.

A delivery whose handler raises (outcome ``error``) is retried as the rules' RetryPolicy in
template.yaml would: again after ``RetryPolicy.delay_s``, up to ``maximum_retry_attempts`` retries and
within ``maximum_event_age_s`` of emission; after that it is dead-lettered.

The deployed schedule runs on the same clock (:mod:`governor_client.simulator.schedule`): the sweep function every
``sweep_every`` (template.yaml's 5 minutes unless told; ticks on multiples of it since the epoch, UTC)
and each one-time budget check the governor asks for at its time, whether or not anything else happens
then (an hour-long silent trial is swept every interval).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TextIO

from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.amt.events import TRAINING_DETAIL_TYPE
from governor_client.offline.environment import OfflineEnvironment, build_environment, store_kind
from governor_client.simulator.delivery import Deliverer, DeliveryFaults, EventBridgeEvent, ScheduledDelivery
from governor_client.simulator.runner import deliver_event
from governor_client.simulator.schedule import DEFAULT_SWEEP_EVERY, Schedule, invoke_budget_check, invoke_sweep

from .logs import open_log, write_delivery_line, write_event_line
from .places import sagemaker_of
from .queue import SimulatedQueue
from .quiet import DISCARD, quiet_handlers
from .results import DeliveryOutcome, Progress, ScheduledRun, SimulationResult
from .scenario import CreateTuningJob, RetryPolicy, Scenario, ScenarioAction, SubmitTuningJob, TagTuningJob

DEFAULT_START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
DEFAULT_MAX_VIRTUAL_S = 30 * 24 * 3600.0

#: The scenario's actions in the order they happen, each with its index in the scenario.
_Actions = list[tuple[int, ScenarioAction]]


class Simulation:
    """Runs a :class:`Scenario` against the real handlers on moto. Use inside ``moto.mock_aws()``.

    Callers may rely on:

    * the same scenario, ``seed`` and ``faults`` give the same deliveries, in the same order, at the same
      virtual times; and the stand-in emits the same events whatever ``faults`` are, as long as no handler
      changes a job (a policy in monitor mode, the default, never stops one);
    * ``environment`` is passed to :func:`~governor_client.offline.environment.build_environment` as keyword arguments
      (e.g. a ``policy``); its ``store`` defaults to ``$TUNING_GOVERNOR_STORE``, else ``memory`` (the
      in-memory table; ``"moto"`` runs the DynamoDB adapter on moto);
    * ``handlers=False`` runs everything but the handlers (the outcome is ``not-invoked``): the
      simulator's own cost, as a baseline;
    * ``on_progress`` is called at most once per ``progress_every_s`` of virtual time, and once at the end
      with ``done=True``;
    * ``quiet_handlers`` raises the Powertools logger to WARNING and disables EMF metric output for the
      duration of :meth:`run` (both restored afterwards), and discards what handlers print while they
      run (the progress callback's output is untouched);
    * ``sweep_every`` (a timedelta or seconds; None or 0: no sweep) runs the sweep function on the clock
      at that interval, and every one-time budget check the handlers ask for runs at its time (both only
      with ``handlers``); the run ends when nothing is running, nothing is due, and a sweep has run
      since the last thing happened (as the deployed sweep would, once, finding nothing to do);
    * entering installs the stand-in and creates the governor's resources (:attr:`env`); leaving
      uninstalls the stand-in (moto's state stays until ``mock_aws`` ends).
    """

    def __init__(  # noqa: PLR0913 - the simulation's knobs, keyword-only with defaults
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
        sweep_every: timedelta | float | None = DEFAULT_SWEEP_EVERY,
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
        every = timedelta(seconds=sweep_every) if isinstance(sweep_every, int | float) else sweep_every
        self.schedule = Schedule(every=every if every and handlers else None)
        self._last_busy = self.start  # the last moment something other than the schedule happened
        self._last_sweep: datetime | None = None
        self._amt: AmtStandIn | None = None
        self._env: OfflineEnvironment | None = None
        self._ran = False
        self._logs: tuple[TextIO | None, TextIO | None] = (None, None)
        self.queue = SimulatedQueue()  # submissions (docs/explanation/queue.md); idle unless the scenario submits

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
            if self.handlers:
                self._env.services.checks = self.schedule.checks
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
            self._logs = (open_log(stack, self.event_log), open_log(stack, self.delivery_log))
            if self.quiet_handlers and self.handlers:
                stack.enter_context(quiet_handlers())
            return self._run()

    def _run(self) -> SimulationResult:
        actions: _Actions = sorted(enumerate(self.scenario.actions), key=lambda pair: (pair[1].at_s, pair[0]))
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
        self.schedule.start(self.clock.now())
        while (now := self._next_moment(actions, next_action)) is not None:
            if now > deadline:
                result.truncated = True
                break
            self.amt.advance_to(now)
            next_action = self._perform_due(actions, next_action, now)
            self._deliver_due(now, result)
            self._fire_due(now, result)
            if self.on_progress is not None and (now - last_progress).total_seconds() >= self.progress_every_s:
                last_progress = now
                self.on_progress(self._progress(result, next_action, len(actions)))
        result.finished_at = self.clock.now()
        if self.on_progress is not None:
            self.on_progress(self._progress(result, next_action, len(actions), done=True))
        return result

    def _action_time(self, action: ScenarioAction) -> datetime:
        return self.start + timedelta(seconds=action.at_s)

    def _next_moment(self, actions: _Actions, next_action: int) -> datetime | None:
        """When the next thing happens (an action, a job's state change, a delivery, a scheduled sweep or
        check), or None: all done (see the class docstring)."""
        busy = [
            t
            for t in (
                self._action_time(actions[next_action][1]) if next_action < len(actions) else None,
                self.amt.next_due(),
                self.deliverer.next_due(),
            )
            if t is not None
        ]
        if busy:
            scheduled = self.schedule.next_due()
            moment = min([*busy, scheduled] if scheduled is not None else busy)
            if moment == min(busy):
                self._last_busy = max(moment, self.clock.now())
            return max(moment, self.clock.now())
        # All quiet: one more sweep, as the deployed one would run (and finalise what a lost event left).
        swept = self._last_sweep is not None and self._last_sweep >= self._last_busy
        if self.schedule.next_sweep is None or swept:
            return None
        return max(self.schedule.next_sweep, self.clock.now())

    def _perform_due(self, actions: _Actions, next_action: int, now: datetime) -> int:
        """Performs the actions due by ``now``; returns the index of the next one."""
        env = self.env
        while next_action < len(actions) and self._action_time(actions[next_action][1]) <= now:
            action = actions[next_action][1]
            if isinstance(action, SubmitTuningJob):
                self.queue.perform(action, env)
            else:
                self._perform(action, env)
            next_action += 1
        return next_action

    def _deliver_due(self, now: datetime, result: SimulationResult) -> None:
        # Handlers may change jobs (a stop), which emits events at once: deliver until nothing is due now.
        while True:
            for event in self.amt.drain_events():
                self.deliverer.submit(event, emitted_at=now)
                result.events_emitted += 1
            due = self.deliverer.due(now)
            if not due:
                break
            for delivery in due:
                self._deliver(delivery, now, result)
                self.queue.after(delivery.event, self.env)

    def _fire_due(self, now: datetime, result: SimulationResult) -> None:
        """The sweep and the one-time checks due by ``now``, then the deliveries of what they changed."""
        services = self.env.services
        while (firing := self.schedule.pop_due(now)) is not None:
            if firing.kind == "sweep":
                result.sweeps += 1
                self._last_sweep = now
                self._scheduled(result, "sweep", None, now, functools.partial(invoke_sweep, services))
                self.queue.after(None, self.env)
            for job, check in zip(firing.jobs, firing.inputs, strict=True):
                result.budget_checks += 1
                invoke = functools.partial(invoke_budget_check, check, services)
                self._scheduled(result, "budget-check", job, now, invoke)
            self._deliver_due(now, result)

    def _scheduled(
        self, result: SimulationResult, function: str, job: str | None, now: datetime, invoke: Callable[[], Any]
    ) -> None:
        """One scheduled invocation; a raise is a failed run (the next sweep is its retry), recorded."""
        try:
            if self.quiet_handlers:
                with contextlib.redirect_stdout(DISCARD):
                    payload = invoke()
            else:
                payload = invoke()
        except Exception as exc:  # as a failed scheduled invocation: recorded, and the run goes on
            result.failed_schedules.append(f"{now.isoformat()} {function} {job or ''}: {type(exc).__name__}: {exc}")
            return
        result.sweep_step_errors += len(payload.get("errors") or []) if function == "sweep" else 0
        decisions = list(payload.get("decisions") or [])
        if decisions and self.keep_outcomes:
            named = [d | {"job": job} for d in decisions] if job else self._named(decisions)
            result.scheduled.append(ScheduledRun(now, function, named))

    def _named(self, decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A sweep's decisions with the job each is about: as the sweep names it, else
        matched to the decision rows of the scenario's tuning jobs by rule, verdict and time."""
        if all(d.get("job") for d in decisions):
            return decisions  # the sweep names the job of each decision it made
        store = self.env.services.store
        rows = {
            (row.get("rule"), row.get("verdict"), row.get("at")): name
            for name in self.scenario.tuning_jobs
            for row in store.decisions(name.lower())
        }

        def at(value: Any) -> Any:
            return value.isoformat(timespec="milliseconds") if isinstance(value, datetime) else value

        return [d | {"job": rows.get((d.get("rule"), d.get("verdict"), at(d.get("at"))))} for d in decisions]

    @staticmethod
    def _perform(action: ScenarioAction, env: OfflineEnvironment) -> None:
        if isinstance(action, CreateTuningJob):
            sagemaker_of(env, action.account, action.region).create_hyper_parameter_tuning_job(**action.request)
        elif isinstance(action, TagTuningJob):
            arn = env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=action.job)[
                "HyperParameterTuningJobArn"
            ]
            env.sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": k, "Value": v} for k, v in action.tags.items()])
        else:
            env.sagemaker.create_training_job(**action.request)

    def _deliver(self, delivery: ScheduledDelivery, now: datetime, result: SimulationResult) -> None:
        event = delivery.event
        detail_type = event.get("detail-type")
        function, payload = self._invoke(event)
        kind = str(payload.get("outcome"))
        record = DeliveryOutcome(
            seq=result.deliveries,
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
        result.deliveries += 1
        result.outcome_counts[kind] += 1
        if detail_type == TRAINING_DETAIL_TYPE:
            result.trial_events_delivered += 1
        if self.keep_outcomes:
            result.outcomes.append(record)
        self._write_logs(event, record, detail_type)
        if kind == "error":
            self._retry_or_dead_letter(delivery, now, result)

    def _invoke(self, event: EventBridgeEvent) -> tuple[str | None, dict[str, Any]]:
        """The function the event was routed to and its result (``not-invoked`` without handlers)."""
        if not self.handlers:
            return None, {"outcome": "not-invoked"}
        if self.quiet_handlers:
            with contextlib.redirect_stdout(DISCARD):
                outcome = deliver_event(event, self.env.services)
        else:
            outcome = deliver_event(event, self.env.services)
        return outcome.function, outcome.outcome

    def _write_logs(self, event: EventBridgeEvent, record: DeliveryOutcome, detail_type: Any) -> None:
        event_log, delivery_log = self._logs
        if event_log is not None:
            write_event_line(event_log, event)
        if delivery_log is not None:
            write_delivery_line(delivery_log, record, detail_type)

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
