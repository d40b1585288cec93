"""A submitted tuning-job request in the governor's queue (docs/queue.md, "Submission path").

The submitter and team are what AWS said about the sender (SQS's ``SenderId`` mapped through the
policy's ``teams.<team>.submitters``), never what the message says. Pure: no AWS, no I/O.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

QueueState = Literal["queued", "admitting", "admitted", "expired", "refused"]
OPEN_STATES: frozenset[str] = frozenset({"queued", "admitting"})
"""States in which a request still waits (``admitting``: claimed by one admission, under a lease)."""

JOB_NAME_PREFIX = "q-"


def job_name_for(team: str, client_token: str) -> str:
    """The tuning job's name for a submission: the same for the same (team, token), so a retried
    creation finds the job it created (SageMaker's names are unique per account and region: the
    second Create fails with ResourceInUse). ``q-`` and 24 hex digits: 26 characters (SageMaker
    allows 32), unique per team and token with a collision chance of 2^-96 per pair."""
    digest = hashlib.sha256(f"{team}\0{client_token}".encode()).hexdigest()
    return f"{JOB_NAME_PREFIX}{digest[:24]}"


class QueuedRequest(BaseModel):
    """One submission, as the queue stores it."""

    model_config = ConfigDict(frozen=True)

    client_token: str = Field(min_length=1, max_length=128)
    team: str = Field(min_length=1)
    submitter: str
    """The submitting role's ARN (from ``SenderId``, resolved through the policy)."""
    owner: str | None = None
    """The submitting session's name (``SenderId`` after ``:``; with SSO, usually the person): the
    job's owner tag, and who reports mention."""
    job_name: str
    request: dict[str, Any]
    """The CreateHyperParameterTuningJob request, with ``HyperParameterTuningJobName`` = ``job_name``."""
    demand: dict[str, int]
    """Training instances per type the job holds at MaxParallel (MaxParallel x a trial's instances)."""
    priority: int = 0
    """Higher first; FIFO (``enqueued_at``, then the token) within one priority."""
    enqueued_at: datetime
    wait_until: datetime | None = None
    """Past this, a still-waiting request is expired (the team's ``max_wait_minutes``); None: no limit."""
    state: QueueState = "queued"
    reason: str | None = None
    """Why it was refused or expired; what it was admitted with."""
    fit_to_share: bool = False
    """The submitter's consent (``"fit_to_share": true`` in the message) to be admitted with a lower
    MaxParallelTrainingJobs when the asked one would wait (issue 20 item 4)."""
    borrowed: dict[str, int] = Field(default_factory=dict)
    """Admitted: the instances per type it was admitted with beyond its team's share (the shares
    core's ``Decision.borrowed``), so a later pass finds the borrowers to reclaim from."""
    claim_owner: str | None = None
    claim_until: datetime | None = None

    @property
    def waiting(self) -> bool:
        return self.state in OPEN_STATES

    def order(self) -> tuple[int, datetime, str]:
        """The queue's order: priority (higher first), then FIFO."""
        return (-self.priority, self.enqueued_at, self.client_token)
