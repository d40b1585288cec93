"""The team area of ``MemoryStore``: month totals, running trials, month decisions (``TeamMonthStore``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from governor_sim.memory.table import Item, MemoryTable, copied, stored
from tuning_governor.adapters.dynamodb.items import month_totals, team_decision_claim
from tuning_governor.adapters.dynamodb.keys import DECISION_LEASE, PENDING_TEAM_STEPS, iso, team_decision_sk, team_pk
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

    def claim_team_decision(
        self, decision: Decision, month: str, mode: str, now: datetime, *, token: str
    ) -> dict[str, Any]:
        item = team_decision_claim(decision, month, mode, now)
        with self._lock:
            old = self._get(item["pk"], item["sk"])
            if old is not None:
                holder, until = old.get("lease_token"), old.get("lease_until")
                held = holder is not None and holder != token and str(until) >= stored(now)
                if old.get("state") != "pending" or held:
                    found: dict[str, Any] = copied(old)
                    return found
            lease = {"lease_token": token, "lease_until": now + DECISION_LEASE}
            self._put(stored(item) | copied(old or {}) | stored(lease))
            claimed: dict[str, Any] = copied(self._get(item["pk"], item["sk"]) or {})
            return claimed

    def release_team_decision(self, decision: Decision, month: str, token: str) -> None:
        pk, sk = team_pk(decision.team or ""), team_decision_sk(decision.rule, decision.verdict, month)

        def release(item: Item) -> None:
            item.pop("lease_token", None)
            item.pop("lease_until", None)

        with self._lock:
            if (self._get(pk, sk) or {}).get("lease_token") == token:
                self._update(pk, sk, release)

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None:
        values = stored({"state": "done", "jobs": jobs})

        def finish(item: Item) -> None:
            item.update(values)
            for name in ("lease_token", "lease_until", "gsi1pk", "gsi1sk"):
                item.pop(name, None)

        with self._lock:
            self._update(team_pk(decision.team or ""), team_decision_sk(decision.rule, decision.verdict, month), finish)

    def stale_team_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]:
        return self._by_gsi(PENDING_TEAM_STEPS, below=iso(claimed_before))

    def team_decisions(self, team: str) -> list[dict[str, Any]]:
        return self._query(team_pk(team), "DECISION#")


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[TeamMonthStore] = TeamMonthItems
