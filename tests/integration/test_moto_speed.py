"""``governor_client.offline.moto_speed`` keeps moto's DynamoDB behaviour: a cancelled transaction leaves every
item as it was, and each direct response is the document moto's serializer writes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from governor_client.offline import moto_speed
from governor_client.offline.environment import TABLE_NAME, create_table


def _table_items(client: Any) -> list[dict[str, Any]]:
    items = client.scan(TableName=TABLE_NAME)["Items"]
    return sorted(items, key=lambda item: (item["pk"]["S"], item["sk"]["S"]))


def _seed(client: Any) -> None:
    for n in range(30):
        client.put_item(
            TableName=TABLE_NAME,
            Item={"pk": {"S": f"JOB#{n % 3}"}, "sk": {"S": f"T#{n:03d}"}, "n": {"N": str(n)}, "tags": {"SS": ["a"]}},
        )


def _cancelled_transaction(client: Any) -> str:
    """Put a new item, update and delete existing ones, then fail a condition: all must be undone."""
    with pytest.raises(ClientError) as raised:
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE_NAME, "Item": {"pk": {"S": "NEW"}, "sk": {"S": "1"}}}},
                {
                    "Update": {
                        "TableName": TABLE_NAME,
                        "Key": {"pk": {"S": "JOB#0"}, "sk": {"S": "T#000"}},
                        "UpdateExpression": "SET n = n + :one ADD tags :b",
                        "ExpressionAttributeValues": {":one": {"N": "1"}, ":b": {"SS": ["b"]}},
                    }
                },
                {"Delete": {"TableName": TABLE_NAME, "Key": {"pk": {"S": "JOB#1"}, "sk": {"S": "T#001"}}}},
                {
                    "ConditionCheck": {
                        "TableName": TABLE_NAME,
                        "Key": {"pk": {"S": "JOB#2"}, "sk": {"S": "T#002"}},
                        "ConditionExpression": "n = :wrong",
                        "ExpressionAttributeValues": {":wrong": {"N": "99"}},
                    }
                },
            ]
        )
    return str(raised.value.response["Error"]["Code"])


@pytest.fixture
def client(aws_credentials: None) -> Iterator[Any]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb)
        _seed(dynamodb)
        yield dynamodb


@pytest.mark.parametrize("fast", [True, False], ids=["per-item", "moto-alone"])
def test_a_cancelled_transaction_leaves_every_item_as_it_was(client: Any, fast: bool) -> None:
    if not fast:
        moto_speed.uninstall()
    try:
        before = _table_items(client)
        assert _cancelled_transaction(client) == "TransactionCanceledException"
        assert _table_items(client) == before
        # And a transaction that succeeds still applies every write
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE_NAME, "Item": {"pk": {"S": "NEW"}, "sk": {"S": "1"}}}},
                {"Delete": {"TableName": TABLE_NAME, "Key": {"pk": {"S": "JOB#1"}, "sk": {"S": "T#001"}}}},
            ]
        )
        after = {(i["pk"]["S"], i["sk"]["S"]) for i in _table_items(client)}
        assert ("NEW", "1") in after and ("JOB#1", "T#001") not in after and len(after) == len(before)
    finally:
        assert moto_speed.install()


def test_direct_responses_are_the_documents_motos_serializer_writes(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In check mode each fast response is also written by moto's serializer and compared.
    monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")
    key = {"pk": {"S": "JOB#0"}, "sk": {"S": "T#000"}}
    assert client.get_item(TableName=TABLE_NAME, Key=key)["Item"]["n"] == {"N": "0"}
    assert "Item" not in client.get_item(TableName=TABLE_NAME, Key={"pk": {"S": "x"}, "sk": {"S": "y"}})
    page = client.query(
        TableName=TABLE_NAME,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "JOB#1"}},
        Limit=4,
    )
    assert page["Count"] == 4 and "LastEvaluatedKey" in page
    updated = client.update_item(
        TableName=TABLE_NAME,
        Key=key,
        UpdateExpression="SET n = n + :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )
    assert updated["Attributes"]["n"] == {"N": "1"}
    deleted = client.delete_item(TableName=TABLE_NAME, Key=key, ReturnValues="ALL_OLD")
    assert deleted["Attributes"]["n"] == {"N": "1"}
    got = client.batch_get_item(RequestItems={TABLE_NAME: {"Keys": [{"pk": {"S": "JOB#2"}, "sk": {"S": "T#002"}}]}})
    assert len(got["Responses"][TABLE_NAME]) == 1


def test_a_mismatch_is_reported_in_check_mode(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A check that cannot fail proves nothing: a corrupted direct document is caught.
    monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")
    real = moto_speed._pruned

    def miscounted(value: Any, shape: Any) -> Any:
        document = real(value, shape)
        return {**document, "Count": -1} if isinstance(document, dict) and "Count" in document else document

    monkeypatch.setattr(moto_speed, "_pruned", miscounted)
    with pytest.raises(moto_speed.MotoSpeedMismatch):
        client.query(
            TableName=TABLE_NAME, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "JOB#1"}}
        )
