"""A submitted tuning-job request in the governor's queue (docs/explanation/queue.md, "Submission path").

The submitter and team are what AWS said about the sender (SQS's ``SenderId`` mapped through the
policy's ``teams.<team>.submitters``), never what the message says. Pure: no AWS, no I/O.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field

from tuning_governor.model_base import GovernorModel

QueueState = Literal["queued", "admitting", "admitted", "expired", "refused"]
OPEN_STATES: frozenset[str] = frozenset({"queued", "admitting"})
"""States in which a request still waits (``admitting``: claimed by one admission, under a lease)."""

JOB_NAME_PREFIX = "q-"
"""Every tuning job the queue creates is named under it (submissions and resumed jobs), so an SCP can
reserve it for the queue consumer's role (docs/iam/scp-protect-governance-tags.json)."""
QUEUE_TOKEN_TAG = "governance:queue-token"  # noqa: S105 - a tag key, not a secret
"""The governor's tag on a job it created for a queued request: a job found under the request's name
is the request's own only when it carries this value (``token_tag``) with the request's team and owner."""


def _digest(key: str, *parts: str) -> str:
    message = "\0".join(parts).encode()
    if key:
        return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()
    return hashlib.sha256(message).hexdigest()


def job_name_for(team: str, client_token: str, key: str = "") -> str:
    """The tuning job's name for a submission: the same for the same (team, token, key), so a retried
    creation finds the job it created (SageMaker's names are unique per account and region: the
    second Create fails with ResourceInUse). ``q-`` and 24 hex digits: 26 characters (SageMaker
    allows 32). ``key`` is the stack's secret name key (the consumer reads it once per cold start):
    with it the name is an HMAC nobody without the key can compute, so nobody can create it first;
    without it (offline, tests) a plain hash of the recipe."""
    return f"{JOB_NAME_PREFIX}{_digest(key, team, client_token)[:24]}"


def token_tag(team: str, client_token: str, key: str = "") -> str:
    """``QUEUE_TOKEN_TAG``'s value for a request: 32 hex digits of its own HMAC (another domain than
    the name's, so the tag, which readers of the job see, tells nothing about other names)."""
    return _digest(key, "token", team, client_token)[:32]


class QueuedRequest(GovernorModel):
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
