"""The queue area of the DynamoDB adapter: submitted requests waiting for capacity (``QueueStore``).

Key design in :mod:`tuning_governor.adapters.dynamodb.queue_items`. Every state change is one
conditional UpdateItem on the request's item, so two admissions never both claim or finish it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tuning_governor.adapters.dynamodb.keys import iso
from tuning_governor.adapters.dynamodb.queue_items import META, WAITING, request_item, request_of, request_pk
from tuning_governor.adapters.dynamodb.table import Table, marshal, unmarshal
from tuning_governor.models.queue import QueuedRequest, QueueState
from tuning_governor.ports import QueueStore


class QueueTable(Table):
    """The ``QueueStore`` port on the table."""

    def enqueue(self, entry: QueuedRequest) -> tuple[QueuedRequest, bool]:
        stored = self._conditional(
            self._client.put_item,
            TableName=self._table,
            Item=marshal(request_item(entry)),
            ConditionExpression="attribute_not_exists(pk)",
        )
        if stored:
            return entry, True
        found = self.get_request(entry.job_name)
        return (found or entry), False

    def get_request(self, job_name: str) -> QueuedRequest | None:
        response = self._client.get_item(
            TableName=self._table, Key=marshal({"pk": request_pk(job_name), "sk": META}), ConsistentRead=True
        )
        return request_of(unmarshal(response["Item"])) if response.get("Item") else None

    def waiting_requests(self) -> list[QueuedRequest]:
        return [request_of(item) for item in self._by_gsi(WAITING)]

    def claim_request(self, job_name: str, owner: str, now: datetime, until: datetime) -> bool:
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": request_pk(job_name), "sk": META}),
            UpdateExpression="SET #s = :admitting, claim_owner = :owner, claim_until = :until",
            ConditionExpression="#s = :queued OR (#s = :admitting AND claim_until < :now)",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues=marshal(
                {
                    ":admitting": "admitting",
                    ":queued": "queued",
                    ":owner": owner,
                    ":until": iso(until),
                    ":now": iso(now),
                }
            ),
        )

    def release_request(self, job_name: str, owner: str) -> bool:
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": request_pk(job_name), "sk": META}),
            UpdateExpression="SET #s = :queued REMOVE claim_owner, claim_until",
            ConditionExpression="#s = :admitting AND claim_owner = :owner",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues=marshal({":admitting": "admitting", ":queued": "queued", ":owner": owner}),
        )

    def finish_request(
        self, job_name: str, state: QueueState, reason: str, now: datetime, borrowed: Mapping[str, int] | None = None
    ) -> bool:
        values: dict[str, Any] = {
            ":state": state,
            ":reason": reason,
            ":now": iso(now),
            ":queued": "queued",
            ":admitting": "admitting",
        }
        extra = ", borrowed = :borrowed" if borrowed else ""
        if borrowed:
            values[":borrowed"] = dict(borrowed)
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": request_pk(job_name), "sk": META}),
            UpdateExpression=f"SET #s = :state, reason = :reason, finished_at = :now{extra} "
            "REMOVE gsi1pk, gsi1sk, claim_owner, claim_until",
            ConditionExpression="#s IN (:queued, :admitting)",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues=marshal(values),
        )


# mypy checks that the area implements its port.
_PORT: type[QueueStore] = QueueTable
