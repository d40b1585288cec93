"""The job area of the store port: tuning jobs, their summaries and summary gaps, a job's items."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime
    from decimal import Decimal

    from tuning_governor.models.records import JobSummary
    from tuning_governor.models.tuning_job import TuningJob


class JobStore(Protocol):
    """Tuning jobs (``JOB#<key>`` / ``META``), their final summaries and what those still miss."""

    def upsert_job(
        self, job: TuningJob, *, region: str, team: str | None, owner: str | None, event_time: datetime
    ) -> bool:
        """Record a job's configuration and status. False (nothing written) when the event is stale: the
        stored status is terminal, or the stored LastModifiedTime is later."""
        ...

    def get_job(self, job_key: str) -> dict[str, Any] | None: ...

    def refresh_tags(self, job_key: str, *, tags: dict[str, str], owner: str | None, read_at: datetime) -> bool:
        """Replace a known, non-terminal job's tags and owner with those ListTags gave at ``read_at``
        (its team stays: docs/reference/policy.md, "Tags as they are now"). False (nothing written) when the job
        is unknown, has ended, or holds tags read later than ``read_at``."""
        ...

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
