"""``governor_client.offline.moto_update_parse`` parses each UpdateExpression text once and moto answers as
it does with its own parser: the same items after the same updates, the same refusals, and a kept tree
that something changed is caught in check mode."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.parsing.expressions import UpdateExpressionParser

from governor_client.offline import moto_speed, moto_update_parse
from governor_client.offline.environment import TABLE_NAME, create_table

KEY = {"pk": {"S": "JOB#0"}, "sk": {"S": "META"}}
SET = "SET #n0 = if_not_exists(#n0, :v0) + :v1, #n1.#n2 = :v2 REMOVE #n3"
NAMES = {"#n0": "count", "#n1": "running", "#n2": "t-1", "#n3": "gone"}
# Each refused for its own reason, at every request (nothing is kept for a text moto refuses)
REFUSED = ("SET a = :v SET b = :v", "SET = :v", "SET #n0 = :v0 +")
REFUSED_VALUES = {":v0": {"N": "1"}, ":v": {"S": "x"}}


@pytest.fixture
def client(aws_credentials: None) -> Iterator[Any]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb)
        yield dynamodb


def _history(client: Any) -> list[str]:
    """Three updates of one item with the same text and other values, the item after each, then each
    refused text's error, twice."""
    client.put_item(TableName=TABLE_NAME, Item={**KEY, "running": {"M": {}}, "gone": {"S": "y"}})
    seen = []
    for step in range(3):
        client.update_item(
            TableName=TABLE_NAME,
            Key=KEY,
            UpdateExpression=SET,
            ExpressionAttributeNames=NAMES,
            ExpressionAttributeValues={":v0": {"N": "0"}, ":v1": {"N": str(step + 1)}, ":v2": {"S": f"s{step}"}},
        )
        seen.append(repr(sorted(client.get_item(TableName=TABLE_NAME, Key=KEY)["Item"].items())))
    for expression in REFUSED * 2:
        try:
            client.update_item(
                TableName=TABLE_NAME,
                Key=KEY,
                UpdateExpression=expression,
                ExpressionAttributeNames={"#n0": "count"} if "#n0" in expression else {},
                ExpressionAttributeValues={k: v for k, v in REFUSED_VALUES.items() if k in expression},
            )
            seen.append("accepted")
        except ClientError as exc:
            seen.append(f"{exc.response['Error']['Code']}: {exc.response['Error']['Message']}")
    return seen


def test_updates_and_refusals_are_motos_own_with_each_text_parsed_once(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with moto_speed.uninstalled():
        stock = _history(client)
    client.delete_item(TableName=TABLE_NAME, Key=KEY)
    monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")  # every kept tree compared with a fresh parse
    kept = _history(client)

    assert kept == stock
    assert stock[2].count("'N': '6'") == 1  # 1 + 2 + 3: each update applied once, on its own values
    assert 'The "SET" section can only be used once' in stock[3] and "Syntax error" in stock[4]
    assert stock[3:6] == stock[6:] and all(outcome.startswith("ValidationException: ") for outcome in stock[3:])
    assert moto_update_parse.installed()


def test_a_kept_tree_that_was_changed_is_caught_in_check_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    # A check that cannot fail proves nothing: a kept tree someone changed differs from a fresh parse.
    monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")
    tree = UpdateExpressionParser.make("SET a = :v, b = :w")
    assert UpdateExpressionParser.make("SET a = :v, b = :w") is tree
    children = tree.children
    tree.children = children * 2
    try:
        with pytest.raises(moto_update_parse.ParseCacheMismatch):
            UpdateExpressionParser.make("SET a = :v, b = :w")
    finally:
        tree.children = children


def test_uninstall_puts_motos_parser_back() -> None:
    with moto_speed.uninstalled():
        text = "SET a = :v"
        assert UpdateExpressionParser.make(text) is not UpdateExpressionParser.make(text)
    assert UpdateExpressionParser.make("SET a = :v") is UpdateExpressionParser.make("SET a = :v")
