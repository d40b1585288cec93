"""Ports: what the domain needs from the outside world, named once as Protocols.

``Store`` is the governor's table. Adapters: :class:`tuning_governor.adapters.store.GovernorStore`
(DynamoDB, in Lambda) and ``governor_sim.memory_store.MemoryStore`` (in memory, for replays, the
simulator and the demo). One contract suite (``tests/contract``) runs against both, so they cannot drift.

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

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime
    from decimal import Decimal

    from tuning_governor.domain.pricing import RegionCatalog
    from tuning_governor.governance.capacity import Holder, Ledger, Reservation
    from tuning_governor.governance.rules import Decision
    from tuning_governor.governance.spend import RunningTrial
    from tuning_governor.models.records import JobSummary, TrialRecord
    from tuning_governor.models.training_job import TrainingJob
    from tuning_governor.models.tuning_job import TuningJob


class Store(Protocol):
    """The governor's table: tuning jobs, trials, summaries, decisions, deliveries, capacity, team spend."""

    # -- tuning jobs and summaries ------------------------------------------------------------------
    def upsert_job(
        self, job: TuningJob, *, region: str, team: str | None, owner: str | None, event_time: datetime
    ) -> bool:
        """Record a job's configuration and status. False (nothing written) when the event is stale: the
        stored status is terminal, or the stored LastModifiedTime is later."""
        ...

    def get_job(self, job_key: str) -> dict[str, Any] | None: ...

    def jobs_with_status(self, status: str) -> list[dict[str, Any]]:
        """Job items with ``status``, by creation time."""
        ...

    def write_summary(self, summary: JobSummary) -> None:
        """Store the final summary and mark the job terminal (a re-run overwrites it)."""
        ...

    def get_summary(self, job_key: str) -> JobSummary | None: ...

    def set_summary_reported(self, job_key: str, cost_usd: Decimal, at: datetime) -> bool:
        """Keep the figures the first summary report went out with, once. False if set already."""
        ...

    def mark_gaps(
        self, job_key: str, *, job_name: str, region: str, ended_at: datetime, missing: list[str]
    ) -> None: ...

    def jobs_with_gaps(self) -> list[dict[str, Any]]:
        """``GAPS`` items of finalised jobs still missing trials or whose first summary report is not
        yet out on every channel, oldest end first."""
        ...

    def clear_gaps(self, job_key: str) -> None: ...

    def items(self, job_key: str) -> list[dict[str, Any]]:
        """Every item of a job, by sort key (reports, the demo, tests)."""
        ...

    # -- trials ---------------------------------------------------------------------------------------
    def record_trial(
        self,
        record: TrialRecord,
        *,
        job: dict[str, Any] | None,
        team: str | None = None,
        stagnation: dict[str, Any] | None = None,
        latest_end: datetime | None = None,
    ) -> dict[str, Any] | None:
        """Write a finished trial and add it to its job's (and team's month) totals, once, in one write of
        at most three items (trial, job, team). ``job`` is the job item as the caller read it (None: no
        item yet); the write is conditional on its ``trials_recorded`` (and, with ``stagnation``, on its
        stagnation state's ``trials_seen``) being unchanged, else ``StaleState`` (nothing written).
        ``stagnation`` is set on the job item, ``latest_end`` becomes its ``last_trial_end``. Returns
        the job item as written (``job_after_trial`` with those set); None for a duplicate."""
        ...

    def update_trial_warm_pool(self, record: TrialRecord) -> bool:
        """Grow a recorded trial's warm-pool time (and its job's totals by the difference). False when
        the trial is unknown or already holds as much."""
        ...

    def trial_records(self, job_key: str) -> list[TrialRecord]: ...

    def track_running(self, trial: RunningTrial, *, team: str | None) -> bool:
        """Mark a trial as running on its job (and team); False when its trial record exists."""
        ...

    def forget_running(self, job_key: str, trials: list[str], *, team: str | None) -> None: ...

    def team_running(self, team: str) -> list[RunningTrial]: ...

    def team_month(self, team: str, month: str) -> dict[str, Any]:
        """The team's totals for ``month`` (``YYYY-MM``), kept on its ``RUNNING`` item; ``{}`` before its
        first finished trial of the month."""
        ...

    def team_spend(self, team: str, month: str) -> tuple[dict[str, Any], list[RunningTrial]]:
        """The team's totals for ``month`` and its running trials, from its one item (one read)."""
        ...

    def team_jobs_in_progress(self, team: str) -> list[dict[str, Any]]: ...

    # -- report deliveries ------------------------------------------------------------------------------
    def claim_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, token: str | None = None) -> bool:
        """Claim one report on one channel. False if sent, or being sent (claim younger than 5 minutes)
        under another ``token`` than the caller's."""
        ...

    def finish_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, sent: bool) -> None: ...

    def delivery_sent(self, job_key: str, kind: str, channel: str) -> bool: ...

    # -- governance -----------------------------------------------------------------------------------
    def mark_arrival(self, job_key: str, at: datetime) -> bool:
        """True only for the first caller."""
        ...

    def set_stagnation_spend(self, job_key: str, trials_seen: int, spent_usd: Decimal) -> bool: ...

    def set_budget_check(self, job_key: str, at: datetime) -> bool: ...

    def open_decision(
        self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True
    ) -> dict[str, Any] | None:
        """Claim a decision once: the stored row while its steps are to do (new or pending), else None."""
        ...

    def claim_decision(self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True) -> bool: ...

    def record_decision_action(
        self, decision: Decision, action: str, detail: str, *, stop_requested_at: datetime | None = None
    ) -> None:
        """Store the decision's action (``StaleState`` if the decision is not claimed)."""
        ...

    def finish_decision(self, decision: Decision, action: str, detail: str) -> None: ...

    def get_decision(self, job_key: str, rule: str, verdict: str) -> dict[str, Any] | None: ...

    def decisions(self, job_key: str) -> list[dict[str, Any]]: ...

    def pending_decisions(self, job_key: str) -> list[dict[str, Any]]: ...

    def stale_pending_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]: ...

    def claim_team_decision(self, decision: Decision, month: str, mode: str, now: datetime) -> bool: ...

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None: ...

    # -- capacity -----------------------------------------------------------------------------------------
    def upsert_training_job(self, job: TrainingJob, *, team: str | None, event_time: datetime) -> bool: ...

    def set_warm_pool(self, job: TrainingJob, *, team: str | None) -> None:
        """An Available warm pool holds its instances, any other status releases them; a job with no
        warm-pool status that asked for no pool (no KeepAlivePeriodInSeconds > 0): nothing written."""
        ...

    def release_warm_pool(self, name: str) -> None: ...

    def warm_pool_names(self) -> set[str]: ...

    def holders(self, *, tuning_jobs: bool = True) -> list[Holder]: ...

    def put_capacity_snapshot(self, snapshot: dict[str, Any]) -> None: ...

    def read_ledger(self) -> Ledger: ...

    def commit_admission(
        self,
        version: int,
        job_key: str,
        reservation: Reservation | None,
        claim: tuple[Decision, str, datetime] | None = None,
    ) -> str:
        """``"committed"``, ``"conflict"`` (the ledger moved on: judge again) or ``"decided"`` (the
        decision was claimed already); all of it written or none."""
        ...

    def update_reservations(self, version: int, put: dict[str, Reservation], remove: list[str]) -> bool: ...

    def release_reservation(self, job_key: str) -> bool: ...

    # -- price catalogs -------------------------------------------------------------------------------------
    def put_price_catalog(self, catalog: RegionCatalog) -> None: ...

    def price_catalogs(self) -> list[RegionCatalog]: ...
