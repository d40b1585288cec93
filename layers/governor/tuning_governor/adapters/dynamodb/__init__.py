"""The DynamoDB adapter of the store port: ``GovernorStore``, the shared store logic
(``tuning_governor.adapters.store``) over the DynamoDB item table (``table``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from tuning_governor.adapters.dynamodb.table import DynamoItems, marshal, unmarshal
from tuning_governor.adapters.store import EXPIRY_ATTRIBUTE, MIN_TRIAL_RETENTION_DAYS, TableStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["EXPIRY_ATTRIBUTE", "MIN_TRIAL_RETENTION_DAYS", "GovernorStore", "marshal", "unmarshal"]


class GovernorStore(TableStore):
    """The governor's table on DynamoDB (the item port: :class:`DynamoItems`)."""

    permissions: ClassVar[dict[str, str]] = {
        "read": "dynamodb:GetItem",
        "query": "dynamodb:Query",
        "put": "dynamodb:PutItem",
        "update": "dynamodb:UpdateItem",
        "delete": "dynamodb:DeleteItem",
        # The ConditionCheck item of a transaction (an admission checks its job has not ended).
        "check": "dynamodb:ConditionCheckItem",
    }

    def __init__(self, client: DynamoDBClient, table_name: str, *, trial_retention_days: int = 0) -> None:
        super().__init__(DynamoItems(client, table_name), trial_retention_days=trial_retention_days)
        self._client = client  # the adapter's own client: what fault-injecting tests wrap
