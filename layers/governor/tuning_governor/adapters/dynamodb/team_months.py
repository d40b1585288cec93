"""The team area of the DynamoDB adapter: month totals, running trials, month decisions (``TeamMonthStore``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tuning_governor.adapters.dynamodb.items import month_totals, team_decision_claim
from tuning_governor.adapters.dynamodb.keys import team_decision_sk, team_pk
from tuning_governor.adapters.dynamodb.table import Table, marshal, unmarshal
from tuning_governor.domain.spend import RunningTrial, running_trials
from tuning_governor.models.decisions import Decision
from tuning_governor.ports import TeamMonthStore


class TeamMonthTable(Table):
    """The ``TeamMonthStore`` port on the table."""

    def team_spend(self, team: str, month: str) -> tuple[dict[str, Any], list[RunningTrial]]:
        """The team's totals for ``month`` (``YYYY-MM``: finished_usd, trials, unpriced_trials, spot
        sums; empty before its first finished trial of the month) and its running trials, over all its
        tuning jobs: both are on the team's one item, read with one GetItem."""
        item = self._team_item(team)
        return month_totals(item, month), running_trials(item)

    def team_running(self, team: str) -> list[RunningTrial]:
        """The team's running trials, over all its tuning jobs (one GetItem)."""
        return running_trials(self._team_item(team))

    def team_month(self, team: str, month: str) -> dict[str, Any]:
        """The team's totals for ``month`` (see :meth:`team_spend`; one GetItem)."""
        return month_totals(self._team_item(team), month)

    def _team_item(self, team: str) -> dict[str, Any]:
        response = self._client.get_item(
            TableName=self._table, Key=marshal({"pk": team_pk(team), "sk": "RUNNING"}), ConsistentRead=True
        )
        return unmarshal(response["Item"]) if response.get("Item") else {}

    def team_jobs_in_progress(self, team: str) -> list[dict[str, Any]]:
        """The team's InProgress tuning jobs (one gsi1 Query, filtered by team; run per team breach only)."""
        return self._all(
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :p",
            FilterExpression="team = :team",
            ExpressionAttributeValues=marshal({":p": "STATUS#InProgress", ":team": team}),
        )

    def claim_team_decision(self, decision: Decision, month: str, mode: str, now: datetime) -> bool:
        """Claim a team's decision for ``month`` once (``TEAM#<team>`` / ``DECISION#<rule>#<verdict>#<month>``).

        True when this caller must act on it (new, or a retry of an unfinished one).
        """
        item = team_decision_claim(decision, month, mode, now)
        return self._conditional(
            self._client.put_item,
            TableName=self._table,
            Item=marshal(item),
            ConditionExpression="attribute_not_exists(pk) OR #state = :pending",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=marshal({":pending": "pending"}),
        )

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None:
        self._client.update_item(
            TableName=self._table,
            Key=marshal(
                {"pk": team_pk(decision.team or ""), "sk": team_decision_sk(decision.rule, decision.verdict, month)}
            ),
            UpdateExpression="SET #state = :done, jobs = :jobs",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=marshal({":done": "done", ":jobs": jobs}),
        )

    def team_decisions(self, team: str) -> list[dict[str, Any]]:
        """Every decision item of a team (for reports, the demo and tests)."""
        return self._all(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :d)",
            ExpressionAttributeValues=marshal({":pk": team_pk(team), ":d": "DECISION#"}),
        )


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[TeamMonthStore] = TeamMonthTable
