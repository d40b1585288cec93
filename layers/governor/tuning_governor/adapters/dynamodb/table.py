"""The item port on DynamoDB: conditions and changes rendered to expressions (a placeholder for every
name and value), (un)marshalling, and errors translated (a refused write is an :class:`Outcome` not done,
with the item as found; a cancelled transaction, the positions of its failed conditions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from tuning_governor.adapters.store.conditions import Cond, Path
from tuning_governor.adapters.store.keys import plain
from tuning_governor.adapters.store.port import Change, Check, Delete, Item, Key, Outcome, Put, Update, WriteConflict
from tuning_governor.errors import TransientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_ser = TypeSerializer()
_de = TypeDeserializer()
THROTTLED = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "InternalServerError"}
)


def marshal(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(v) for k, v in plain(values).items()}


def unmarshal(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _de.deserialize(v) for k, v in item.items()}


class Expression:
    """The names and values one request's expressions use, each a placeholder."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def path(self, path: Path) -> str:
        placeholders = []
        for name in path:
            placeholder = next((k for k, v in self.names.items() if v == name), f"#n{len(self.names)}")
            self.names[placeholder] = name
            placeholders.append(placeholder)
        return ".".join(placeholders)

    def value(self, value: Any) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def cond(self, cond: Cond) -> str:
        if cond.op in {"and", "or"}:
            return "(" + f" {cond.op.upper()} ".join(self.cond(part) for part in cond.parts) + ")"
        if cond.op == "not":
            return f"(NOT {self.cond(cond.parts[0])})"
        path = self.path(cond.path)
        if cond.op == "exists":
            return f"attribute_exists({path})"
        if cond.op == "missing":
            return f"attribute_not_exists({path})"
        if cond.op == "in":
            return f"{path} IN ({', '.join(self.value(v) for v in cond.value)})"
        return f"{path} {cond.op} {self.value(cond.value)}"

    def update(self, changes: Sequence[Change]) -> str:
        clauses: dict[str, list[str]] = {"set": [], "add": [], "remove": []}
        for change in changes:
            path = self.path(change.path)
            if change.op == "remove":
                clauses["remove"].append(path)
            elif change.op == "add":
                clauses["add"].append(f"{path} {self.value(change.value)}")
            else:
                value = self.value(change.value)
                clauses["set"].append(
                    f"{path} = if_not_exists({path}, {value})" if change.if_missing else f"{path} = {value}"
                )
        return " ".join(f"{verb.upper()} {', '.join(parts)}" for verb, parts in clauses.items() if parts)

    def request(self, **request: Any) -> dict[str, Any]:
        if self.names:
            request["ExpressionAttributeNames"] = self.names
        if self.values:
            request["ExpressionAttributeValues"] = marshal(self.values)
        return request


class DynamoItems:
    """The item port (:class:`~tuning_governor.adapters.store.ItemTable`) on one DynamoDB table."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def get(self, key: Key) -> Item | None:
        item = self._call(self._client.get_item, TableName=self._table, Key=_key(key), ConsistentRead=True).get("Item")
        return unmarshal(item) if item else None

    def query(self, pk: str, prefix: str = "") -> list[Item]:
        condition = "pk = :pk" + (" AND begins_with(sk, :prefix)" if prefix else "")
        values = {":pk": pk} | ({":prefix": prefix} if prefix else {})
        return self._all(
            KeyConditionExpression=condition, ExpressionAttributeValues=marshal(values), ConsistentRead=True
        )

    def index(self, partition: str, *, below: str | None = None) -> list[Item]:
        condition = "gsi1pk = :p" + (" AND gsi1sk < :below" if below is not None else "")
        values = {":p": partition} | ({":below": below} if below is not None else {})
        return self._all(IndexName="gsi1", KeyConditionExpression=condition, ExpressionAttributeValues=marshal(values))

    def _all(self, **query: Any) -> list[Item]:
        out: list[Item] = []
        try:
            for page in self._client.get_paginator("query").paginate(TableName=self._table, **query):
                out.extend(unmarshal(raw) for raw in page.get("Items", []))
        except ClientError as exc:
            raise _translate(exc) from exc
        return out

    def write(self, op: Put | Update | Delete) -> Outcome:
        if isinstance(op, Delete):
            self._call(self._client.delete_item, TableName=self._table, Key=_key(op.key))
            return Outcome(True)
        call = self._client.put_item if isinstance(op, Put) else self._client.update_item
        request = _request(self._table, op)
        if op.when is not None:
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if isinstance(op, Update):
            request["ReturnValues"] = "ALL_NEW"
        try:
            response = call(**request)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise _translate(exc) from exc
            old: Any = exc.response.get("Item")
            return Outcome(False, unmarshal(old) if old else None)
        return Outcome(True, unmarshal(response["Attributes"]) if "Attributes" in response else None)

    def transact(self, ops: Sequence[Put | Update | Check]) -> frozenset[int]:
        kinds = {Put: "Put", Update: "Update", Check: "ConditionCheck"}
        items: Any = [{kinds[type(op)]: _request(self._table, op)} for op in ops]
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            codes = [reason.get("Code") for reason in exc.response.get("CancellationReasons", [])]
            if "TransactionConflict" in codes:
                raise WriteConflict("DynamoDB transaction conflict") from exc
            failed = frozenset(i for i, code in enumerate(codes) if code == "ConditionalCheckFailed")
            if not failed:
                raise _translate(exc) from exc
            return failed
        return frozenset()

    def _call(self, call: Any, **request: Any) -> Any:
        try:
            return call(**request)
        except ClientError as exc:
            raise _translate(exc) from exc


def _key(key: Key) -> dict[str, Any]:
    return marshal({"pk": key[0], "sk": key[1]})


def _request(table: str, op: Put | Update | Check) -> dict[str, Any]:
    expression = Expression()
    request: dict[str, Any] = {"TableName": table}
    if isinstance(op, Put):
        request["Item"] = marshal(op.item)
    else:
        request["Key"] = _key(op.key)
    if isinstance(op, Update):
        request["UpdateExpression"] = expression.update(op.changes)
    if op.when is not None:
        request["ConditionExpression"] = expression.cond(op.when)
    return expression.request(**request)


def _translate(exc: ClientError) -> Exception:
    code = exc.response.get("Error", {}).get("Code", "")
    if code == "TransactionConflictException":
        return WriteConflict(f"DynamoDB {code}")
    if code in THROTTLED:
        return TransientError(f"DynamoDB {code}")
    return exc
