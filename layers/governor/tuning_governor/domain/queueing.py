"""The queue's scheduling core: which queued tuning jobs to create now, which wait, expire or are
refused, and which borrowers to stop so a lender gets its share back. Pure, deterministic, no AWS.

    schedule(queued, holdings, shares, capacity, now) -> list[Decision]

is the one entry point (a stable signature: the admission loop calls it on every capacity change and
applies the decisions in the order returned). The rules, in order (docs/explanation/queue.md, "Shares, lending
and borrowing"):

1. **Refuse** a request that can never run: its demand (MaxParallel x InstanceCount per type) is above
   the account's quota, or above its team's share plus borrow limit (no share: above the pool). With
   fit-to-share consent, only when even MaxParallel 1 is.
2. **Expire** a request queued for ``max_wait`` or longer.
3. **Order.** Within a team: priority (higher first), then FIFO (``enqueued_at``), then key; a request
   never overtakes an earlier one of its team. Across teams, fair share: the next request considered
   is the head of the team whose use is furthest below its share (``Ledger.load``, lowest first,
   ties by team name), recomputed after every admission.
4. **Admit** on the team's own idle share, else by borrowing (LEND_AND_BORROW only) idle capacity of
   lending shares and the pool within the borrow limit; never RESERVE shares, never over the quota.
   With consent, a request that does not fit is admitted with the largest lower MaxParallel that fits.
5. **Reclaim.** When a lender's head request fits its own share but not the free capacity (borrowers
   hold it), no new borrowing of that type is admitted; where the borrowers' policy allows
   preemption, the borrowers with the fewest completed trials are stopped until the lender fits (none
   is stopped if stopping all the candidates would not be enough).
6. Everything else **waits**, with its position in its team's queue and what it is behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from tuning_governor.domain.queue_reclaim import reclaim
from tuning_governor.domain.shares import Holding, Ledger, ShareTerms

Action = Literal["admit", "wait", "expire", "refuse", "preempt"]

__all__ = ["Action", "Decision", "Holding", "QueuedRequest", "ShareTerms", "schedule"]


@dataclass(frozen=True)
class QueuedRequest:
    """A tuning job request waiting in the queue.

    ``per_trial``: instances one trial uses, per type (the largest InstanceCount among the definitions
    of that type); its demand is ``max_parallel`` x that, as the capacity ledger charges a running job.
    """

    key: str
    team: str
    max_parallel: int
    per_trial: Mapping[str, int]
    enqueued_at: datetime
    priority: int = 0
    fit_to_share: bool = False
    max_wait: timedelta | None = None

    def demand(self, max_parallel: int | None = None) -> dict[str, int]:
        parallel = self.max_parallel if max_parallel is None else max_parallel
        return {itype: parallel * count for itype, count in sorted(self.per_trial.items()) if count}


@dataclass(frozen=True)
class Decision:
    """What to do with one queued request (admit, wait, expire, refuse) or one holding (preempt).

        admit: create the job with ``max_parallel`` (below the request's when ``fitted``) and record
        ``borrowed`` on its holding. wait: ``position`` (1 = next) in its team's queue, ``behind`` the keys
        ahead of it (for the head, the jobs being stopped to make room for it). preempt: stop the running job ``key`` (its capacity goes to ``for_key``, which is
    admitted by the pass after the job ends). ``reason`` says why, with the numbers, for the owner's report.
    """

    action: Action
    key: str
    team: str
    reason: str = ""
    max_parallel: int | None = None
    fitted: bool = False
    borrowed: Mapping[str, int] | None = None
    position: int | None = None
    behind: tuple[str, ...] = ()
    for_key: str | None = None
    """preempt: the queued request (a lender's) the stop makes room for."""


def _team_order(request: QueuedRequest) -> tuple[int, datetime, str]:
    return (-request.priority, request.enqueued_at, request.key)


def never_fits(request: QueuedRequest, ledger: Ledger) -> str | None:
    """Why ``request`` can never run under these shares and this quota; None when it can."""
    smallest = 1 if request.fit_to_share else request.max_parallel
    for itype, count in request.demand(smallest).items():
        if count > ledger.quota(itype):
            return f"needs {count} {itype}, above the account's quota of {ledger.quota(itype)}"
        ceiling = ledger.ceiling(request.team, itype)
        if count > ceiling:
            return (
                f"needs {count} {itype}, above the {ceiling} team {request.team} can ever hold (share + borrow limit)"
            )
    return None


def _triage(
    queued: Iterable[QueuedRequest], ledger: Ledger, now: datetime
) -> tuple[list[Decision], dict[str, list[QueuedRequest]]]:
    closed: list[Decision] = []
    queues: dict[str, list[QueuedRequest]] = {}
    for request in sorted(queued, key=lambda r: (r.team, *_team_order(r))):
        why = never_fits(request, ledger)
        if why is not None:
            closed.append(Decision("refuse", request.key, request.team, reason=why))
        elif request.max_wait is not None and now - request.enqueued_at >= request.max_wait:
            closed.append(
                Decision("expire", request.key, request.team, reason=f"queued longer than {request.max_wait}")
            )
        else:
            queues.setdefault(request.team, []).append(request)
    return closed, queues


def _try_admit(request: QueuedRequest, ledger: Ledger, frozen: set[str], *, fit: bool) -> Decision | None:
    borrowed = ledger.admissible(request.team, request.demand(), frozen=frozen)
    parallel = request.max_parallel
    if borrowed is None and fit and request.fit_to_share:
        for parallel in range(request.max_parallel - 1, 0, -1):
            borrowed = ledger.admissible(request.team, request.demand(parallel), frozen=frozen)
            if borrowed is not None:
                break
    if borrowed is None:
        return None
    fitted = parallel < request.max_parallel
    how = "borrowing " + _counts(borrowed) if borrowed else "on its share"
    reason = f"admitted {how}" + (f", MaxParallel {request.max_parallel} -> {parallel} to fit" if fitted else "")
    return Decision("admit", request.key, request.team, reason, parallel, fitted, dict(borrowed))


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {itype}" for itype, n in sorted(counts.items()))


def _lender_blocked(request: QueuedRequest, ledger: Ledger) -> set[str]:
    """Types on which ``request`` would fit its lending team's own idle share but not what is available to it
    (free capacity less other teams' idle RESERVE shares): borrowers hold its share."""
    terms = ledger.shares.get(request.team)
    if terms is None or not terms.lends:
        return set()
    demand = request.demand()
    if any(count > ledger.idle(request.team, itype) for itype, count in demand.items()):
        return set()
    return {itype for itype, count in demand.items() if count > ledger.available(request.team, itype)}


def _wait_reason(request: QueuedRequest, ledger: Ledger) -> str:
    parts = []
    for itype, count in request.demand().items():
        parts.append(
            f"needs {count} {itype}: {max(0, ledger.available(request.team, itype))} available (free, less other"
            f" teams' idle RESERVE shares), {ledger.idle(request.team, itype)} idle in team {request.team}'s share"
        )
    return "; ".join(parts)


def _waits(team_queue: Sequence[QueuedRequest], ledger: Ledger, stopping: Sequence[str] = ()) -> list[Decision]:
    head = team_queue[0]
    reason = _wait_reason(head, ledger) + (f"; stopping {', '.join(stopping)} to make room" if stopping else "")
    out = [Decision("wait", head.key, head.team, reason=reason, position=1, behind=tuple(stopping))]
    for index, request in enumerate(team_queue[1:], start=2):
        ahead = tuple(r.key for r in team_queue[: index - 1])
        out.append(
            Decision("wait", request.key, request.team, reason=f"behind {head.key}", position=index, behind=ahead)
        )
    return out


def _frozen_types(queues: Mapping[str, list[QueuedRequest]], ledger: Ledger) -> set[str]:
    frozen: set[str] = set()
    for team_queue in queues.values():
        frozen |= _lender_blocked(team_queue[0], ledger)
    return frozen


def _admit_round(
    queues: dict[str, list[QueuedRequest]], ledger: Ledger, frozen: set[str], *, borrowing: bool
) -> tuple[list[Decision], dict[str, list[QueuedRequest]]]:
    """Admit team heads in fair-share order; return the admissions and the queues whose head did not fit.

    Without ``borrowing`` only own-share (and, for teams with no share, pool) admissions are made at
    the asked MaxParallel, so every lender is served before any borrower in the same pass.
    """
    admitted: list[Decision] = []
    stuck: dict[str, list[QueuedRequest]] = {}
    no_borrowing = set(ledger.capacity) | {t for r in queues.values() for q in r for t in q.per_trial}
    while queues:
        team = min(queues, key=lambda name: (ledger.load(name, queues[name][0].per_trial), name))
        head = queues[team][0]
        decision = _try_admit(head, ledger, frozen if borrowing else no_borrowing, fit=borrowing)
        if decision is None:
            if borrowing:
                frozen |= _lender_blocked(head, ledger)
            stuck[team] = queues.pop(team)
            continue
        admitted.append(decision)
        ledger.add(team, head.demand(decision.max_parallel))
        queues[team].pop(0)
        if not queues[team]:
            del queues[team]
    return admitted, stuck


def schedule(
    queued: Iterable[QueuedRequest],
    holdings: Iterable[Holding],
    shares: Mapping[str, ShareTerms],
    capacity: Mapping[str, int],
    now: datetime,
) -> list[Decision]:
    """Decide every queued request and any preemption, as the module docstring's rules say.

    ``capacity``: the account's quota per type (a type absent: no account limit, shares only).
    ``shares``: per team (a team absent has no share: the pool only). Returns refusals and expiries,
    then admissions in the order to create them, then preemptions, then waits. Deterministic: the
    same inputs give the same list. Applying every admission never exceeds the quota or a share's
    limits, given holdings that did not.
    """
    running = list(holdings)
    ledger = Ledger.of(running, shares, capacity)
    closed, queues = _triage(queued, ledger, now)
    own, queues = _admit_round(queues, ledger, set(), borrowing=False)
    frozen = _frozen_types(queues, ledger)
    borrowed, queues = _admit_round(queues, ledger, frozen, borrowing=True)
    # Lenders are served in the fair-share order too.
    blocked = [queues[team][0] for team in sorted(queues, key=lambda t: (ledger.load(t, queues[t][0].per_trial), t))]
    preempted = [
        Decision("preempt", holding.key, holding.team, reason=why, for_key=room_for)
        for holding, why, room_for in reclaim([h for h in blocked if _lender_blocked(h, ledger)], running, ledger)
    ]
    stopping: dict[str, list[str]] = {}
    for decision in preempted:
        stopping.setdefault(decision.for_key or "", []).append(decision.key)
    waiting = [
        decision
        for _, team_queue in sorted(queues.items())
        for decision in _waits(team_queue, ledger, stopping.get(team_queue[0].key, ()))
    ]
    return closed + own + borrowed + preempted + waiting
