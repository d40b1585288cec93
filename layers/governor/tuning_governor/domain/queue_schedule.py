"""Which waiting requests to admit now: the scheduling core's interface, and a FIFO stand-in.

The interface (``Scheduler``) is what the queue's admission loop (``app.queue.admission``) calls:
the waiting requests in the queue's order, what holds instances now, each team's share and the
account's capacity, in; one decision per request, out. It only proposes: every admission is then
committed through the capacity ledger (``governance.admission.reserve``), serialized with every
arrival, so a proposal made on a stale view can never over-admit.

``fifo_schedule`` is a stand-in until the shares core (issue 20 items 3 and 4: RESERVE / LEND /
LEND_AND_BORROW, fair share across teams, fit-to-share) lands with the same signature: priority
then FIFO; a team's share is a hard limit (no lending); a request that does not fit waits and holds
back every later request that needs a type it is waiting for, so a large request is not starved by
small ones behind it (within a team blocked only by its own share, other teams go on). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from tuning_governor.domain.capacity import Holder, total
from tuning_governor.models.queue import QueuedRequest

Verdict = Literal["admit", "wait", "refuse", "preempt"]


@dataclass(frozen=True)
class QueueDecision:
    """What to do with one waiting request now, and why (shown to its owner)."""

    job_name: str
    verdict: Verdict
    reason: str
    max_parallel: int | None = None
    """admit: create the job with this MaxParallelTrainingJobs (fit to share); None = as asked."""
    borrowed: Mapping[str, int] = field(default_factory=dict)
    """admit: instances per type beyond the team's share, recorded on the request."""
    for_key: str | None = None
    """preempt (``job_name`` is a running job): the waiting request the stop makes room for."""


class Scheduler(Protocol):
    def __call__(
        self,
        entries: Sequence[QueuedRequest],
        holdings: Sequence[Holder],
        shares: Mapping[str, Mapping[str, int]],
        capacity: Mapping[str, int],
    ) -> list[QueueDecision]:
        """``entries`` in the queue's order; ``holdings``: what holds instances now (both markets);
        ``shares``: team -> instance type -> the most it may hold (a type not listed: no team limit);
        ``capacity``: instance type -> the account's limit (a type not listed: unknown, no limit)."""
        ...


def never_fits(
    entry: QueuedRequest, shares: Mapping[str, Mapping[str, int]], capacity: Mapping[str, int]
) -> str | None:
    """Why ``entry`` can never run, even on an idle account (None: it can)."""
    share = shares.get(entry.team, {})
    for itype, wanted in sorted(entry.demand.items()):
        if itype in capacity and wanted > capacity[itype]:
            return f"{itype}: demand {wanted} > the account's limit {capacity[itype]}: it can never run"
        if itype in share and wanted > share[itype]:
            return f"{itype}: demand {wanted} > team {entry.team}'s share {share[itype]}: it can never run"
    return None


def fifo_schedule(
    entries: Sequence[QueuedRequest],
    holdings: Sequence[Holder],
    shares: Mapping[str, Mapping[str, int]],
    capacity: Mapping[str, int],
) -> list[QueueDecision]:
    """The stand-in ``Scheduler`` (see the module docstring)."""
    used = total(holdings, market="all")
    team_used = {team: total(holdings, team=team, market="all") for team in {h.team for h in holdings if h.team}}
    blocked: set[str] = set()  # types an earlier waiting request waits for (account-wide)
    team_blocked: dict[str, set[str]] = {}  # types an earlier request of the team waits for (its share)
    out: list[QueueDecision] = []
    for entry in entries:
        refused = never_fits(entry, shares, capacity)
        if refused is not None:
            out.append(QueueDecision(entry.job_name, "refuse", refused))
            continue
        mine = team_used.setdefault(entry.team, {})
        share = shares.get(entry.team, {})
        behind = sorted((blocked | team_blocked.get(entry.team, set())) & set(entry.demand))
        short = [t for t, n in sorted(entry.demand.items()) if t in capacity and used.get(t, 0) + n > capacity[t]]
        over = [t for t, n in sorted(entry.demand.items()) if t in share and mine.get(t, 0) + n > share[t]]
        if behind or short or over:
            reason = _wait_reason(entry, behind, short, over)
            out.append(QueueDecision(entry.job_name, "wait", reason))
            blocked |= set(short)
            team_blocked.setdefault(entry.team, set()).update(over)  # holds back only its own team
            continue
        for itype, wanted in entry.demand.items():
            used[itype] = used.get(itype, 0) + wanted
            mine[itype] = mine.get(itype, 0) + wanted
        out.append(QueueDecision(entry.job_name, "admit", "fits the account's quota and the team's share"))
    return out


def _wait_reason(entry: QueuedRequest, behind: list[str], short: list[str], over: list[str]) -> str:
    if short:
        return f"waiting for {', '.join(short)}: the account's quota is in use"
    if over:
        return f"waiting for {', '.join(over)}: team {entry.team}'s share is in use"
    return f"waiting behind an earlier request for {', '.join(behind)}"
