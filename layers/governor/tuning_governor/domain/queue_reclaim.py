"""Reclaiming lent capacity by preemption: which borrowing jobs to stop so a lender's request fits.

Only jobs admitted as borrowers (``Holding.borrowed`` on the type) of a team whose policy allows
preemption are candidates, and only while their team still holds more than its share of the type.
Among them the one with the fewest completed trials goes first (the least work lost; ties by key);
one that has launched its whole trial budget is never a candidate (nothing could resume it).
A lender's request causes stops only when stopping candidates frees enough for it on every type it
is blocked on; otherwise none is stopped for it (it waits for borrowers to finish). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from tuning_governor.domain.shares import Holding, Ledger


class Blocked(Protocol):
    """A lender's queued request, as reclaim reads it."""

    @property
    def key(self) -> str: ...
    @property
    def team(self) -> str: ...
    def demand(self, max_parallel: int | None = None) -> dict[str, int]: ...


def _candidates(holdings: Iterable[Holding], ledger: Ledger, itype: str, taken: set[str]) -> list[Holding]:
    found = []
    for holding in holdings:
        terms = ledger.shares.get(holding.team)
        if holding.key in taken or terms is None or not terms.preemptible or not holding.resumable:
            continue
        if holding.borrowed.get(itype, 0) > 0 and ledger.borrowed(holding.team, itype) > 0:
            found.append(holding)
    return sorted(found, key=lambda h: (h.completed_trials, h.key))


def _victims_for(
    request: Blocked, holdings: Sequence[Holding], ledger: Ledger, freed: Mapping[str, int], taken: set[str]
) -> list[Holding] | None:
    chosen: list[Holding] = []
    extra: dict[str, int] = {}
    for itype, count in sorted(request.demand().items()):
        for holding in _candidates(holdings, ledger, itype, taken | {h.key for h in chosen}):
            if ledger.available(request.team, itype) + freed.get(itype, 0) + extra.get(itype, 0) >= count:
                break
            chosen.append(holding)
            for kind, n in holding.demand.items():
                extra[kind] = extra.get(kind, 0) + n
        if ledger.available(request.team, itype) + freed.get(itype, 0) + extra.get(itype, 0) < count:
            return None
    return chosen


def reclaim(blocked: Sequence[Blocked], holdings: Sequence[Holding], ledger: Ledger) -> list[tuple[Holding, str, str]]:
    """The holdings to stop, each with the reason for its owner and the request it makes room for, for the lenders' ``blocked`` requests
    (each fits its team's idle share but not the free capacity), served in the order given."""
    stops: list[tuple[Holding, str, str]] = []
    freed: dict[str, int] = {}
    taken: set[str] = set()
    for request in blocked:
        victims = _victims_for(request, holdings, ledger, freed, taken)
        if victims is None:
            continue  # stopping every candidate would not be enough: stop none, wait for borrowers to end
        for holding in victims:
            taken.add(holding.key)
            borrowed = ", ".join(f"{n} {t}" for t, n in sorted(holding.borrowed.items()) if n)
            why = f"preempted: it borrows {borrowed} that team {request.team} needs for {request.key}"
            stops.append((holding, why, request.key))
            for itype, n in holding.demand.items():
                freed[itype] = freed.get(itype, 0) + n
        for itype, n in request.demand().items():
            freed[itype] = freed.get(itype, 0) - n
    return stops
