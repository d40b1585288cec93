"""``governor_client.offline.moto_clause_count`` refuses and accepts the UpdateItem expressions moto does, with
moto's own error, in check mode (both traversals run and are compared) and with moto's traversal alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.parsing.expressions import UpdateExpressionParser
from moto.dynamodb.parsing.validators import ActionCountValidator

from governor_client.offline import moto_clause_count, moto_speed
from governor_client.offline.environment import TABLE_NAME, create_table

KEY = {"pk": {"S": "JOB#0"}, "sk": {"S": "META"}}
VALUES = {":one": {"N": "1"}, ":s": {"SS": ["b"]}, ":v": {"S": "x"}}
SETS = ", ".join(f"a{n} = :v" for n in range(40))
# An expression moto accepts (one of each clause, many actions), and ones it refuses, each for its clause
ACCEPTED = f"SET {SETS}, n = if_not_exists(n, :one) + :one ADD tags :s REMOVE gone"
REFUSED = {
    "SET a = :v SET b = :v": "SET",
    "ADD n :one SET a = :v ADD m :one": "ADD",
    "REMOVE a SET b = :v REMOVE c": "REMOVE",
    "SET a = :v ADD n :one SET b = :v ADD m :one": "ADD",
    "REMOVE a REMOVE b SET c = :v SET d = :v": "SET",  # moto checks the innermost (last) clauses first
}


@pytest.fixture
def client(aws_credentials: None) -> Iterator[Any]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb)
        dynamodb.put_item(TableName=TABLE_NAME, Item={**KEY, "gone": {"S": "y"}})
        yield dynamodb


def _update(client: Any, expression: str) -> str:
    try:
        client.update_item(
            TableName=TABLE_NAME,
            Key=KEY,
            UpdateExpression=expression,
            ExpressionAttributeValues={name: value for name, value in VALUES.items() if name in expression},
        )
    except ClientError as exc:
        return f"{exc.response['Error']['Code']}: {exc.response['Error']['Message']}"
    return "accepted"


@pytest.mark.parametrize("linear", [True, False], ids=["linear-checked", "moto-alone"])
def test_each_expression_is_accepted_or_refused_as_moto_does(
    client: Any, monkeypatch: pytest.MonkeyPatch, linear: bool
) -> None:
    if linear:
        monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")  # moto's traversal runs beside it
    else:
        moto_speed.uninstall()
    try:
        assert _update(client, ACCEPTED) == "accepted"
        item = client.get_item(TableName=TABLE_NAME, Key=KEY)["Item"]
        assert item["n"] == {"N": "2"} and item["a39"] == {"S": "x"} and "gone" not in item
        for expression, clause in REFUSED.items():
            outcome = _update(client, expression)
            assert outcome.startswith("ValidationException: ") and f'The "{clause}" section' in outcome, outcome
    finally:
        assert moto_speed.install()


def test_a_disagreement_with_motos_traversal_is_reported_in_check_mode(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A check that cannot fail proves nothing: a linear count that misses a clause is caught.
    monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")
    monkeypatch.setattr(moto_clause_count, "_check", lambda node, memos: None)
    with pytest.raises(moto_clause_count.ClauseCountMismatch):
        moto_clause_count.traverse(ActionCountValidator(), UpdateExpressionParser.make("SET a = :v SET b = :v"))


def test_uninstall_puts_motos_inherited_traversal_back() -> None:
    assert "traverse" in vars(ActionCountValidator)  # installed by tests/conftest.py (moto_speed)
    with moto_speed.uninstalled():
        assert "traverse" not in vars(ActionCountValidator)
    assert ActionCountValidator.traverse is moto_clause_count.traverse
