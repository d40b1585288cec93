"""The store port: every area of the governor's table, joined for the wiring.

``Store`` is the governor's table, one port per area of it (each a Protocol of at most 12 methods):
``JobStore`` (jobs, summaries, gaps), ``TrialStore`` (trials, running trials), ``DecisionStore``,
``JudgementStore`` (the rules' marks on a job), ``DeliveryStore``, ``TeamMonthStore``, ``CapacityStore``,
``SweepStore`` (the places' last sweeps, on the capacity adapters), ``PriceStore`` and ``QueueStore``. ``Store`` joins them for the wiring; a module that needs one area asks for that
area's port. Adapters: :class:`tuning_governor.adapters.dynamodb.GovernorStore` (DynamoDB, in Lambda)
and ``governor_client.memory.MemoryStore`` (in memory, for replays, the simulator and the demo). One
contract suite per area (``tests/contract``) runs against both, so they cannot drift.

What every adapter promises, beyond the signatures:

* items read back have the same shapes and types on every adapter (DynamoDB's: numbers are
  ``Decimal``, times ISO strings, sets ``set``), and a caller may change what it was given without
  changing what is stored;
* conditional writes are first-writer-wins: a ``bool`` result is False (nothing written) when the
  write lost (stale event, claim already held, ledger version moved on, duplicate trial);
  ``StaleState`` where a method says so;
* a method that writes several items writes all of them or none;
* methods may be called from several threads at once (as concurrent Lambda invocations).
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


class Store(
    JobStore,
    TrialStore,
    DecisionStore,
    JudgementStore,
    DeliveryStore,
    TeamMonthStore,
    CapacityStore,
    SweepStore,
    PriceStore,
    QueueStore,
    Protocol,
):
    """The governor's table: every area port at once (what the composition root builds and wires)."""


AREAS: tuple[type, ...] = tuple(base for base in Store.__bases__ if base is not Protocol)
"""Every area port of the store, in the order ``Store`` joins them."""
