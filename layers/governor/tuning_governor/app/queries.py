"""Read-only questions about the governor's state, for the client tools (replay pages, reports).

The client package uses the layer through ``app`` and the ports, never governance's internals: these
answer as the rules would judge, without judging or acting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuning_governor.governance.team_months import team_month_spend

if TYPE_CHECKING:
    from datetime import datetime

    from tuning_governor.app.services import AppServices
    from tuning_governor.domain.pricing import PriceCatalog
    from tuning_governor.governance.facts import TeamMonthFacts
    from tuning_governor.ports import TeamMonthStore


def team_month(team: str, at: datetime, catalog: PriceCatalog, services: AppServices[TeamMonthStore]) -> TeamMonthFacts:
    """A team's spend in the calendar month of ``at`` as the team-budget rule judges it (finished trials
    plus what its running trials had accrued at ``at``); one read of the team's item."""
    return team_month_spend(team, at, catalog, services)
