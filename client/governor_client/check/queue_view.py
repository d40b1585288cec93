"""``check --submit``: the verdict of the governor's submission queue on the request, by the same
scheduling step the admission loop runs (``tuning_governor.app.queue.plan``): created now, queued (its
position and what it waits behind), or refused because it can never fit (with the reason).

The request joins the waiting requests (offline: none; with ``--table``: the deployed queue's) as the
newest of its team at its team's priority; nothing is written anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tuning_governor.app.queue.plan import account_limits, plan_decisions, queue_types
from tuning_governor.app.queue.requests import demand_of, queue_terms
from tuning_governor.domain.capacity import Holder
from tuning_governor.domain.queue_schedule import QueueDecision
from tuning_governor.models.queue import QueuedRequest
from tuning_governor.policy import Policy
from tuning_governor.ports.quotas import Quotas

#: The request's key among the waiting ones (no queue name is a valid tuning job name with a space).
CHECKED = "(this request)"


@dataclass(frozen=True)
class QueuePlacement:
    """The queue's decision on the request: ``verdict`` admit / wait / refuse, ``position`` in its
    team's queue (wait), ``behind`` the waiting requests of the types it needs that are ahead of it."""

    decision: QueueDecision
    position: int | None
    behind: list[str]


@dataclass(frozen=True)
class SubmissionQueue:
    """What the queue holds now: the waiting requests (queue order), what holds instances, the quotas."""

    policy: Policy
    holders: Sequence[Holder] = ()
    waiting: Sequence[QueuedRequest] = ()
    quotas: Quotas | None = None
    fit_to_share: bool = False

    def place(self, request: Mapping[str, Any], team: str | None, now: datetime) -> QueuePlacement:
        """The queue's decision on ``request`` submitted now by ``team``."""
        mine = QueuedRequest(
            client_token=CHECKED,  # not a secret: the idempotency token of a request never sent
            team=team or "(no team)",
            submitter="check",
            job_name=CHECKED,
            request=dict(request),
            demand=demand_of(dict(request)),
            priority=queue_terms(self.policy, team or "", now)[0],
            enqueued_at=now,
            fit_to_share=self.fit_to_share,
        )
        live = sorted([*self.waiting, mine], key=lambda e: (-e.priority, e.enqueued_at, e.job_name == CHECKED))
        capacity = account_limits(self.policy, self.quotas, queue_types(self.policy, live))
        decisions = plan_decisions(self.policy, live, self.holders, capacity, now)
        decision = next(d for d in decisions if d.job_name == CHECKED)
        ahead = live[: live.index(mine)]
        waits = {d.job_name for d in decisions if d.verdict == "wait"}
        behind = [e.job_name for e in ahead if e.job_name in waits and set(e.demand) & set(mine.demand)]
        position = 1 + sum(e.team == mine.team for e in ahead if e.job_name in waits)
        return QueuePlacement(decision, position if decision.verdict == "wait" else None, behind)
