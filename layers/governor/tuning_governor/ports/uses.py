"""The store areas each use case uses: the joins of the store's area ports (``ports.store``) that the
application's use cases and the governance modules are given, named once here.

A use case's services are typed ``EngineServices[S]`` (governance) or ``AppServices[S]`` (app), ``S``
the join (or the one area port) of the areas it and everything it calls use; a function that takes the
store itself takes the area port. ``store`` is read-only there, so the composition root's ``Services``
(whose ``store`` is the whole ``Store``) satisfies every one of them, and mypy refuses a call to an
area the use case did not declare. Only ``app.wiring`` and ``app.services`` name ``Store`` or
``Services`` itself (``tests/unit/test_narrow_ports.py``).

One area needs no join: ``governance.checks`` takes ``JudgementStore``, ``governance.enforce``
``DecisionStore``, ``governance.fresh`` ``JobStore``, the team's month ``TeamMonthStore``,
``app.sweep.places`` ``SweepStore``, ``app.prices`` and ``app.stop_latencies`` ``PriceStore`` and
``governance.reporting`` ``DeliveryStore``.
"""

from __future__ import annotations

from typing import Protocol

from tuning_governor.ports.capacity import CapacityStore, SweepStore
from tuning_governor.ports.decisions import DecisionStore, DeliveryStore, JudgementStore
from tuning_governor.ports.jobs import JobStore
from tuning_governor.ports.prices import PriceStore
from tuning_governor.ports.queue import QueueStore
from tuning_governor.ports.team_months import TeamMonthStore
from tuning_governor.ports.trials import TrialStore


class JobDecisionStore(JobStore, DecisionStore, Protocol):
    """Jobs and their decisions: ``governance.admission_view`` (the listed jobs as admission sees
    them) and ``app.tag_rereads`` (a job's tags read again)."""


class LedgerStore(JobStore, CapacityStore, Protocol):
    """Jobs and the capacity ledger: ``governance.ledger_reconcile``."""


class LedgerDecisionStore(LedgerStore, DecisionStore, Protocol):
    """Jobs, the ledger and decisions: ``governance.admission_order`` and ``governance.wrong_stops``."""


class ActingStore(JobDecisionStore, DeliveryStore, Protocol):
    """Acting on a decision (its claim, the stop, the report): ``governance.actions``."""


class TeamActingStore(ActingStore, TeamMonthStore, Protocol):
    """A team's month and acting on its decisions: ``governance.team_months``."""


class AdmissionStore(LedgerDecisionStore, ActingStore, Protocol):
    """Admission through the capacity ledger: ``governance.admission``."""


class TrialsStore(JobStore, TrialStore, CapacityStore, JudgementStore, Protocol):
    """A job's trials and what they hold: ``governance.trials``, ``governance.trial_truth``,
    ``app.sweep.running_trials``."""


class GoverningStore(AdmissionStore, TeamActingStore, TrialsStore, PriceStore, Protocol):
    """Judging a job and acting on the decisions (every area but the queue and the sweeps):
    ``governance.engine``, ``app.finalise``, ``app.starting_checks``, ``app.checks.budget``,
    ``app.events.training``, ``app.sweep.warm_pools``."""


class SharesStore(ActingStore, QueueStore, Protocol):
    """The queue's shares (borrowing, preempting): ``app.queue.shares``."""


class QueueingStore(AdmissionStore, QueueStore, Protocol):
    """The admission queue: ``app.queue.admission``, ``app.queue.consumer``, ``app.queue.requeue``."""


class EventStore(GoverningStore, QueueStore, Protocol):
    """A tuning job's events, which may queue a job the governor stopped again: ``app.events.tuning``,
    ``app.events.tags``."""


class SweepingStore(EventStore, SweepStore, Protocol):
    """The sweep, every area (the member places' sweeps included): ``app.sweep.run``."""
