"""The trial area of the store port: finished trials counted once, and trials still running."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from tuning_governor.domain.spend import RunningTrial
    from tuning_governor.models.records import TrialRecord


class TrialStore(Protocol):
    """Trial rows (``JOB#<key>`` / ``TRIAL#<name>``) and the running totals and running trials they move."""

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
        the job item as written (``domain.totals.job_after_trial`` with those set); None for a duplicate."""
        ...

    def update_trial_warm_pool(self, record: TrialRecord, *, team: str | None = None) -> bool:
        """Grow a recorded trial's warm-pool time, and its job's totals and (with ``team``) its team's
        month totals by the difference, in one write. False when the trial is unknown or already holds
        as much."""
        ...

    def trial_records(self, job_key: str) -> list[TrialRecord]: ...

    def track_running(self, trial: RunningTrial, *, team: str | None) -> bool:
        """Mark a trial as running on its job (and team); False when its trial record exists."""
        ...

    def forget_running(self, job_key: str, trials: list[str], *, team: str | None) -> None: ...
