"""``GovernorStore``: the store logic (:class:`~tuning_governor.adapters.store.TableStore`) on DynamoDB."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from tuning_governor.adapters.dynamodb.table import DynamoItems
from tuning_governor.adapters.store import TableStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["GovernorStore"]


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
