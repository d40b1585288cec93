"""The claim areas of the store port: a job's decisions, the rules' marks on a job, report deliveries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime
    from decimal import Decimal

    from tuning_governor.models.decisions import Decision


class DecisionStore(Protocol):
    """A job's decisions (``JOB#<key>`` / ``DECISION#<rule>#<verdict>``), each claimed once and its
    steps (stop, reports) finished through the step ledger."""

    def open_decision(
        self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True
    ) -> dict[str, Any] | None:
        """Claim a decision once: the stored row while its steps are to do (new or pending), else None."""
        ...

    def claim_decision(self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True) -> bool: ...

    def record_decision_action(
        self, decision: Decision, action: str, detail: str, *, stop_requested_at: datetime | None = None
    ) -> None:
        """Store the decision's action (``StaleState`` if the decision is not claimed)."""
        ...

    def lease_decision(self, job_key: str, rule: str, verdict: str, token: str, now: datetime) -> dict[str, Any] | None:
        """Make the caller (``token``) the one owner of a pending decision's steps for ``DECISION_LEASE``:
        the stored row (action, figures) when it is pending and not leased to another token (or that
        lease ran out); None otherwise (done, unknown, or another caller is carrying it out)."""
        ...

    def release_decision(self, job_key: str, rule: str, verdict: str, token: str) -> None:
        """Give back the lease ``token`` holds (nothing if it holds none): the next caller may act at once."""
        ...

    def finish_decision(self, decision: Decision, action: str, detail: str) -> None: ...

    def get_decision(self, job_key: str, rule: str, verdict: str) -> dict[str, Any] | None: ...

    def decisions(self, job_key: str) -> list[dict[str, Any]]: ...

    def pending_decisions(self, job_key: str) -> list[dict[str, Any]]: ...

    def stale_pending_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]: ...


class JudgementStore(Protocol):
    """What the rules remember on a job's item between events, each set under its own condition."""

    def mark_arrival(self, job_key: str, at: datetime) -> bool:
        """True only for the first caller."""
        ...

    def set_stagnation_spend(self, job_key: str, trials_seen: int, spent_usd: Decimal) -> bool: ...

    def set_budget_check(self, job_key: str, at: datetime) -> bool: ...


class DeliveryStore(Protocol):
    """Report deliveries (``JOB#<key>`` / ``DELIVERY#<kind>#<channel>``): each report sent once a channel."""

    def claim_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, token: str | None = None) -> bool:
        """Claim one report on one channel. False if sent, or being sent (claim younger than 5 minutes)
        under another ``token`` than the caller's."""
        ...

    def finish_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, sent: bool) -> None: ...

    def delivery_sent(self, job_key: str, kind: str, channel: str) -> bool: ...
