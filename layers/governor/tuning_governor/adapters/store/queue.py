"""The queue area: submitted requests waiting for capacity (``QueueStore``). Key design in
:mod:`tuning_governor.adapters.store.queue_items`; every state change is one conditional update of the
request's item, so two admissions never both claim or finish it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tuning_governor.adapters.store.area import Area
from tuning_governor.adapters.store.conditions import all_of, any_of, eq, lt, missing, one_of
from tuning_governor.adapters.store.keys import iso
from tuning_governor.adapters.store.port import Put, assign, removes, sets
from tuning_governor.adapters.store.queue_items import META, WAITING, request_item, request_of, request_pk
from tuning_governor.models.queue import QueuedRequest, QueueState


class Queue(Area):
    """The ``QueueStore`` port over the item table."""

    def enqueue(self, entry: QueuedRequest) -> tuple[QueuedRequest, bool]:
        outcome = self._items.write(Put(request_item(entry), missing("pk")))
        if outcome.done:
            return entry, True
        found = request_of(outcome.item) if outcome.item else self.get_request(entry.job_name)
        return (found or entry), False

    def get_request(self, job_name: str) -> QueuedRequest | None:
        item = self._items.get((request_pk(job_name), META))
        return request_of(item) if item else None

    def waiting_requests(self) -> list[QueuedRequest]:
        return [request_of(item) for item in self._items.index(WAITING)]

    def claim_request(self, job_name: str, owner: str, now: datetime, until: datetime) -> bool:
        lapsed = all_of(eq("state", "admitting"), lt("claim_until", iso(now)))
        claim = sets({"state": "admitting", "claim_owner": owner, "claim_until": iso(until)})
        return self._update((request_pk(job_name), META), claim, any_of(eq("state", "queued"), lapsed))

    def release_request(self, job_name: str, owner: str) -> bool:
        back = [assign("state", "queued"), *removes("claim_owner", "claim_until")]
        held = all_of(eq("state", "admitting"), eq("claim_owner", owner))
        return self._update((request_pk(job_name), META), back, held)

    def finish_request(
        self, job_name: str, state: QueueState, reason: str, now: datetime, borrowed: Mapping[str, int] | None = None
    ) -> bool:
        values: dict[str, Any] = {"state": state, "reason": reason, "finished_at": iso(now)}
        if borrowed:
            values["borrowed"] = dict(borrowed)
        changes = sets(values) + removes("gsi1pk", "gsi1sk", "claim_owner", "claim_until")
        return self._update((request_pk(job_name), META), changes, one_of("state", ("queued", "admitting")))
