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

    def claim_team_decision(self, decision: Decision, month: str, mode: str, now: datetime) -> bool: ...

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None: ...
