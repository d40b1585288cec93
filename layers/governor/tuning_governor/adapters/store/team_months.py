"""The team area: month totals, running trials, month decisions (``TeamMonthStore``). A team's running
trials and month totals share its ``RUNNING`` item, so its spend is one read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tuning_governor.adapters.store.area import Area, lease
from tuning_governor.adapters.store.conditions import any_of, eq, leasable, missing
from tuning_governor.adapters.store.decisions import team_decision_claim
from tuning_governor.adapters.store.keys import PENDING_TEAM_STEPS, iso, team_decision_sk, team_pk
from tuning_governor.adapters.store.port import Key, Update, assign, removes, sets
from tuning_governor.domain.spend import MONTH_PREFIX, RunningTrial, running_trials
from tuning_governor.models.decisions import Decision


class TeamMonths(Area):
    """The ``TeamMonthStore`` port over the item table."""

    def team_spend(self, team: str, month: str) -> tuple[dict[str, Any], list[RunningTrial]]:
        item = self._team_item(team)
        return month_totals(item, month), running_trials(item)

    def team_running(self, team: str) -> list[RunningTrial]:
        return running_trials(self._team_item(team))

    def team_month(self, team: str, month: str) -> dict[str, Any]:
        return month_totals(self._team_item(team), month)

    def _team_item(self, team: str) -> dict[str, Any]:
        return self._items.get((team_pk(team), "RUNNING")) or {}

    def team_jobs_in_progress(self, team: str) -> list[dict[str, Any]]:
        return [item for item in self._items.index("STATUS#InProgress") if item.get("team") == team]

    def claim_team_decision(
        self, decision: Decision, month: str, mode: str, now: datetime, *, token: str
    ) -> dict[str, Any]:
        """One conditional update that writes the decision's fields only if absent and leases it to
        ``token``: the row as written, or as found when another owner holds it or it is done."""
        item = team_decision_claim(decision, month, mode, now)
        fields = [assign(k, v, if_missing=True) for k, v in item.items() if k not in {"pk", "sk", "state"}]
        changes = [*fields, assign("state", "pending", if_missing=True), *sets(lease(token, now))]
        outcome = self._items.write(
            Update((item["pk"], item["sk"]), changes, any_of(missing("pk"), leasable(token, now)))
        )
        return outcome.item or {}

    def release_team_decision(self, decision: Decision, month: str, token: str) -> None:
        self._update(_key(decision, month), removes("lease_token", "lease_until"), eq("lease_token", token))

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None:
        done = sets({"state": "done", "jobs": jobs}) + removes("lease_token", "lease_until", "gsi1pk", "gsi1sk")
        self._update(_key(decision, month), done)

    def stale_team_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]:
        return self._items.index(PENDING_TEAM_STEPS, below=iso(claimed_before))

    def team_decisions(self, team: str) -> list[dict[str, Any]]:
        return self._items.query(team_pk(team), "DECISION#")


def _key(decision: Decision, month: str) -> Key:
    return team_pk(decision.team or ""), team_decision_sk(decision.rule, decision.verdict, month)


# -- the items -----------------------------------------------------------------------------------------------------
def month_totals(team_item: dict[str, Any], month: str) -> dict[str, Any]:
    """A team's totals for ``month`` from its item (``{}`` before its first trial of the month)."""
    prefix = f"{MONTH_PREFIX}{month}#"
    totals = {str(k).removeprefix(prefix): v for k, v in team_item.items() if str(k).startswith(prefix)}
    return (totals | {"team": team_item.get("team"), "month": month}) if totals else {}
