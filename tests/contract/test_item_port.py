"""Item-port contract: the two item tables (DynamoDB's on moto, and the in-memory one) evaluate every
kind of condition and change the store logic uses the same way: the same outcome, the same item
afterwards, the same failed positions of a transaction, and a refused nested path writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest

from governor_client.memory.table import MemoryItems
from governor_client.offline.environment import TABLE_NAME, create_table
from tests.conftest import REGION
from tests.contract.conftest import ADAPTERS
from tuning_governor.adapters.dynamodb.table import DynamoItems
from tuning_governor.adapters.store.conditions import Cond, all_of, any_of, eq, exists, lt, missing, not_in, one_of
from tuning_governor.adapters.store.port import Change, Check, ItemTable, Put, Update, assign, remove

KEY = ("JOB#a", "META")
SEED = {"pk": "JOB#a", "sk": "META", "state": "pending", "n": 3, "at": "2026-11-30T09:00", "m": {"x": {"y": 1}}}


@pytest.fixture(params=ADAPTERS)
def table(request: pytest.FixtureRequest, aws_credentials: None) -> Iterator[ItemTable]:
    if request.param == "memory":
        yield MemoryItems()
        return
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        create_table(client)
        yield DynamoItems(client, TABLE_NAME)


CONDITIONS: dict[str, tuple[Cond, bool]] = {
    "exists top": (exists("state"), True),
    "exists nested": (exists(("m", "x", "y")), True),
    "missing nested": (missing(("m", "x", "z")), True),
    "missing below a missing map": (missing(("q", "r")), True),
    "= number (int against Decimal)": (eq("n", 3), True),
    "= number against string": (eq("n", "3"), False),
    "= on a missing attribute": (eq("nope", "pending"), False),
    "< on strings": (lt("at", "2026-11-30T10:00"), True),
    "< on a missing attribute": (lt("nope", "z"), False),
    "<= equal": (Cond("<=", ("n",), 3), True),
    "in": (one_of("state", ("done", "pending")), True),
    "not in, attribute missing": (not_in("nope", ("a", "b")), True),
    "and": (all_of(exists("pk"), eq("state", "pending"), lt("n", 2)), False),
    "or": (any_of(missing("pk"), eq(("m", "x", "y"), 1)), True),
}


@pytest.mark.parametrize("name", sorted(CONDITIONS))
def test_a_condition_holds_alike_on_both_tables(table: ItemTable, name: str) -> None:
    cond, expected = CONDITIONS[name]
    table.write(Put(SEED))
    outcome = table.write(Update(KEY, [assign("seen", True)], cond))
    assert outcome.done is expected
    after = table.get(KEY)
    assert after is not None
    assert ("seen" in after) is expected
    if not expected:
        assert outcome.item == after  # a refused write gives the item as found


def test_changes_apply_alike_and_a_nested_path_below_no_map_writes_nothing(table: ItemTable) -> None:
    table.write(Put(SEED))
    changes = [
        assign("state", "done"),
        assign("at", "later", if_missing=True),
        assign("fresh", 1, if_missing=True),
        Change("add", ("n",), 2),
        Change("add", ("tags",), {"a"}),
        assign(("m", "x", "z"), 2),
        remove(("m", "x", "y")),
    ]
    outcome = table.write(Update(KEY, changes))
    expected = SEED | {
        "state": "done",
        "n": Decimal(5),
        "fresh": Decimal(1),
        "tags": {"a"},
        "m": {"x": {"z": Decimal(2)}},
    }
    assert outcome.done and outcome.item == expected
    with pytest.raises(Exception):  # noqa: B017, PT011 - DynamoDB's ValidationException, memory's ValueError
        table.write(Update(KEY, [assign("state", "x"), assign(("q", "r"), 1)]))
    assert table.get(KEY) == expected


def test_a_transaction_reports_every_failed_position_and_writes_nothing(table: ItemTable) -> None:
    table.write(Put(SEED))
    ops: list[Put | Update | Check] = [
        Put({"pk": "JOB#b", "sk": "META", "v": 1}, missing("pk")),
        Check(KEY, eq("state", "done")),
        Update(("JOB#c", "META"), [assign("n", 1)], exists("pk")),
    ]
    assert table.transact(ops) == frozenset({1, 2})
    assert table.get(("JOB#b", "META")) is None
    assert table.get(("JOB#c", "META")) is None
    assert table.transact(ops[:1]) == frozenset()
    assert table.get(("JOB#b", "META")) == {"pk": "JOB#b", "sk": "META", "v": Decimal(1)}


def test_query_and_index_list_alike(table: ItemTable) -> None:
    rows: list[dict[str, Any]] = [
        {"pk": "JOB#a", "sk": "TRIAL#2", "gsi1pk": "P", "gsi1sk": "2026-02"},
        {"pk": "JOB#a", "sk": "TRIAL#1", "gsi1pk": "P", "gsi1sk": "2026-01"},
        {"pk": "JOB#a", "sk": "META", "gsi1pk": "P", "gsi1sk": "2026-03"},
    ]
    for row in rows:
        table.write(Put(row))
    assert [item["sk"] for item in table.query("JOB#a", "TRIAL#")] == ["TRIAL#1", "TRIAL#2"]
    assert [item["sk"] for item in table.index("P", below="2026-03")] == ["TRIAL#1", "TRIAL#2"]
    table.write(Update(("JOB#a", "TRIAL#1"), [remove("gsi1pk"), remove("gsi1sk")]))
    assert [item["sk"] for item in table.index("P")] == ["TRIAL#2", "META"]
