"""The store areas each use case uses: the joins of the store's area ports (``ports.store``) that the
application's use cases and the governance modules are given, named once here.

A use case's services are typed ``EngineServices[S]`` (governance) or ``AppServices[S]`` (app), ``S``
the join (or the one area port) of the areas it and everything it calls use; a module that takes the
store itself takes the area port. ``store`` is read-only there, so the composition root's ``Services``
(whose ``store`` is the whole ``Store``) satisfies every one of them, and mypy refuses a call to an
area the use case did not declare. Only ``app.wiring`` and ``app.services`` name ``Store`` itself
(``tests/unit/test_narrow_ports.py``).

Imported for typing only (under ``TYPE_CHECKING``): nothing here runs in a handler.
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


class ActingStore(JobStore, DecisionStore, DeliveryStore, Protocol):
    """Acting on a decision (``governance.actions``: the fresh read, the claim, the stop, the report)."""


class TeamActingStore(ActingStore, TeamMonthStore, Protocol):
    """A team's month and acting on its decisions (``governance.team_months``)."""


class TrialsStore(JobStore, TrialStore, CapacityStore, JudgementStore, PriceStore, Protocol):
    """A job's trials and what they hold (``governance.trials``, ``governance.trial_truth``, ``app.sweep.running_trials``)."""


class AdmissionStore(ActingStore, CapacityStore, PriceStore, Protocol):
    """Admission through the capacity ledger (``governance.admission`` and the modules it is made of)."""


class GoverningStore(AdmissionStore, TeamActingStore, TrialsStore, Protocol):
    """Judging a job and acting on the decisions (``governance.engine``), and the use cases that do it."""


class QueueingStore(AdmissionStore, QueueStore, Protocol):
    """The admission queue (``app.queue``): requests, their admission and the jobs queued again."""


class EventStore(GoverningStore, QueueStore, Protocol):
    """The events' use cases (``app.events``): governing, and queueing a job the governor stopped again."""


class SweepingStore(EventStore, SweepStore, Protocol):
    """The sweep (``app.sweep.run``): every area, the member places' sweeps included."""
