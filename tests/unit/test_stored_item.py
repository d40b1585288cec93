"""What is worked out from an item its store will never change is remembered by the item's identity
(``domain.stored_item``); anything else is worked out at every read."""

from __future__ import annotations

from tuning_governor.domain.job import JobState, job_state
from tuning_governor.domain.stored_item import Remembered, StoredItem

ITEM = {"pk": "JOB#j", "sk": "META", "job_name": "j", "status": "InProgress", "max_parallel": 2}


def test_a_stored_item_is_typed_once_and_a_changed_copy_again() -> None:
    item = StoredItem(ITEM)
    first = job_state(item)
    assert first is not None and job_state(item) is first  # the same item: the same state
    assert JobState.from_item(item) is first
    changed = StoredItem(item, status="Completed")  # what a write stores: a changed copy
    assert JobState.from_item(changed).status == "Completed"
    assert JobState.from_item(item) == first and first.status == "InProgress"  # its slot now holds the copy
    equal = StoredItem(ITEM)  # equal, another object: typed again, the same answer
    assert JobState.from_item(equal) is not first and JobState.from_item(equal) == first


def test_a_plain_item_is_typed_at_every_read_so_a_change_made_to_it_is_seen() -> None:
    item = dict(ITEM)
    first = JobState.from_item(item)
    assert JobState.from_item(item) is not first
    item["status"] = "Stopping"  # a plain dict may change (a test's, or a DynamoDB read's copy)
    assert JobState.from_item(item).status == "Stopping"


def test_remembered_keeps_at_most_its_size_and_stays_right() -> None:
    calls: list[int] = []
    count = Remembered(lambda item: calls.append(1) or len(item), slot=len, size=2)
    items = [StoredItem({str(i): i for i in range(n)}) for n in range(5)]
    assert [count(i) for i in items] == [0, 1, 2, 3, 4]
    assert [count(i) for i in items] == [0, 1, 2, 3, 4]
    assert len(calls) <= 10 and len(count._known) <= 2
    assert count({"a": 1}) == 1 and count({"a": 1}) == 1 and len(count._known) <= 2
