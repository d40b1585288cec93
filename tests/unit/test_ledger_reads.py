"""``Capacity.read_ledger`` converts only the entries that changed since its last read when the table hands
back unchanged entries themselves (the in-memory table, which writes by copy), and reads exactly what
``ledger_from_item`` reads of the item every time. In the rest of the suite the in-memory table hands
out read-only copies (tests/memory_guard.py), so this path is held here on a table that shares."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from governor_client.memory.table import MemoryItems
from tests.contract.conftest import reservation
from tuning_governor.adapters.store import capacity
from tuning_governor.adapters.store.capacity import LEDGER, Capacity, ledger_from_item
from tuning_governor.adapters.store.port import Key


class SharingItems(MemoryItems):
    """The in-memory table as the replay runs it: a read returns the stored item itself."""

    def get(self, key: Key) -> dict[str, Any] | None:
        return self._item(key)


def test_a_ledger_read_converts_only_the_entries_written_since_the_last_read(monkeypatch: pytest.MonkeyPatch) -> None:
    converted: list[str] = []
    convert = capacity.reservation_from_item

    def counting(job_key: str, value: dict[str, Any]) -> capacity.Reservation:
        converted.append(job_key)
        return convert(job_key, value)

    monkeypatch.setattr(capacity, "reservation_from_item", counting)
    items = SharingItems()
    store = Capacity(items)

    def read() -> tuple[capacity.Ledger, list[str]]:
        """The ledger and the entries read_ledger converted, checked against a conversion of every entry."""
        converted.clear()
        ledger = store.read_ledger()
        by_read = sorted(converted)
        assert ledger == ledger_from_item(items.get(LEDGER))
        return ledger, by_read

    assert store.commit_admission(0, "job-a", reservation("job-a")) == "committed"
    assert store.update_reservations(1, {"job-b": reservation("job-b"), "job-c": reservation("job-c")}, []) is True
    ledger, by_read = read()
    assert (sorted(ledger.reservations), by_read) == (["job-a", "job-b", "job-c"], ["job-a", "job-b", "job-c"])
    assert read()[1] == []  # nothing written since: nothing converted again
    assert store.update_reservations(2, {"job-b": reservation("job-b", 5)}, ["job-c"]) is True
    ledger, by_read = read()
    assert by_read == ["job-b"]  # the entry written; job-a's is the one read before
    assert ledger.reservations == {"job-a": reservation("job-a"), "job-b": reservation("job-b", 5)}
    assert store.release_reservation("job-a", "2026-11-30T09:20:00.000+00:00") is True
    ledger, by_read = read()
    assert by_read == ["job-a"]
    assert dict(ledger.ended) == {"job-a": replace(reservation("job-a"), ended="2026-11-30T09:20:00.000+00:00")}
    assert sorted(ledger.reservations) == ["job-b"]
