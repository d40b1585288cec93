"""Running-trial entries read from items (``domain.spend.running_trials``): built without a second
validation when they have the shape ``RunningTrial.to_item`` gives them, validated otherwise, and not
built again for an entry object read before (the in-memory table hands back unchanged entries)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from tuning_governor.adapters.store import stored
from tuning_governor.domain import spend
from tuning_governor.domain.spend import RunningTrial, running_entry, running_trials
from tuning_governor.domain.stored_item import Remembered, StoredItem

START = datetime(2026, 11, 30, 9, 0, 0, 123000, tzinfo=UTC)


def trial(name: str = "job-001-aaaaaaaa", **changes: object) -> RunningTrial:
    values: dict[str, object] = {"job_key": "job", "trial": name, "start": START, "instances": {"ml.m5.xlarge": 2}}
    return RunningTrial.model_validate(values | changes)


@pytest.mark.parametrize(
    "entry",
    [
        trial(),
        trial(spot=True, region="eu-west-1", max_seconds=3600),
        trial(instances={"ml.p4d.24xlarge": 16, "ml.m5.xlarge": 1}),
    ],
)
def test_an_entry_as_the_store_gives_it_back_reads_as_validation_reads_it(entry: RunningTrial) -> None:
    item = stored(entry.to_item())
    fast, validated = running_entry(item), RunningTrial.model_validate(dict(item))
    assert fast == validated == entry
    assert fast.model_dump() == validated.model_dump()
    assert isinstance(fast.instances["ml.m5.xlarge" if "ml.m5.xlarge" in fast.instances else "ml.p4d.24xlarge"], int)


@pytest.mark.parametrize(
    "odd",
    [
        {"start": "2026-11-30T09:00:00Z"},  # another ISO spelling
        {"start": 1796029200000},  # not a string
        {"extra": "x"},  # an attribute the model does not know
        {"instances": {"ml.m5.xlarge": Decimal("2.5")}},  # not a count: validation refuses it
        {"instances": {"ml.m5.xlarge": True}},
        {"instances": None},
        {"spot": "no"},
        {"region": 7},
        {"max_seconds": Decimal("3600.5")},
        {"max_seconds": Decimal("Infinity")},
        {"trial": None},
    ],
)
def test_any_other_shape_is_validated(odd: dict[str, object]) -> None:
    item = stored(trial().to_item()) | odd
    try:
        expected: object = RunningTrial.model_validate(dict(item))
    except ValueError as exc:
        expected = type(exc)
    try:
        got: object = running_entry(item)
    except ValueError as exc:
        got = type(exc)
    assert got == expected


def test_an_entry_of_a_stored_item_read_before_is_not_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    entries = Remembered(
        lambda value, _pk: built.append(str(value["trial"])) or running_entry(value),
        slot=lambda value, pk: (pk, value["trial"]),
    )
    monkeypatch.setattr(spend, "_ENTRIES", entries)
    first, second = stored(trial("a").to_item()), stored(trial("b").to_item())
    item = StoredItem({"pk": "JOB#job", "sk": "META", "running": {"a": first, "b": second}})
    assert [t.trial for t in running_trials(item)] == ["a", "b"]
    assert running_trials(item) == running_trials(StoredItem(item))  # the same entries: not built again
    assert built == ["a", "b"]
    moved = stored(trial("b", instances={"ml.m5.xlarge": 5}).to_item())  # a write stores a new entry
    again = running_trials(StoredItem(item, running={"a": first, "b": moved}))
    assert built == ["a", "b", "b"]
    assert [t.instances for t in again] == [{"ml.m5.xlarge": 2}, {"ml.m5.xlarge": 5}]
    # A plain dict (a DynamoDB read, or one a test builds and may change): built at every read
    plain = {"pk": "JOB#job", "sk": "META", "running": {"a": first}}
    assert running_trials(plain) == running_trials(plain) == again[:1]
    assert built == ["a", "b", "b", "a", "a"]
