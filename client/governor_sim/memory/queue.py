"""The queue area of ``MemoryStore``: submitted requests waiting for capacity (``QueueStore``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from governor_sim.memory.table import MemoryTable, stored
from tuning_governor.adapters.dynamodb.keys import iso
from tuning_governor.adapters.dynamodb.queue_items import META, WAITING, request_item, request_of, request_pk
from tuning_governor.models.queue import QueuedRequest, QueueState
from tuning_governor.ports import QueueStore


class QueueItems(MemoryTable):
    """The ``QueueStore`` port in memory."""

    def enqueue(self, entry: QueuedRequest) -> tuple[QueuedRequest, bool]:
        with self._lock:
            old = self._get(request_pk(entry.job_name), META)
            if old is not None:
                return request_of(old), False
            self._put(request_item(entry))
            return entry, True

    def get_request(self, job_name: str) -> QueuedRequest | None:
        item = self._read(request_pk(job_name), META)
        return request_of(item) if item is not None else None

    def waiting_requests(self) -> list[QueuedRequest]:
        return [request_of(item) for item in self._by_gsi(WAITING)]

    def claim_request(self, job_name: str, owner: str, now: datetime, until: datetime) -> bool:
        with self._lock:
            item = self._get(request_pk(job_name), META)
            if item is None:
                return False
            lapsed = item["state"] == "admitting" and str(item.get("claim_until", "")) < iso(now)
            if item["state"] != "queued" and not lapsed:
                return False
            self._set(item["pk"], META, {"state": "admitting", "claim_owner": owner, "claim_until": until})
            return True

    def release_request(self, job_name: str, owner: str) -> bool:
        with self._lock:
            item = self._get(request_pk(job_name), META)
            if item is None or item["state"] != "admitting" or item.get("claim_owner") != owner:
                return False

            def back(held: dict[str, object]) -> None:
                held["state"] = "queued"
                held.pop("claim_owner", None)
                held.pop("claim_until", None)

            self._update(item["pk"], META, back)
            return True

    def finish_request(
        self, job_name: str, state: QueueState, reason: str, now: datetime, borrowed: Mapping[str, int] | None = None
    ) -> bool:
        with self._lock:
            item = self._get(request_pk(job_name), META)
            if item is None or item["state"] not in {"queued", "admitting"}:
                return False

            def finish(held: dict[str, object]) -> None:
                for name in ("gsi1pk", "gsi1sk", "claim_owner", "claim_until"):
                    held.pop(name, None)
                held.update(stored({"state": state, "reason": reason, "finished_at": now}))
                if borrowed:
                    held["borrowed"] = dict(borrowed)

            self._update(item["pk"], META, finish)
            return True


# mypy checks that the area implements its port.
_PORT: type[QueueStore] = QueueItems
