"""The job area: tuning jobs, summaries, summary gaps, a job's items (``JobStore``).

A finalised job whose summary lacks trials SageMaker lists as finished, or whose first summary report
is not yet out on every channel, has a ``GAPS`` item (gsi1pk ``GAPS``, gsi1sk its end time): the sweep
finds every such job with one Query, and the item goes when the summary is complete.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from tuning_governor.adapters.store.area import META, Area
from tuning_governor.adapters.store.conditions import Cond, all_of, exists, fresh, missing, missing_or, not_in
from tuning_governor.adapters.store.items import (
    gaps_item,
    job_attributes,
    job_modified,
    summary_item,
    summary_job_attributes,
)
from tuning_governor.adapters.store.keys import iso, job_pk
from tuning_governor.adapters.store.port import Delete, Put, Update, assign, remove, sets
from tuning_governor.models.records import JobSummary
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.models.tuning_job import TuningJob


class Jobs(Area):
    """The ``JobStore`` port over the item table."""

    def upsert_job(
        self, job: TuningJob, *, region: str, team: str | None, owner: str | None, event_time: datetime
    ) -> bool:
        modified = job_modified(job, event_time)
        changes = sets(job_attributes(job, region=region, team=team, owner=owner, event_time=event_time))
        if job.status == "Stopping":
            # When the job itself was stopped (its first Stopping change): the summary uses it to tell
            # trials early stopping ended from trials the job's stop cut.
            changes.append(assign("stopping_at", modified, if_missing=True))
        return self._update((job_pk(job.key), META), changes, fresh(TUNING_TERMINAL, modified))

    def refresh_tags(self, job_key: str, *, tags: dict[str, str], owner: str | None, read_at: datetime) -> bool:
        at = iso(read_at)
        changes = sets({"tags": dict(tags), "tags_read_at": at})
        changes.append(assign("owner", owner) if owner else remove("owner"))
        newer = missing_or("tags_read_at", Cond("<=", ("tags_read_at",), at))
        when = all_of(exists("pk"), not_in("status", TUNING_TERMINAL), newer)
        return self._update((job_pk(job_key), META), changes, when)

    def get_job(self, job_key: str) -> dict[str, Any] | None:
        return self._items.get((job_pk(job_key), META))

    def jobs_with_status(self, status: str) -> list[dict[str, Any]]:
        return self._items.index(f"STATUS#{status}")

    def items(self, job_key: str) -> list[dict[str, Any]]:
        return self._items.query(job_pk(job_key))

    def write_summary(self, summary: JobSummary) -> None:
        meta = (job_pk(summary.job_key), META)
        self._items.transact([Put(summary_item(summary)), Update(meta, sets(summary_job_attributes(summary)))])

    def get_summary(self, job_key: str) -> JobSummary | None:
        item = self._items.get((job_pk(job_key), "SUMMARY"))
        return JobSummary.model_validate(item) if item else None

    def mark_gaps(self, job_key: str, *, job_name: str, region: str, ended_at: datetime, missing: list[str]) -> None:
        self._items.write(Put(gaps_item(job_key, job_name=job_name, region=region, ended_at=ended_at, missing=missing)))

    def jobs_with_gaps(self) -> list[dict[str, Any]]:
        return sorted(self._items.index("GAPS"), key=lambda item: str(item.get("gsi1sk", "")))

    def clear_gaps(self, job_key: str) -> None:
        self._items.write(Delete((job_pk(job_key), "GAPS")))

    def set_summary_reported(self, job_key: str, cost_usd: Decimal, at: datetime) -> bool:
        changes = sets({"summary_reported_usd": cost_usd, "summary_reported_at": at})
        return self._update((job_pk(job_key), META), changes, missing("summary_reported_at"))
