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
from tuning_governor.adapters.store.conditions import Cond, all_of, any_of, exists, fresh, missing, not_in
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
            # The job's own stop (its first Stopping): the summary tells trials early stopping ended from cut ones.
            changes.append(assign("stopping_at", modified, if_missing=True))
        return self._update((job_pk(job.key), META), changes, fresh(TUNING_TERMINAL, modified))

    def refresh_tags(self, job_key: str, *, tags: dict[str, str], owner: str | None, read_at: datetime) -> bool:
        at = iso(read_at)
        changes = sets({"tags": dict(tags), "tags_read_at": at})
        changes.append(assign("owner", owner) if owner else remove("owner"))
        newer = any_of(missing("tags_read_at"), Cond("<=", ("tags_read_at",), at))
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


# -- the items -----------------------------------------------------------------------------------------------------
def job_modified(job: TuningJob, event_time: datetime) -> str:
    """The time an upsert is ordered by: the job's LastModifiedTime, else the event's time."""
    return iso(job.last_modified_time or event_time)


def job_attributes(
    job: TuningJob, *, region: str, team: str | None, owner: str | None, event_time: datetime
) -> dict[str, Any]:
    """What ``upsert_job`` sets on the job's META item (attributes whose value is None are left alone)."""
    from tuning_governor.domain.large_batch.arrival import checked_request  # noqa: PLC0415 - job writers' only

    created = iso(job.creation_time or event_time)
    spot = {definition.enable_managed_spot_training for definition in job.definitions()}
    attributes: dict[str, Any] = {
        "job_name": job.name,
        "region": region,
        "status": job.status,
        "last_modified": job_modified(job, event_time),
        "creation_time": created,
        "max_parallel": job.max_parallel,
        "demand": job.demand(),
        "admission": job.admission_options(),
        # Whether admission was judged without the configuration (a thin event Describe did not complete).
        "arrival_facts": "incomplete" if job.lacks_arrival_facts() else "complete",
        # Whether its trials run on managed spot (None when definitions disagree or are unknown):
        # a running trial whose event lacks EnableManagedSpotTraining is judged by this.
        "spot_training": spot.pop() if len(spot) == 1 else None,
        "tags": dict(job.tags),
        # The objective per definition (a trial is judged on its own definition's direction).
        "objectives": [o.model_dump() for o in job.objectives()] or None,
        "gsi1pk": f"STATUS#{job.status}",
        "gsi1sk": created,
        "max_trials": job.max_trials,
        "strategy": job.config.strategy if job.config else None,
        "objective_name": job.objective.metric_name if job.objective else None,
        "objective_type": job.objective.type if job.objective else None,
        "arn": job.arn,
        "team": team,
        "owner": owner,
        # The execution roles its trials run as: a team listing them is the job's team (policy.identity).
        "roles": job.role_arns() or None,
        # What the large-batch rule judges on arrival (absent for a job it has nothing to judge on).
        "batch_request": checked_request(job) or None,
    }
    return {name: value for name, value in attributes.items() if value is not None}


def summary_item(summary: JobSummary) -> dict[str, Any]:
    return {"pk": job_pk(summary.job_key), "sk": "SUMMARY", "type": "summary"} | summary.model_dump(mode="python")


def summary_job_attributes(summary: JobSummary) -> dict[str, Any]:
    """What writing the summary sets on the job's META item: the job is terminal from then on."""
    return {
        "status": summary.status,
        "job_name": summary.job_name,
        "gsi1pk": f"STATUS#{summary.status}",
        "finalised_at": summary.finalised_at,
        "region": summary.region,
    }


def gaps_item(job_key: str, *, job_name: str, region: str, ended_at: datetime, missing: list[str]) -> dict[str, Any]:
    return {
        "pk": job_pk(job_key),
        "sk": "GAPS",
        "type": "summary-gaps",
        "gsi1pk": "GAPS",
        "gsi1sk": iso(ended_at),
        "job_name": job_name,
        "region": region,
        "ended_at": ended_at,
        "missing": sorted(missing),
    }
