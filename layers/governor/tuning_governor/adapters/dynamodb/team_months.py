"""The team area of the DynamoDB adapter: month totals, running trials, month decisions (``TeamMonthStore``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from tuning_governor.adapters.dynamodb.items import month_totals, team_decision_claim
from tuning_governor.adapters.dynamodb.keys import DECISION_LEASE, PENDING_TEAM_STEPS, iso, team_decision_sk, team_pk
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

    def claim_team_decision(
        self, decision: Decision, month: str, mode: str, now: datetime, *, token: str
    ) -> dict[str, Any]:
        """Claim a team's decision for ``month`` (``TEAM#<team>`` / ``DECISION#<rule>#<verdict>#<month>``),
        one owner at a time: one conditional UpdateItem that writes the decision's fields only if absent
        and leases it to ``token``. The row after the call (as written, or as found when another owner
        holds it or it is done)."""
        item = team_decision_claim(decision, month, mode, now)
        fields = {k: v for k, v in item.items() if k not in {"pk", "sk", "state"}}
        names = {f"#f{i}": name for i, name in enumerate(fields)} | {"#state": "state"}
        values = {f":f{i}": value for i, value in enumerate(fields.values())}
        sets = [f"#f{i} = if_not_exists(#f{i}, :f{i})" for i in range(len(fields))]
        sets += ["#state = if_not_exists(#state, :pending)", "lease_token = :token", "lease_until = :until"]
        values |= {":pending": "pending", ":token": token, ":until": now + DECISION_LEASE, ":now": now}
        try:
            response = self._client.update_item(
                TableName=self._table,
                Key=marshal({"pk": item["pk"], "sk": item["sk"]}),
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression=(
                    "attribute_not_exists(pk) OR (#state = :pending AND (attribute_not_exists(lease_token)"
                    " OR lease_token = :token OR lease_until < :now))"
                ),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=marshal(values),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise self._translate(exc) from exc
            return unmarshal(exc.response.get("Item") or {})  # type: ignore[arg-type]
        return unmarshal(response["Attributes"])

    def release_team_decision(self, decision: Decision, month: str, token: str) -> None:
        self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal(
                {"pk": team_pk(decision.team or ""), "sk": team_decision_sk(decision.rule, decision.verdict, month)}
            ),
            UpdateExpression="REMOVE lease_token, lease_until",
            ConditionExpression="lease_token = :token",
            ExpressionAttributeValues=marshal({":token": token}),
        )

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None:
        self._client.update_item(
            TableName=self._table,
            Key=marshal(
                {"pk": team_pk(decision.team or ""), "sk": team_decision_sk(decision.rule, decision.verdict, month)}
            ),
            UpdateExpression="SET #state = :done, jobs = :jobs REMOVE lease_token, lease_until, gsi1pk, gsi1sk",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=marshal({":done": "done", ":jobs": jobs}),
        )

    def stale_team_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]:
        """Team decisions claimed before ``claimed_before`` and still pending (one Query on ``gsi1``)."""
        return self._all(
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :p AND gsi1sk < :before",
            ExpressionAttributeValues=marshal({":p": PENDING_TEAM_STEPS, ":before": iso(claimed_before)}),
        )

    def team_decisions(self, team: str) -> list[dict[str, Any]]:
        """Every decision item of a team (for reports, the demo and tests)."""
        return self._all(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :d)",
            ExpressionAttributeValues=marshal({":pk": team_pk(team), ":d": "DECISION#"}),
        )


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[TeamMonthStore] = TeamMonthTable
