"""Paging, filtering and summary shapes of the SageMaker list calls the stand-in answers itself.

Pagination is by offset into the sorted, filtered list; the token is opaque to callers.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from moto.sagemaker.exceptions import AWSValidationException
from moto.sagemaker.models import FakeTrainingJob

from .training_job import SimTrainingJob


@dataclass(frozen=True)
class TrainingJobQuery:
    """A ListTrainingJobs request, validated (times as aware datetimes)."""

    max_results: int = 10
    next_token: str | None = None
    creation_time_after: datetime | None = None
    creation_time_before: datetime | None = None
    last_modified_time_after: datetime | None = None
    last_modified_time_before: datetime | None = None
    name_contains: str | None = None
    status_equals: str | None = None
    warm_pool_status_equals: str | None = None
    sort_by: str = "CreationTime"
    sort_order: str = "Ascending"

    def selects(self, job: FakeTrainingJob) -> bool:
        """Whether ``job`` is among the jobs paged through (name and time filters, strict bounds)."""
        created, modified = aware(job.creation_time), aware(job.last_modified_time)
        return (
            (self.name_contains is None or self.name_contains in job.training_job_name)
            and (self.creation_time_after is None or created > self.creation_time_after)
            and (self.creation_time_before is None or created < self.creation_time_before)
            and (self.last_modified_time_after is None or modified > self.last_modified_time_after)
            and (self.last_modified_time_before is None or modified < self.last_modified_time_before)
        )

    def keeps(self, job: FakeTrainingJob) -> bool:
        """Whether a job of a page is returned (the status filters, applied after MaxResults)."""
        warm = getattr(job, "warm_pool_status", None) or {}
        return (self.status_equals is None or job.training_job_status == self.status_equals) and (
            self.warm_pool_status_equals is None or warm.get("Status") == self.warm_pool_status_equals
        )

    def sort_key(self, job: FakeTrainingJob) -> tuple[Any, ...]:
        if self.sort_by == "Name":
            return (job.training_job_name,)
        if self.sort_by == "Status":
            return (job.training_job_status, job.training_job_name)
        return (aware(job.creation_time), job.training_job_name)


def aware(value: Any) -> datetime:
    """A moto or stand-in timestamp (datetime, naive meaning UTC, or its string) as an aware datetime."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def training_summary(job: FakeTrainingJob) -> dict[str, Any]:
    """A TrainingJobSummary; SecondaryStatus and WarmPoolStatus (moto lacks them) from the stand-in's jobs."""
    summary: dict[str, Any] = {
        "TrainingJobName": job.training_job_name,
        "TrainingJobArn": job.arn,
        "CreationTime": job.creation_time,
        "LastModifiedTime": job.last_modified_time,
        "TrainingJobStatus": job.training_job_status,
    }
    if job.training_end_time:
        summary["TrainingEndTime"] = job.training_end_time
    if isinstance(job, SimTrainingJob):
        summary["SecondaryStatus"] = job.secondary_status
        if job.warm_pool_status:
            summary["WarmPoolStatus"] = dict(job.warm_pool_status)
    return summary


def encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def decode_token(token: str) -> int:
    try:
        offset = int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"])
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise AWSValidationException("Invalid pagination token.") from exc
    if offset < 0:
        raise AWSValidationException("Invalid pagination token.")
    return offset


def sort_trials(trials: list[SimTrainingJob], sort_by: str, descending: bool) -> list[SimTrainingJob]:
    """``trials`` in ListTrainingJobsForHyperParameterTuningJob's order for ``sort_by``."""
    if sort_by == "FinalObjectiveMetricValue":
        # AWS drops trials without a final objective when sorting by it.
        trials = [t for t in trials if t.objective_value is not None]
        trials.sort(key=lambda t: (t.objective_value or 0.0, t.training_job_name), reverse=descending)
        return trials
    keys: dict[str, Callable[[SimTrainingJob], Any]] = {
        "Name": lambda t: t.training_job_name,
        "CreationTime": lambda t: (t.creation_time, t.training_job_name),
        "Status": lambda t: (t.training_job_status, t.training_job_name),
    }
    trials.sort(key=keys[sort_by], reverse=descending)
    return trials
