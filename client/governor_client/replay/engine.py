"""The replay's engine: each event fed to the governor's handlers, the sweep and the budget checks run
on the events' timeline between them, and settled jobs forgotten.

The handlers' service functions (``process_tuning_event``, ``process_training_event``) are given the
event model :func:`governor_client.replay.lines.parse_line` validated, so no event is parsed twice; a raise
is an ``error`` outcome, as :func:`governor_client.simulator.runner.deliver_event` records a handler's raise.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from governor_client.memory import MemoryStore
from governor_client.replay.facts import TableFacts, facts_info
from governor_client.replay.forget import Holders, settled
from governor_client.replay.lines import ReplayInputError, StateChange, job_key_of, parse_line, short
from governor_client.replay.model import LineProblem, PolicyInfo, ReplayResult
from governor_client.replay.results import JobOutcome, Recorded, RecordingNotifier, Tally, build_result, job_outcome
from governor_client.replay.sagemaker import EventSourcedSageMaker
from governor_client.replay.schedule import utc_text
from governor_client.simulator.schedule import Schedule
from tuning_governor.app.checks.budget import run_budget_check
from tuning_governor.app.events.training import process_training_event
from tuning_governor.app.events.tuning import process_tuning_event
from tuning_governor.app.services import Services
from tuning_governor.app.sweep.run import run_sweep
from tuning_governor.errors import RejectedEvent
from tuning_governor.models.events import TuningJobStateChange
from tuning_governor.observability import logger, metrics


class ReplayProbe(Protocol):
    """Watches a replay as it runs, reading the governor's state and changing nothing (e.g.
    ``governor_client.replay.timeline.Timeline``, which ``--html`` draws from).

    ``attach`` is called once, before the first line; ``step`` after each event the handlers processed,
    each sweep run and each budget check, with the time the governor judged at and whether a report was
    recorded by it; ``finish`` with the result, while the replay's table can still be read.
    """

    def attach(self, services: Services, sagemaker: EventSourcedSageMaker) -> None: ...

    def step(self, at: datetime, *, reported: bool) -> None: ...

    def finish(self, result: ReplayResult) -> None: ...


@dataclass
class Clock:
    """The governor's clock in a replay: the time of the event, sweep or check being processed."""

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


def deliver(parsed: StateChange, services: Services) -> dict[str, Any]:
    """Hand an event's model to its handler's service function; a raise is an ``error`` outcome (what
    EventBridge would retry). The metrics the handler's decorator would flush are dropped."""
    try:
        if isinstance(parsed, TuningJobStateChange):
            return process_tuning_event(parsed, services)
        return process_training_event(parsed, services)
    except Exception as exc:  # as a failed invocation: recorded, and the next events go on
        return {"outcome": "error", "error": type(exc).__name__, "reason": str(exc)}
    finally:
        metrics.clear_metrics()


