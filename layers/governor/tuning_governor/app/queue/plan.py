"""The queue's one scheduling step, shared by the admission loop and ``check --submit``: the account's
limit per type, and the decisions on the waiting requests (the shares core when any team has a
``share``, else the quota-and-limits FIFO scheduler). Reads no store: the caller passes what it read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from tuning_governor.domain.capacity import Holder
from tuning_governor.domain.queue_on_shares import Progress, shares_schedule
from tuning_governor.domain.queue_schedule import QueueDecision, Scheduler, fifo_schedule
from tuning_governor.models.queue import QueuedRequest
from tuning_governor.policy import Policy
from tuning_governor.ports.quotas import Quotas


def account_limits(policy: Policy, quotas: Quotas | None, types: Iterable[str]) -> dict[str, int]:
    """The account's limit per type (the lower of the policy's quota and the applied Service Quota)."""
    out: dict[str, int] = {}
    for itype in sorted(set(types)):
        quota = quotas.training_quota(itype) if quotas else None
        limit = policy.effective_account_limit(itype, quota.value if quota else None)
        if limit is not None:
            out[itype] = limit
    return out


def queue_types(policy: Policy, live: Iterable[QueuedRequest]) -> set[str]:
    """The instance types a pass needs limits for: the waiting requests' and the shares'."""
    return {t for e in live for t in e.demand} | {t for s in policy.shares().values() for t in s.capacity}


def plan_decisions(
    policy: Policy,
    live: Sequence[QueuedRequest],
    holders: Sequence[Holder],
    capacity: Mapping[str, int],
    now: datetime,
    *,
    borrowed: Mapping[str, Mapping[str, int]] | None = None,
    progress: Mapping[str, Progress] | None = None,
    scheduler: Scheduler = fifo_schedule,
) -> list[QueueDecision]:
    """The decisions on ``live`` (in queue order), in the order to apply them. ``borrowed`` and
    ``progress`` (per running job: what it borrowed; completed trials, resumable) inform preemption."""
    terms = policy.shares()
    if terms:  # the shares core (docs/explanation/queue.md, "Integration: the queue on the shares core")
        return shares_schedule(live, holders, terms, capacity, now, borrowed, progress)
    limits = {team: dict(p.instances) for team, p in policy.teams.items() if p.instances}
    return scheduler(live, holders, limits, capacity)
