"""One-time budget checks: judge a job again at the moment its running trials' burn reaches its budget.

Between a job's events (hours apart while its trials train) only the sweep judges it, so a budget is
crossed up to one sweep interval before anyone looks. The governor knows, at each judgement, what
the job spends per hour and how much budget is left, so it asks for one more judgement at the
crossing: a one-time EventBridge Scheduler schedule (``at(...)``, deleted after it fires) that invokes
the budget-check function with ``{"budget_check": {"job": name, "at": <the second>}}`` (and the job's
``account`` and ``region`` outside the home place: ``ports.checks.check_input``). Scheduler's
precision is the minute (it runs a schedule at any second of the minute given), so the schedule names
the minute before and the check waits for its second (``app.checks.budget``). One schedule per job (its name is
derived from the job's), so a later estimate replaces the earlier one.

``CheckScheduler`` (``tuning_governor.ports.checks``) is the port; ``SchedulerChecks`` the EventBridge Scheduler adapter; ``PendingChecks``
the in-memory one for replays, the simulator and benchmarks, whose loops run the due checks on
their own clock.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from tuning_governor.errors import TransientError
from tuning_governor.models.place import place_in_key
from tuning_governor.ports.checks import check_input


def schedule_name(job_key: str) -> str:
    """The job's one check schedule. Tuning job names are <= 32 of [a-zA-Z0-9-]; schedule names allow
    64 of [0-9a-zA-Z-_.], so a home job's is its key behind a fixed prefix. A member place's key
    (``<account>/<region>/<name>``, up to 61 characters, with "/") is too long and not allowed: its
    schedule is named by 16 hex digits of the key's SHA-256 and the job's name (at most 56 characters)."""
    if place_in_key(job_key) is None:
        return f"budget-{job_key}"
    digest = hashlib.sha256(job_key.encode()).hexdigest()[:16]
    return f"budget-{digest}-{job_key.rsplit('/', 1)[-1]}"


SCHEDULER_PRECISION = timedelta(seconds=60)
"""EventBridge Scheduler invokes a target "with 60 second precision": a schedule at 1:00 runs "between
1:00:00 and 1:00:59" (User Guide, Schedule types), whatever seconds its at() expression names."""


def invocation_minute(at: datetime) -> datetime:
    """The minute to give Scheduler so that its invocation (any second of that minute) comes at or
    before ``at``: the minute holding ``at`` - 59 s. The check then waits at most 118 s for ``at``."""
    early = at - (SCHEDULER_PRECISION - timedelta(seconds=1))
    return early.replace(second=0, microsecond=0)


def _second_ceiling(at: datetime) -> datetime:
    floor = at.replace(microsecond=0)
    return floor if floor == at else floor + timedelta(seconds=1)


class SchedulerChecks:
    """EventBridge Scheduler: one one-time schedule per job in the stack's schedule group.

    The schedule is created, or updated when it exists (a job's crossing moves as its trials start and
    end); ``ActionAfterCompletion=DELETE`` removes it once it has fired, so nothing accumulates.
    Any error raises ``TransientError``; the caller logs it and goes on, since the sweep still judges
    the job and the next judgement asks again.
    """

    permissions: ClassVar[frozenset[str]] = frozenset(
        {"scheduler:CreateSchedule", "scheduler:UpdateSchedule", "iam:PassRole"}
    )

    def __init__(self, client: Any, *, group: str, target_arn: str, role_arn: str) -> None:
        """``client`` is a boto3 ``scheduler`` client, or a function that makes one on first use (most
        invocations schedule nothing, so a cold start need not build it)."""
        self._client = client
        self._group = group
        self._target = {"Arn": target_arn, "RoleArn": role_arn}

    def schedule(self, job_key: str, job_name: str, at: datetime) -> None:
        at = _second_ceiling(at.astimezone(UTC))
        when = invocation_minute(at).replace(tzinfo=None)
        request: dict[str, Any] = {
            "Name": schedule_name(job_key),
            "GroupName": self._group,
            "ScheduleExpression": f"at({when:%Y-%m-%dT%H:%M:%S})",
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "ActionAfterCompletion": "DELETE",
            "Target": {
                **self._target,
                "Input": json.dumps(check_input(job_key, job_name, at)),
                # A missed check costs at most one sweep interval: do not let retries pile up behind it.
                "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 300},
            },
        }
        if callable(self._client):
            self._client = self._client()
        try:
            try:
                self._client.create_schedule(**request)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConflictException":
                    raise
                self._client.update_schedule(**request)
        except ClientError as exc:
            # Whatever the cause (throttling, or a time already past when the request arrived), a check
            # not scheduled must not fail the event that asked for it: the caller logs it and the sweep
            # judges the job.
            code = exc.response.get("Error", {}).get("Code", "")
            raise TransientError(f"budget check for {job_key}: {code}") from exc
        except BotoCoreError as exc:
            raise TransientError(f"budget check for {job_key}: {type(exc).__name__}") from exc


@dataclass
class PendingChecks:
    """In memory: the latest requested check per job, handed out in time order by ``due``."""

    pending: dict[str, tuple[datetime, str]] = field(default_factory=dict)
    requested: int = 0
    # Every (time, job key) asked for, earliest first: an entry whose job has since been asked for another
    # time, or fired, is dropped when it comes to the top (a replay asks for the next due at every line).
    _times: list[tuple[datetime, str]] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._times = sorted((at, key) for key, (at, _) in self.pending.items())

    def schedule(self, job_key: str, job_name: str, at: datetime) -> None:
        self.pending[job_key] = (at, job_name)
        self.requested += 1
        heapq.heappush(self._times, (at, job_key))

    def next_due(self) -> datetime | None:
        times = self._times
        while times and (times[0][1] not in self.pending or self.pending[times[0][1]][0] != times[0][0]):
            heapq.heappop(times)
        return times[0][0] if times else None

    def due(self, until: datetime) -> list[tuple[datetime, str]]:
        """The checks due at or before ``until`` as (time, job key), earliest first; they are removed,
        as a one-time schedule is once it has fired."""
        ready = sorted((at, key) for key, (at, _) in self.pending.items() if at <= until)
        for _, key in ready:
            del self.pending[key]
        return ready

    def input_for(self, job_key: str) -> dict[str, Any]:
        """The input the check of ``job_key`` fires with (as the Scheduler adapter's schedule carries it)."""
        return check_input(job_key, self.pending[job_key][1])