class Replay:
    """One replay: the services, the event-sourced SageMaker and what was recorded.

    With ``last_lines`` (:func:`governor_client.replay.lines.last_lines` of the same lines; given by
    :func:`governor_client.replay.run.replay_lines` with the in-memory store and no probe only), a tuning
    job is forgotten once its last line is processed and it has settled: its outcome is taken then, as
    :meth:`result` would take it at the end, and its items and SageMaker state dropped.
    """

    def __init__(
        self,
        services: Services,
        sagemaker: EventSourcedSageMaker,
        clock: Clock,
        *,
        sweep_every: timedelta | None = None,
        probe: ReplayProbe | None = None,
        last_lines: Mapping[str, int] | None = None,
        table_facts: TableFacts | None = None,
    ) -> None:
        self.services = services
        self.table_facts = table_facts
        self.probe = probe
        self.sagemaker = sagemaker
        self.clock = clock
        self.sweep_every = sweep_every
        self.schedule = Schedule(every=sweep_every)
        self.tally = Tally(sweep_every)
        self.checks = self.schedule.checks
        services.checks = self.checks
        self._idle = False  # the last sweep run found nothing to do, and no event has come since
        self.outbox: list[Recorded] = []
        services.notifiers = [RecordingNotifier("sns", self.outbox), RecordingNotifier("slack", self.outbox)]
        self._last_lines: Mapping[str, int] = last_lines or {}
        self._ended: set[str] = set()  # past their last line, not settled yet
        self._forgotten: dict[str, JobOutcome] = {}

    def feed(self, number: int, raw: bytes | str) -> None:
        """Line ``number``: rejected with its reason, or run through the governor after the sweeps due."""
        tally = self.tally
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            tally.lines += 1
            tally.rejected.append(LineProblem(line=number, reason="not UTF-8 text"))
            return
        if not text.strip():
            return
        tally.lines += 1
        try:
            event, parsed = parse_line(text)
        except RejectedEvent as exc:
            tally.rejected.append(LineProblem(line=number, reason=exc.reason))
            return
        key = job_key_of(event)
        if key is not None and key in self._forgotten:
            raise ReplayInputError(
                f"line {number}: tuning job {key} appears after what the first reading found to be its last"
                " line: the events changed while they were replayed"
            )
        self._process(number, event, parsed)
        if key is not None and self._last_lines.get(key) == number:
            self._ended.add(key)
            self._forget_settled()

    def _process(self, number: int, event: Mapping[str, Any], parsed: StateChange) -> None:
        self._sweep_before(parsed.time, number)
        self.sagemaker.observe(parsed, event["detail"])
        self._idle = False
        self.clock.at = parsed.time
        reports = len(self.outbox)
        with contextlib.redirect_stdout(io.StringIO()):
            outcome = deliver(parsed, self.services)
        self._step(parsed.time, reports)
        self.tally.saw(parsed.time)
        if outcome.get("outcome") == "error":
            reason = f"{outcome.get('error')}: {outcome.get('reason')}"
            self.tally.failed.append(LineProblem(line=number, reason=short(reason)))

    # -- forgetting settled jobs --------------------------------------------------------------------------
    def _forget_settled(self) -> None:
        """Take the outcome of every ended job that has settled, then drop its state (see replay.forget)."""
        store = self.services.store
        assert isinstance(store, MemoryStore)  # replay_lines passes last_lines with the in-memory store only
        holders = Holders(store)
        for key in sorted(self._ended):
            if settled(key, self.sagemaker, store, self.checks, holders):
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
        self.schedule.start(at)
        while (firing := self.schedule.pop_due(at, inclusive=False)) is not None:
            if firing.kind == "checks":
                self._budget_checks(firing.at, firing.inputs, number)
            else:
                self._sweep(firing.at, number)

    def _budget_checks(self, when: datetime, inputs: tuple[dict[str, Any], ...], number: int) -> None:
        """The one-time checks due at ``when`` (EventBridge Scheduler invoking BudgetCheckFunction)."""
        for check in inputs:
            self.tally.budget_checks += 1
            self.clock.at = when
            reports = len(self.outbox)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    run_budget_check(check, self.services)
            except Exception as exc:  # as a failed invocation: the next sweep judges the job anyway
                self.tally.failed.append(
                    LineProblem(
                        line=number, reason=short(f"budget check at {utc_text(when)}: {type(exc).__name__}: {exc}")
                    )
                )
            finally:
                metrics.clear_metrics()
            self._idle = False
            self._step(when, reports)
        if self._ended:
            self._forget_settled()

    def _sweep(self, at: datetime, number: int) -> None:
        self.tally.sweeps += 1
        if self._idle:
            return  # nothing has changed since a sweep that found nothing running: this one would do the same
        self.clock.at = at
        reports = len(self.outbox)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                report = run_sweep(self.services)
        except Exception as exc:  # as a failed scheduled run: the next sweep is the retry
            self.tally.failed.append(
                LineProblem(line=number, reason=short(f"sweep at {utc_text(at)}: {type(exc).__name__}: {exc}"))
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
            not sagemaker.any_running()
            and not any(store.jobs_with_status(status) for status in ("InProgress", "Stopping"))
            and not store.warm_pool_names()
        )

    # -- the result ---------------------------------------------------------------------------------------
    def _outcome(self, key: str) -> JobOutcome:
        return job_outcome(key, self.services, self.sagemaker, self.tally.last_at or self.clock.at)

    def result(self, policy_source: str) -> ReplayResult:
        """The replay's result: every job seen (forgotten ones as they were taken), in first-seen order."""
        outcomes = {key: self._forgotten.get(key) or self._outcome(key) for key in self.sagemaker.job_keys()}
        mode = self.services.policy().mode
        facts = facts_info(self.sagemaker.gaps, self.table_facts)
        result = build_result(PolicyInfo(source=policy_source, mode=mode), self.tally, outcomes, self.outbox, facts)
        result.trial_types.update({region: set(types) for region, types in self.sagemaker.trial_types.items()})
        return result
