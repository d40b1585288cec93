"""The team area of ``MemoryStore``: month totals, running trials, month decisions (``TeamMonthStore``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from governor_sim.memory.table import MemoryTable
from tuning_governor.adapters.dynamodb.items import month_totals, team_decision_claim
from tuning_governor.adapters.dynamodb.keys import team_decision_sk, team_pk
from tuning_governor.domain.spend import RunningTrial, running_trials
from tuning_governor.models.decisions import Decision
from tuning_governor.ports import TeamMonthStore


class TeamMonthItems(MemoryTable):
    """The ``TeamMonthStore`` port in memory."""

    def team_running(self, team: str) -> list[RunningTrial]:
        return running_trials(self._read(team_pk(team), "RUNNING"))

    def team_month(self, team: str, month: str) -> dict[str, Any]:
        return month_totals(self._read(team_pk(team), "RUNNING") or {}, month)

    def team_spend(self, team: str, month: str) -> tuple[dict[str, Any], list[RunningTrial]]:
        item = self._read(team_pk(team), "RUNNING") or {}
        return month_totals(item, month), running_trials(item)

    def team_jobs_in_progress(self, team: str) -> list[dict[str, Any]]:
        return [item for item in self._by_gsi("STATUS#InProgress") if item.get("team") == team]

    def claim_team_decision(self, decision: Decision, month: str, mode: str, now: datetime) -> bool:
        item = team_decision_claim(decision, month, mode, now)
        with self._lock:
            old = self._get(item["pk"], item["sk"])
            if old is not None and old.get("state") != "pending":
                return False
            self._put(item)
            return True

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None:
        with self._lock:
            self._set(
                team_pk(decision.team or ""),
                team_decision_sk(decision.rule, decision.verdict, month),
                {"state": "done", "jobs": jobs},
            )

    def team_decisions(self, team: str) -> list[dict[str, Any]]:
        return self._query(team_pk(team), "DECISION#")


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[TeamMonthStore] = TeamMonthItems
