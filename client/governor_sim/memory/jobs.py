"""The job area of ``MemoryStore``: tuning jobs, summaries, summary gaps, a job's items (``JobStore``)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from governor_sim.memory.table import Item, MemoryTable, fresh, stored
from tuning_governor.adapters.dynamodb.items import (
    gaps_item,
    job_attributes,
    job_modified,
    summary_item,
    summary_job_attributes,
)
from tuning_governor.adapters.dynamodb.keys import iso, job_pk
from tuning_governor.models.records import JobSummary
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.ports import JobStore


class JobItems(MemoryTable):
    """The ``JobStore`` port in memory."""

    def upsert_job(
        self, job: TuningJob, *, region: str, team: str | None, owner: str | None, event_time: datetime
    ) -> bool:
        modified = job_modified(job, event_time)
        attributes = job_attributes(job, region=region, team=team, owner=owner, event_time=event_time)
        with self._lock:
            meta = self._get(job_pk(job.key), "META") or {}
            if not fresh(meta, modified, TUNING_TERMINAL):
                return False

            def change(item: Item) -> None:
                item.update(stored(attributes))
                if job.status == "Stopping":
                    item.setdefault("stopping_at", modified)

            self._update(job_pk(job.key), "META", change)
            return True

    def refresh_tags(self, job_key: str, *, tags: dict[str, str], owner: str | None, read_at: datetime) -> bool:
        at = iso(read_at)
        with self._lock:
            meta = self._get(job_pk(job_key), "META")
            if meta is None or meta.get("status") in TUNING_TERMINAL or str(meta.get("tags_read_at") or "") > at:
                return False

            def change(item: Item) -> None:
                item.update(stored({"tags": dict(tags), "tags_read_at": at}))
                if owner:
                    item["owner"] = owner
                else:
                    item.pop("owner", None)

            self._update(job_pk(job_key), "META", change)
            return True

    def get_job(self, job_key: str) -> dict[str, Any] | None:
        return self._read(job_pk(job_key), "META")

    def jobs_with_status(self, status: str) -> list[dict[str, Any]]:
        return self._by_gsi(f"STATUS#{status}")

    def items(self, job_key: str) -> list[dict[str, Any]]:
        return self._query(job_pk(job_key))

    def forget_job(self, job_key: str) -> None:
        """Drop every item of the job's partition. Not part of the ``Store`` port (the deployed governor
        keeps a job's items until their expiry): a replay drops a job no later event or sweep can
        change (``governor_sim.replay_forget``), so that its memory does not grow with the log."""
        with self._lock:
            for item in self._partitions.pop(job_pk(job_key), {}).values():
                self._unindex(item)

    def write_summary(self, summary: JobSummary) -> None:
        with self._lock:
            self._put(summary_item(summary))
            self._set(job_pk(summary.job_key), "META", summary_job_attributes(summary))

    def get_summary(self, job_key: str) -> JobSummary | None:
        item = self._read(job_pk(job_key), "SUMMARY")
        return JobSummary.model_validate(item) if item else None

    def mark_gaps(self, job_key: str, *, job_name: str, region: str, ended_at: datetime, missing: list[str]) -> None:
        with self._lock:
            self._put(gaps_item(job_key, job_name=job_name, region=region, ended_at=ended_at, missing=missing))

    def jobs_with_gaps(self) -> list[dict[str, Any]]:
        return sorted(self._by_gsi("GAPS"), key=lambda item: str(item.get("gsi1sk", "")))

    def clear_gaps(self, job_key: str) -> None:
        with self._lock:
            self._delete(job_pk(job_key), "GAPS")

    def set_summary_reported(self, job_key: str, cost_usd: Decimal, at: datetime) -> bool:
        with self._lock:
            if "summary_reported_at" in (self._get(job_pk(job_key), "META") or {}):
                return False
            self._set(job_pk(job_key), "META", {"summary_reported_usd": cost_usd, "summary_reported_at": at})
            return True


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[JobStore] = JobItems
