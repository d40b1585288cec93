"""One mode of the queue simulation over one day of arrivals, on a virtual clock, decided by the
scheduling core alone (``domain.queueing.schedule``; no handlers, no stand-in).

A running job's trials run in waves of MaxParallel: it ends after ceil(remaining trials / MaxParallel)
waves of ``trial_minutes``, holding MaxParallel x InstanceCount instances throughout (the ledger's
worst case). A preempted job keeps its finished waves' trials, loses the wave in flight, and is queued
again with the trials left (as a warm-start resume would).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from governor_client.simulator.queue_study.workload import ITYPE, QUOTA, Job, shares
from tuning_governor.domain.queueing import Decision, Holding, QueuedRequest, schedule
from tuning_governor.domain.shares import ShareTerms

Mode = Literal["stop-on-arrival", "queue", "queue+lend/borrow", "queue+fit-to-share"]
MODES: tuple[Mode, ...] = ("stop-on-arrival", "queue", "queue+lend/borrow", "queue+fit-to-share")


@dataclass
class Running:
    job: Job
    parallel: int
    trials: int
    started: datetime
    ends: datetime
    borrowed: dict[str, int]
    done_before: int = 0  # trials finished in earlier runs (before a preemption)


@dataclass
class Outcome:
    """What one mode did with one day's arrivals."""

    killed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    preempted: int = 0
    trials_wasted: int = 0  # trials started and stopped before they finished
    trials_never_run: int = 0  # trials of killed jobs
    useful_instance_hours: float = 0.0
    held_instance_hours: float = 0.0
    waits: dict[str, list[float]] = field(default_factory=dict)  # team -> minutes from arrival to start
    usage: dict[str, list[tuple[datetime, int]]] = field(default_factory=dict)  # team -> (time, held) changes
    makespan: timedelta = timedelta(0)


def _terms(mode: Mode) -> dict[str, ShareTerms]:
    return shares("LEND_AND_BORROW", preemptible=True) if mode == "queue+lend/borrow" else shares("RESERVE")


class Day:
    """The event loop of one mode: arrivals and ends in time order, one scheduling pass per instant."""

    def __init__(self, mode: Mode, jobs: list[Job]) -> None:
        self.mode, self.terms = mode, _terms(mode)
        self.jobs = {j.key: j for j in jobs}
        self.events: list[tuple[datetime, int, str, str]] = [(j.arrives, 1, "arrive", j.key) for j in jobs]
        heapq.heapify(self.events)
        self.queued: dict[str, QueuedRequest] = {}
        self.left: dict[str, int] = {j.key: j.trials for j in jobs}
        self.running: dict[str, Running] = {}
        self.out = Outcome()
        self.start = min(j.arrives for j in jobs)

    def run(self) -> Outcome:
        while self.events:
            now = self.events[0][0]
            while self.events and self.events[0][0] == now:
                _, _, kind, key = heapq.heappop(self.events)
                self._arrive(key, now) if kind == "arrive" else self._end(key, now)
            self._apply(now, schedule(self.queued.values(), self._holdings(now), self.terms, {ITYPE: QUOTA}, now))
            if self.mode == "stop-on-arrival":
                for key in list(self.queued):
                    # Stopped on arrival: AMT had launched its first MaxParallel trials; the rest never run.
                    self.out.killed.append(key)
                    self.out.trials_wasted += min(self.jobs[key].max_parallel, self.jobs[key].trials)
                    self.out.trials_never_run += self.jobs[key].trials
                    del self.queued[key]
            self.out.makespan = now - self.start
        return self.out

    def _arrive(self, key: str, now: datetime) -> None:
        job = self.jobs[key]
        consent = self.mode == "queue+fit-to-share"
        self.queued[key] = QueuedRequest(
            key, job.team, job.max_parallel, {ITYPE: job.instances}, job.arrives, job.priority, consent
        )

    def _holdings(self, now: datetime) -> list[Holding]:
        out = []
        for key, run in sorted(self.running.items()):
            waves = int((now - run.started) / timedelta(minutes=run.job.trial_minutes))
            done = run.done_before + min(run.trials, waves * run.parallel)
            out.append(Holding(key, run.job.team, {ITYPE: run.parallel * run.job.instances}, done, run.borrowed))
        return out

    def _apply(self, now: datetime, decisions: list[Decision]) -> None:
        for decision in decisions:
            if decision.action == "admit":
                self._start(decision, now)
            elif decision.action == "preempt":
                self._preempt(decision.key, now)
            elif decision.action in {"refuse", "expire"}:
                self.out.refused.append(decision.key)
                del self.queued[decision.key]

    def _start(self, decision: Decision, now: datetime) -> None:
        request = self.queued.pop(decision.key)
        job, parallel = self.jobs[decision.key], decision.max_parallel or request.max_parallel
        trials = self.left[job.key]
        ends = now + timedelta(minutes=job.trial_minutes * math.ceil(trials / parallel))
        done = job.trials - trials
        self.running[job.key] = Running(job, parallel, trials, now, ends, dict(decision.borrowed or {}), done)
        if done == 0:
            self.out.waits.setdefault(job.team, []).append((now - job.arrives) / timedelta(minutes=1))
        heapq.heappush(self.events, (ends, 0, "end", job.key))
        self._use(job.team, now, parallel * job.instances)

    def _end(self, key: str, now: datetime) -> None:
        run = self.running.get(key)
        if run is None or run.ends != now:
            return  # preempted earlier: a stale end event
        del self.running[key]
        self.left[key] = 0
        self._account(run, now, run.trials, 0)

    def _preempt(self, key: str, now: datetime) -> None:
        run = self.running.pop(key)
        waves = int((now - run.started) / timedelta(minutes=run.job.trial_minutes))
        finished = min(run.trials, waves * run.parallel)
        in_flight = min(run.parallel, run.trials - finished)
        self.left[key] = run.trials - finished
        self.out.preempted += 1
        self.out.trials_wasted += in_flight
        self._account(run, now, finished, 0)
        self._arrive(key, now)

    def _account(self, run: Running, now: datetime, finished: int, _: int) -> None:
        hours = (now - run.started) / timedelta(hours=1)
        self.out.held_instance_hours += hours * run.parallel * run.job.instances
        self.out.useful_instance_hours += finished * run.job.instances * run.job.trial_minutes / 60
        self._use(run.job.team, now, -run.parallel * run.job.instances)

    def _use(self, team: str, now: datetime, delta: int) -> None:
        series = self.out.usage.setdefault(team, [])
        held = (series[-1][1] if series else 0) + delta
        series.append((now, held))


def simulate(mode: Mode, jobs: list[Job]) -> Outcome:
    """The outcome of ``mode`` on ``jobs`` (every job ends: the day runs until the queue drains)."""
    return Day(mode, jobs).run()
