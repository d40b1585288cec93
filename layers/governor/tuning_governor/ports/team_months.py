"""The team area of the store port: a team's month totals, running trials and month decisions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from tuning_governor.domain.spend import RunningTrial
    from tuning_governor.models.decisions import Decision


class TeamMonthStore(Protocol):
    """A team's ``RUNNING`` item (month totals, running trials) and its decisions per month."""

    def team_running(self, team: str) -> list[RunningTrial]: ...

    def team_month(self, team: str, month: str) -> dict[str, Any]:
        """The team's totals for ``month`` (``YYYY-MM``), kept on its ``RUNNING`` item; ``{}`` before its
        first finished trial of the month."""
        ...

    def team_spend(self, team: str, month: str) -> tuple[dict[str, Any], list[RunningTrial]]:
        """The team's totals for ``month`` and its running trials, from its one item (one read)."""
        ...

    def team_jobs_in_progress(self, team: str) -> list[dict[str, Any]]: ...

    def claim_team_decision(
        self, decision: Decision, month: str, mode: str, now: datetime, *, token: str
    ) -> dict[str, Any]:
        """Claim a team's decision for ``month``, one owner at a time: the row as it stands after the
        call. The caller owns it when the row is ``pending`` and its ``lease_token`` is ``token``: it
        was new, or pending and not leased to another token (or that lease, ``DECISION_LEASE``, ran
        out). The decision's figures and ``job_key`` stay those of its first claim, so its report is
        keyed by the decision, not by the event that found it. A ``done`` row: decided already."""
        ...

    def release_team_decision(self, decision: Decision, month: str, token: str) -> None:
        """Give back the lease ``token`` holds on the team's decision (nothing if it holds none)."""
        ...

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None: ...

    def stale_team_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]:
        """Team decisions claimed before ``claimed_before`` and still pending (their report, or a stop,
        left to do): what the sweep finishes for a team no judgement of a running job will carry on."""
        ...
