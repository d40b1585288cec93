"""The queue area: submitted requests waiting for capacity (``QueueStore``), and their items.

| item            | pk                 | sk       | gsi1pk / gsi1sk (while it waits)                  |
|-----------------|--------------------|----------|---------------------------------------------------|
| queued request  | ``QUEUE#<job name>`` | ``META`` | ``QUEUE#waiting`` / ``<1000 - priority>#<enqueued>#<token>`` |

Waiting requests in order (priority, then FIFO: the sort key orders them) are one Query on ``gsi1``; a finished one
leaves it (its gsi keys are removed). The request is kept as JSON text: DynamoDB would make its floats another type.

Every state change is one conditional update of the request's item: two admissions never both claim or finish it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tuning_governor.adapters.store.area import Area
from tuning_governor.adapters.store.conditions import all_of, any_of, eq, lt, missing, one_of
from tuning_governor.adapters.store.keys import iso
from tuning_governor.adapters.store.port import Put, assign, removes, sets

if TYPE_CHECKING:  # the model is built with the first request read: only the queue's paths read one
    from tuning_governor.models.queue import QueuedRequest, QueueState

WAITING = "QUEUE#waiting"
META = "META"


def request_pk(job_name: str) -> str:
    return f"QUEUE#{job_name}"


def waiting_sk(entry: QueuedRequest) -> str:
    """The queue's order, ascending: higher priority first (-1000..1000), then earlier enqueued, then token."""
    return f"{1000 - entry.priority:04d}#{iso(entry.enqueued_at)}#{entry.client_token}"


def request_item(entry: QueuedRequest) -> dict[str, Any]:
    """The item of ``entry`` (waiting ones in the ``gsi1`` queue partition)."""
    item: dict[str, Any] = {
        "pk": request_pk(entry.job_name),
        "sk": META,
        "client_token": entry.client_token,
        "team": entry.team,
        "submitter": entry.submitter,
        "owner": entry.owner,
        "job_name": entry.job_name,
        "request_json": json.dumps(entry.request, sort_keys=True, default=str),
        "demand": dict(entry.demand),
        "priority": entry.priority,
        "enqueued_at": iso(entry.enqueued_at),
        "state": entry.state,
    }
    if entry.fit_to_share:
        item["fit_to_share"] = True
    if entry.wait_until is not None:
        item["wait_until"] = iso(entry.wait_until)
    if entry.waiting:
        item |= {"gsi1pk": WAITING, "gsi1sk": waiting_sk(entry)}
    return item


def request_of(item: dict[str, Any]) -> QueuedRequest:
    """The request an item holds (the model makes its Decimals and ISO texts ints and datetimes again)."""
    from tuning_governor.models.queue import QueuedRequest  # noqa: PLC0415 - see the import above

    return QueuedRequest.model_validate(item | {"request": json.loads(str(item["request_json"]))})


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
