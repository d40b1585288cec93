"""The queue's admission on the shares core: ``domain.queueing.schedule`` fed from the queue store's
entries and the ledger's holders, its decisions mapped back to the admission loop's ``QueueDecision``.

The mapping (docs/explanation/queue.md, "Integration: the queue on the shares core"):

- a queued entry -> ``queueing.QueuedRequest``: key = the job name, MaxParallel from the request's
  ``ResourceLimits``, a trial's instances per type = demand / MaxParallel, priority and enqueue time
  as stored, ``fit_to_share`` = the submitter's consent (the request flag). Expiry stays with the
  admission loop (the entry's ``wait_until``), so the core gets no ``max_wait``.
- a holder -> ``Holding``: its instances in both markets; ``borrowed`` = what its admission recorded
  (``borrowed`` by key), else, for a team holding more than its share, the excess charged to its
  latest holders (so reclaim finds borrowers that were admitted before recording existed).
- capacity: the account's limit per type (a type with none: the core's UNBOUNDED).

Pure: no AWS, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from tuning_governor.domain.capacity import Holder
from tuning_governor.domain.queue_schedule import QueueDecision, Verdict
from tuning_governor.domain.queueing import Holding, QueuedRequest, ShareTerms, schedule
from tuning_governor.domain.shares import Ledger
from tuning_governor.models.queue import QueuedRequest as Entry

#: A running job's (completed trials, whether a warm-start resume could still run any of its budget).
Progress = tuple[int, bool]

_VERDICT: dict[str, Verdict] = {
    "admit": "admit",
    "wait": "wait",
    "refuse": "refuse",
    "expire": "refuse",
    "preempt": "preempt",
}


def max_parallel_of(request: Mapping[str, object]) -> int:
    """The request's HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs (1 if unset)."""
    config = request.get("HyperParameterTuningJobConfig")
    limits = config.get("ResourceLimits") if isinstance(config, dict) else None
    value = limits.get("MaxParallelTrainingJobs") if isinstance(limits, dict) else None
    return value if isinstance(value, int) and value > 0 else 1


def _as_request(entry: Entry) -> QueuedRequest:
    parallel = max_parallel_of(entry.request)
    return QueuedRequest(
        key=entry.job_name,
        team=entry.team,
        max_parallel=parallel,
        per_trial={t: max(1, n // parallel) for t, n in entry.demand.items()},
        enqueued_at=entry.enqueued_at,
        priority=entry.priority,
        fit_to_share=entry.fit_to_share,
    )


def _as_holdings(
    holders: Sequence[Holder],
    shares: Mapping[str, ShareTerms],
    borrowed: Mapping[str, Mapping[str, int]],
    progress: Mapping[str, Progress] | None = None,
) -> list[Holding]:
    excess: dict[tuple[str, str], int] = {}
    for team, terms in shares.items():
        for itype in terms.capacity:
            held = sum(h.instances.get(itype, 0) + h.spot.get(itype, 0) for h in holders if h.team == team)
            recorded = sum(b.get(itype, 0) for k, b in borrowed.items() if any(h.key == k for h in holders))
            excess[(team, itype)] = max(0, held - terms.share(itype) - recorded)
    out: list[Holding] = []
    for holder in reversed(holders):  # the latest first: the excess is charged to them
        demand = {t: holder.instances.get(t, 0) + holder.spot.get(t, 0) for t in {*holder.instances, *holder.spot}}
        mine = dict(borrowed.get(holder.key, {}))
        for itype, count in demand.items():
            left = excess.get((holder.team or "", itype), 0)
            if left and itype not in mine:
                mine[itype] = min(left, count)
                excess[(holder.team or "", itype)] = left - mine[itype]
        done, resumable = (progress or {}).get(holder.key, (0, True))
        lent = {t: n for t, n in mine.items() if n}
        out.append(Holding(holder.key, holder.team or "", demand, done, lent, resumable))
    return list(reversed(out))


def shares_schedule(
    entries: Sequence[Entry],
    holders: Sequence[Holder],
    shares: Mapping[str, ShareTerms],
    capacity: Mapping[str, int],
    now: datetime,
    borrowed: Mapping[str, Mapping[str, int]] | None = None,
    progress: Mapping[str, Progress] | None = None,
) -> list[QueueDecision]:
    """The shares core's decisions as the admission loop applies them (admissions in the core's order).

    ``progress``: per running job, (completed trials, resumable) where known: who preemption stops first."""
    holdings = _as_holdings(holders, shares, borrowed or {}, progress)
    decisions = schedule([_as_request(e) for e in entries], holdings, shares, capacity, now)
    return [
        QueueDecision(
            d.key,
            _VERDICT[d.action],
            d.reason,
            max_parallel=d.max_parallel if d.fitted else None,
            borrowed=dict(d.borrowed or {}),
            for_key=d.for_key,
        )
        for d in decisions
    ]


def shares_refusal(
    entry: Entry,
    max_parallel: int | None,
    holders: Sequence[Holder],
    shares: Mapping[str, ShareTerms],
    capacity: Mapping[str, int],
) -> str | None:
    """Why ``entry`` (at ``max_parallel``; None: as asked) no longer fits the shares given ``holders``
    (what the capacity ledger holds at the moment of commit), or None when it still does: a pass that
    decided on a stale view never takes another team's RESERVE share nor borrows beyond its limit."""
    request = _as_request(entry)
    demand = request.demand(max_parallel)
    ledger = Ledger.of(
        _as_holdings([h for h in holders if h.key != entry.job_name.lower()], shares, {}), shares, capacity
    )
    if ledger.admissible(entry.team, demand) is not None:
        return None
    wanted = ", ".join(f"{n} {t}" for t, n in sorted(demand.items()))
    return f"{wanted} no longer fits team {entry.team}'s share and what it may borrow (another admission took it)"
