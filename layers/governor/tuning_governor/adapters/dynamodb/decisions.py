"""The claim areas of the DynamoDB adapter: decisions, the rules' marks on a job, report deliveries
(``DecisionStore``, ``JudgementStore``, ``DeliveryStore``)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from tuning_governor.adapters.dynamodb.items import decision_claim, delivery_claim, delivery_sent
from tuning_governor.adapters.dynamodb.keys import (
    CLAIM_TIMEOUT,
    DECISION_LEASE,
    PENDING_STEPS,
    decision_sk,
    delivery_sk,
    iso,
    job_partition,
    job_pk,
)
from tuning_governor.adapters.dynamodb.table import Table, marshal, unmarshal
from tuning_governor.errors import StaleState
from tuning_governor.models.decisions import Decision
from tuning_governor.ports import DecisionStore, DeliveryStore, JudgementStore


class DecisionTable(Table):
    """The ``DecisionStore``, ``JudgementStore`` and ``DeliveryStore`` ports on the table."""

    def open_decision(
        self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True
    ) -> dict[str, Any] | None:
        """Claim a decision once. The stored row when this caller must carry out its steps (a new
        claim, or one a failed attempt left pending: its stored action and figures win over the
        caller's); None when the decision is done."""
        item = decision_claim(decision, mode, now, own_report=own_report)
        try:
            self._client.put_item(
                TableName=self._table,
                Item=marshal(item),
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise self._translate(exc) from exc
            old: dict[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            stored = unmarshal(old) if old else self.get_decision(decision.job_key, decision.rule, decision.verdict)
            return stored if stored is not None and stored.get("state") == "pending" else None
        return unmarshal(marshal(item))

    def claim_decision(self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True) -> bool:
        """Record a decision once. True when this caller must act on it: new, or left pending before
        its action was recorded. A pending decision whose action is recorded is left to the step
        ledger (``guard.resume_decision``), which sends its reports with that action."""
        stored = self.open_decision(decision, mode, now, own_report=own_report)
        return stored is not None and stored.get("action") is None

    def record_decision_action(
        self, decision: Decision, action: str, detail: str, *, stop_requested_at: datetime | None = None
    ) -> None:
        """The decision's stop step is done: its action is stored (a retry never stops again) and, for
        a stop that took effect, the job item's ``stop_requested_at`` is set (once) in the same write."""
        items: list[Any] = [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": marshal(
                        {"pk": job_pk(decision.job_key), "sk": decision_sk(decision.rule, decision.verdict)}
                    ),
                    "UpdateExpression": "SET #action = :action, action_detail = :detail",
                    "ConditionExpression": "attribute_exists(pk)",
                    "ExpressionAttributeNames": {"#action": "action"},
                    "ExpressionAttributeValues": marshal({":action": action, ":detail": detail}),
                }
            }
        ]
        if stop_requested_at is not None:
            items.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": marshal({"pk": job_pk(decision.job_key), "sk": "META"}),
                        "UpdateExpression": "SET stop_requested_at = if_not_exists(stop_requested_at, :at)",
                        "ConditionExpression": "attribute_exists(pk)",
                        "ExpressionAttributeValues": marshal({":at": stop_requested_at}),
                    }
                }
            )
        if not self._transact_if_first_holds(items):
            raise StaleState(f"decision {decision.rule}#{decision.verdict} of {decision.job_key} is not claimed")

    def lease_decision(self, job_key: str, rule: str, verdict: str, token: str, now: datetime) -> dict[str, Any] | None:
        """Lease a pending decision's steps to ``token`` (one conditional UpdateItem): the row as written,
        or None when it is done, unknown, or leased to another token until later than ``now``."""
        try:
            response = self._client.update_item(
                TableName=self._table,
                Key=marshal({"pk": job_pk(job_key), "sk": decision_sk(rule, verdict)}),
                UpdateExpression="SET lease_token = :token, lease_until = :until",
                ConditionExpression=(
                    "#state = :pending AND (attribute_not_exists(lease_token) OR lease_token = :token"
                    " OR lease_until < :now)"
                ),
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues=marshal(
                    {":token": token, ":until": now + DECISION_LEASE, ":now": now, ":pending": "pending"}
                ),
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise self._translate(exc) from exc
        return unmarshal(response["Attributes"])

    def release_decision(self, job_key: str, rule: str, verdict: str, token: str) -> None:
        self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": job_pk(job_key), "sk": decision_sk(rule, verdict)}),
            UpdateExpression="REMOVE lease_token, lease_until",
            ConditionExpression="lease_token = :token",
            ExpressionAttributeValues=marshal({":token": token}),
        )

    def finish_decision(self, decision: Decision, action: str, detail: str) -> None:
        """Every step of the decision is done: it leaves the pending steps (``gsi1``) and its lease."""
        self._client.update_item(
            TableName=self._table,
            Key=marshal({"pk": job_pk(decision.job_key), "sk": decision_sk(decision.rule, decision.verdict)}),
            UpdateExpression=(
                "SET #state = :done, #action = :action, action_detail = :detail"
                " REMOVE gsi1pk, gsi1sk, lease_token, lease_until"
            ),
            ExpressionAttributeNames={"#state": "state", "#action": "action"},
            ExpressionAttributeValues=marshal({":done": "done", ":action": action, ":detail": detail}),
        )

    def get_decision(self, job_key: str, rule: str, verdict: str) -> dict[str, Any] | None:
        response = self._client.get_item(
            TableName=self._table,
            Key=marshal({"pk": job_pk(job_key), "sk": decision_sk(rule, verdict)}),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return unmarshal(item) if item else None

    def decisions(self, job_key: str) -> list[dict[str, Any]]:
        _, _, decisions = job_partition(self._query(job_pk(job_key)))
        return decisions

    def pending_decisions(self, job_key: str) -> list[dict[str, Any]]:
        """A job's decisions with a step still to do (one Query on the job's partition)."""
        return self._all(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :d)",
            FilterExpression="#state = :pending",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=marshal({":pk": job_pk(job_key), ":d": "DECISION#", ":pending": "pending"}),
        )

    def stale_pending_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]:
        """Decisions of any job claimed before ``claimed_before`` and still pending (one Query on ``gsi1``,
        which lists only pending decisions)."""
        return self._all(
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :p AND gsi1sk < :before",
            ExpressionAttributeValues=marshal({":p": PENDING_STEPS, ":before": iso(claimed_before)}),
        )

    def mark_arrival(self, job_key: str, at: datetime) -> bool:
        """True only for the first caller: a job's arrival is judged once, never again on a later event."""
        return self._set_once(job_pk(job_key), "META", "arrival_evaluated_at", at)

    def set_stagnation_spend(self, job_key: str, trials_seen: int, spent_usd: Decimal) -> bool:
        """Store the job's spend at its last improvement, unless a later trial has advanced the state."""
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": job_pk(job_key), "sk": "META"}),
            UpdateExpression="SET stagnation.spent_at_improvement = :spent",
            ConditionExpression="stagnation.trials_seen = :seen",
            ExpressionAttributeValues=marshal({":spent": spent_usd, ":seen": trials_seen}),
        )

    def set_budget_check(self, job_key: str, at: datetime) -> bool:
        """Remember the time of the job's scheduled budget check, so an unchanged estimate is not asked
        for again on every event (False: the job has no item)."""
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": job_pk(job_key), "sk": "META"}),
            UpdateExpression="SET budget_check_at = :at",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues=marshal({":at": at}),
        )

    def mark_stop_requested(self, job_key: str, at: datetime) -> bool:
        return self._set_once(job_pk(job_key), "META", "stop_requested_at", at)

    def _set_once(self, pk: str, sk: str, attribute: str, at: datetime) -> bool:
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": pk, "sk": sk}),
            UpdateExpression="SET #a = :at",
            ConditionExpression="attribute_not_exists(#a)",
            ExpressionAttributeNames={"#a": attribute},
            ExpressionAttributeValues=marshal({":at": at}),
        )

    def claim_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, token: str | None = None) -> bool:
        """Claim the right to send one report on one channel. False if sent, or being sent, already.

        A claim held under the same ``token`` is taken again: the caller's own claim, whose answer was
        lost (the write happened, the caller saw an error), so nothing can have been sent under it."""
        condition = "attribute_not_exists(pk) OR (#state = :sending AND claimed_at < :stale)"
        values: dict[str, Any] = {":sending": "sending", ":stale": now - CLAIM_TIMEOUT}
        if token:
            condition += " OR (#state = :sending AND claim_token = :token)"
            values[":token"] = token
        return self._conditional(
            self._client.put_item,
            TableName=self._table,
            Item=marshal(delivery_claim(job_key, kind, channel, now, token)),
            ConditionExpression=condition,
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=marshal(values),
        )

    def finish_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, sent: bool) -> None:
        """Mark the report sent on the channel (for good), or give the claim up (it was not sent).
        Idempotent; a throttled or failed call raises ``TransientError``."""
        try:
            if sent:
                self._client.put_item(TableName=self._table, Item=marshal(delivery_sent(job_key, kind, channel, now)))
            else:
                self._client.delete_item(
                    TableName=self._table, Key=marshal({"pk": job_pk(job_key), "sk": delivery_sk(kind, channel)})
                )
        except ClientError as exc:
            raise self._translate(exc) from exc

    def delivery_sent(self, job_key: str, kind: str, channel: str) -> bool:
        """Whether the report went out on the channel (False while a claim is still ``sending``)."""
        response = self._client.get_item(
            TableName=self._table,
            Key=marshal({"pk": job_pk(job_key), "sk": delivery_sk(kind, channel)}),
            ConsistentRead=True,
        )
        return unmarshal(response.get("Item") or {}).get("state") == "sent"


# mypy checks that the area class implements its ports (the contract tests check the signatures too).
_DECISION_PORT: type[DecisionStore] = DecisionTable
_JUDGEMENT_PORT: type[JudgementStore] = DecisionTable
_DELIVERY_PORT: type[DeliveryStore] = DecisionTable
