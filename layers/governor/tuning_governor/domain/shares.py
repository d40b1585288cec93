"""Quota shares as AWS Batch defines them for SageMaker Training job queues, applied to tuning jobs.

A team's share is a number of instances per type (at most 5 types, as Batch's capacity limits) with a
resource-sharing strategy: RESERVE (its idle share is kept for it; it never borrows), LEND (its idle
share may be used by borrowers; it never borrows) or LEND_AND_BORROW (lends, and may borrow idle
capacity up to ``borrow_limit`` percent of its own share per type; -1 = unlimited, Batch's default).
Quota not allocated to any share is the *pool*: borrowers may use it, and so may teams with no share
at all (only the pool: never another team's idle share). docs/explanation/queue.md ("Shares, lending and
borrowing") gives the rules and the AWS pages they follow.

``Ledger`` is the arithmetic of one moment: who holds what, what is free, what is idle in whose share.
Pure: no AWS, no I/O, no clock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Strategy = Literal["RESERVE", "LEND", "LEND_AND_BORROW"]
UNLIMITED_BORROW = -1
MAX_CAPACITY_LIMITS = 5
# A type with no known account quota: bounded by shares only. Large, finite, so the arithmetic stays int.
UNBOUNDED = 10**9


@dataclass(frozen=True)
class ShareTerms:
    """One team's share: ``capacity`` instances per type, its strategy, borrow limit and preemption.

    ``preemptible``: the team's jobs that run on borrowed capacity may be stopped to give a lender its
    share back (policy ``preemption: allowed``); when False they are only ever waited out.
    """

    capacity: Mapping[str, int]
    strategy: Strategy = "RESERVE"
    borrow_limit: int = UNLIMITED_BORROW
    preemptible: bool = False
    priority: int = 0

    @property
    def lends(self) -> bool:
        return self.strategy != "RESERVE"

    @property
    def borrows(self) -> bool:
        return self.strategy == "LEND_AND_BORROW"

    def share(self, itype: str) -> int:
        return self.capacity.get(itype, 0)

    def borrow_ceiling(self, itype: str) -> int:
        """The most instances of ``itype`` the team may hold beyond its share (UNBOUNDED = no limit)."""
        if not self.borrows:
            return 0
        if self.borrow_limit == UNLIMITED_BORROW:
            return UNBOUNDED
        return self.share(itype) * self.borrow_limit // 100


@dataclass(frozen=True)
class Holding:
    """A running tuning job as the scheduler sees it.

    ``demand``: instances per type it holds (MaxParallel x InstanceCount); ``borrowed``: the part of
    it that was admitted beyond its team's share (``Decision.borrowed`` at admission), per type.
    ``resumable``: False when it has launched its whole trial budget, so a warm-start resume could run
    nothing (AWS counts the parent's training jobs against the new job's limit): stopping it would
    only lose its trials in flight, and it frees its capacity soon on its own. Never preempted.
    """

    key: str
    team: str
    demand: Mapping[str, int]
    completed_trials: int = 0
    borrowed: Mapping[str, int] = field(default_factory=dict)
    resumable: bool = True


@dataclass
class Ledger:
    """Instances held per team and type, against the account's capacity and the teams' shares."""

    shares: Mapping[str, ShareTerms]
    capacity: Mapping[str, int]
    used: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))

    @classmethod
    def of(cls, holdings: Iterable[Holding], shares: Mapping[str, ShareTerms], capacity: Mapping[str, int]) -> Ledger:
        ledger = cls(shares=shares, capacity=capacity)
        for holding in holdings:
            ledger.add(holding.team, holding.demand)
        return ledger

    def add(self, team: str, demand: Mapping[str, int], sign: int = 1) -> None:
        row = self.used[team]
        for itype, count in demand.items():
            row[itype] = row.get(itype, 0) + sign * count

    def used_by(self, team: str, itype: str) -> int:
        return self.used.get(team, {}).get(itype, 0)

    def quota(self, itype: str) -> int:
        return self.capacity.get(itype, UNBOUNDED)

    def free(self, itype: str) -> int:
        return self.quota(itype) - sum(row.get(itype, 0) for row in self.used.values())

    def available(self, team: str, itype: str) -> int:
        """What ``team`` may take of ``itype`` now at most: the free capacity less the other teams' idle RESERVE shares."""
        return self.free(itype) - self.held_idle(itype, lending=False, but=team)

    def idle(self, team: str, itype: str) -> int:
        terms = self.shares.get(team)
        return max(0, terms.share(itype) - self.used_by(team, itype)) if terms is not None else 0

    def pool(self, itype: str) -> int:
        """Quota allocated to no share."""
        return max(0, self.quota(itype) - sum(t.share(itype) for t in self.shares.values()))

    def held_idle(self, itype: str, *, lending: bool, but: str | None = None) -> int:
        """Idle share of ``itype`` in RESERVE shares (``lending=False``) or in all shares (True), but ``but``'s."""
        return sum(
            self.idle(name, itype)
            for name, terms in self.shares.items()
            if name != but and (lending or not terms.lends)
        )

    def borrowed(self, team: str, itype: str) -> int:
        terms = self.shares.get(team)
        return max(0, self.used_by(team, itype) - (terms.share(itype) if terms else 0))

    def load(self, team: str, itypes: Iterable[str]) -> float:
        """The team's use against its share over ``itypes``, the highest: the fair-share key (lower first).

        A type the team has no share of counts 1.0 while it holds none of it, above 1 once it does.
        """
        terms = self.shares.get(team)
        worst = 0.0
        for itype in itypes:
            share = terms.share(itype) if terms else 0
            used = self.used_by(team, itype)
            worst = max(worst, used / share if share else (1.0 + used))
        return worst

    def admissible(self, team: str, demand: Mapping[str, int], *, frozen: Iterable[str] = ()) -> dict[str, int] | None:
        """The borrowed part per type if ``team`` may take ``demand`` now, else None.

        ``frozen``: types on which no new borrowing is allowed (a lender is reclaiming its share).
        """
        terms = self.shares.get(team)
        borrowed: dict[str, int] = {}
        for itype, count in demand.items():
            # Never into another team's idle RESERVE share, even on the team's own (lent, now busy) share.
            if count > self.available(team, itype):
                return None
            if terms is None:
                # No share: the pool only, never another team's idle share.
                if count > self.free(itype) - self.held_idle(itype, lending=True):
                    return None
                continue
            extra = self._borrow_needed(team, terms, itype, count, frozen)
            if extra is None:
                return None
            if extra:
                borrowed[itype] = extra
        return borrowed

    def _borrow_needed(self, team: str, terms: ShareTerms, itype: str, count: int, frozen: Iterable[str]) -> int | None:
        own = min(count, self.idle(team, itype))
        extra = count - own
        if not extra:
            return 0
        if not terms.borrows or itype in frozen:
            return None
        if self.borrowed(team, itype) + extra > terms.borrow_ceiling(itype):
            return None
        return extra

    def ceiling(self, team: str, itype: str) -> int:
        """The most of ``itype`` the team could ever hold at once: a request above it can never run.

        No share: the pool. Otherwise its share plus its borrow limit, and never the other teams' RESERVE shares.
        """
        terms = self.shares.get(team)
        if terms is None:
            return self.pool(itype)
        reserved = sum(t.share(itype) for name, t in self.shares.items() if name != team and not t.lends)
        reachable = self.quota(itype) - reserved if terms.borrows else terms.share(itype)
        return max(0, min(self.quota(itype), reachable, terms.share(itype) + terms.borrow_ceiling(itype)))
