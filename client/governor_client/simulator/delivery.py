"""EventBridge delivery semantics applied to the events the AMT stand-in emits. Pure, seeded, no AWS.

What a rule's target can see on AWS, and how :class:`DeliveryFaults` models it:

* **At-least-once delivery**: EventBridge may deliver one event more than once, with the *same*
  envelope ``id`` (``same_id_duplicate_rate``).
* **Several events per state change**: "SageMaker may send multiple events to EventBridge for each
  state change" [aws-facts §1.1]; those copies carry a *new* ``id`` and the same ``detail``
  (``new_id_duplicate_rate``).
* **No ordering guarantee** on a standard bus: every copy is delayed by a time drawn uniformly from
  ``[0, max_delay_s]``; reordering follows from the delays. ``reorder_window`` > 1 additionally shuffles
  deliveries in blocks of that many (see :class:`Deliverer`), which reorders events even without delays.
* **Loss**: ``drop_rate`` removes an emitted event, with all its copies, for good; dropped events are
  recorded (:attr:`Deliverer.dropped`) so tests and replays can report them.
* **Retries** of a failed target invocation are the caller's to request (:meth:`Deliverer.redeliver`).

Every draw for an emitted event comes from a generator seeded with ``seed`` and the event's position in
the stream, and all draws are made whatever the rates: the same emitted stream and ``seed`` always give
the same deliveries, and switching one fault on does not change the draws of another.
"""

from __future__ import annotations

import heapq
import itertools
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

EventBridgeEvent = dict[str, Any]
CopyKind = Literal["original", "same-id-duplicate", "new-id-duplicate"]
ENVELOPE_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class DeliveryFaults:
    """How far delivery departs from "each event once, at once, in order". All rates are in [0, 1].

    ``reorder_hold_s``: the longest a delivery waits for its ``reorder_window`` block to fill.
    ``newest_first``: a block is released in reverse emission order (newest first) instead of shuffled.
    The default (every field 0) is a clean delivery: each event once, when emitted, in emission order.
    """

    same_id_duplicate_rate: float = 0.0
    new_id_duplicate_rate: float = 0.0
    max_delay_s: float = 0.0
    reorder_window: int = 0
    drop_rate: float = 0.0
    seed: int = 0
    reorder_hold_s: float = 5.0
    newest_first: bool = False

    def __post_init__(self) -> None:
        for name in ("same_id_duplicate_rate", "new_id_duplicate_rate", "drop_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], not {value}")
        if self.max_delay_s < 0 or self.reorder_hold_s < 0:
            raise ValueError("delays cannot be negative")
        if self.reorder_window < 0:
            raise ValueError("reorder_window cannot be negative")

    @property
    def is_clean(self) -> bool:
        """True when nothing is duplicated, delayed, reordered or dropped."""
        return (
            self.same_id_duplicate_rate == 0
            and self.new_id_duplicate_rate == 0
            and self.max_delay_s == 0
            and self.reorder_window <= 1
            and self.drop_rate == 0
        )


@dataclass(frozen=True)
class ScheduledDelivery:
    """One delivery of one copy of an emitted event to the rule's target.

    ``emission_seq`` numbers emitted events from 0 in submission order (copies share their event's);
    ``attempt`` is 1 for the first delivery and grows with each :meth:`Deliverer.redeliver`. Copies share
    the emitted event's ``detail`` object: callers must not mutate delivered events.
    """

    delivery_time: datetime
    event: EventBridgeEvent
    emitted_at: datetime
    emission_seq: int
    copy: CopyKind = "original"
    attempt: int = 1

    @property
    def event_id(self) -> str | None:
        value = self.event.get("id")
        return str(value) if value is not None else None

    @property
    def latency_s(self) -> float:
        """Seconds between emission and this delivery."""
        return (self.delivery_time - self.emitted_at).total_seconds()


@dataclass(frozen=True)
class DroppedEvent:
    """An emitted event that was never delivered (with none of its copies)."""

    emitted_at: datetime
    emission_seq: int
    event: EventBridgeEvent

    @property
    def event_id(self) -> str | None:
        value = self.event.get("id")
        return str(value) if value is not None else None


@dataclass
class DeliveryStats:
    """Counts over everything submitted and released so far.

    ``overtaken``: deliveries released after a delivery of an event emitted later (a measure of
    reordering); ``redeliveries``: retries requested through :meth:`Deliverer.redeliver`.
    """

    emitted: int = 0
    dropped: int = 0
    same_id_duplicates: int = 0
    new_id_duplicates: int = 0
    redeliveries: int = 0
    delivered: int = 0
    overtaken: int = 0
    max_latency_s: float = 0.0
    total_latency_s: float = 0.0

    @property
    def mean_latency_s(self) -> float:
        return self.total_latency_s / self.delivered if self.delivered else 0.0


def emission_time(event: EventBridgeEvent) -> datetime:
    """The envelope ``time`` of ``event`` as a tz-aware UTC datetime (``ValueError`` if absent or malformed)."""
    value = event.get("time")
    if not isinstance(value, str):
        raise ValueError(f"event {event.get('id')!r} has no envelope time")
    return datetime.strptime(value, ENVELOPE_TIME_FORMAT).replace(tzinfo=UTC)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(order=True)
class _Pending:
    at: datetime
    order: int
    delivery: ScheduledDelivery = field(compare=False)


class Deliverer:
    """Turns the stream of emitted events into deliveries, as EventBridge would, under ``faults``.

    Use: :meth:`submit` each event as it is emitted (in emission order), then ask :meth:`due` for the
    deliveries whose time has come; :meth:`next_due` says when to ask next. Callers may rely on:

    * deliveries come out in non-decreasing ``delivery_time``, never before their event's emission and
      never before the ``until`` of an earlier :meth:`due` call (an event submitted late is delivered at
      that watermark at the earliest);
    * :meth:`due` is deterministic as long as every event emitted up to ``until`` was submitted first;
    * with ``reorder_window`` = k > 1, deliveries are released in blocks of k, shuffled; a block is
      released when its k-th member is due, or ``reorder_hold_s`` after its first member was due,
      whichever comes first; every member gets the block's release time;
    * nothing is ever lost except what :attr:`dropped` lists.
    """

    def __init__(self, faults: DeliveryFaults | None = None) -> None:
        self.faults = faults or DeliveryFaults()
        self.stats = DeliveryStats()
        self.dropped: list[DroppedEvent] = []
        self._heap: list[_Pending] = []
        self._order = itertools.count()
        self._seq = itertools.count()
        self._blocks = itertools.count()
        self._block: list[ScheduledDelivery] = []
        self._block_opened: datetime | None = None
        self._watermark: datetime | None = None
        self._latest_seq_released = -1

    # -- input -------------------------------------------------------------------------------------------

    def submit(self, event: EventBridgeEvent, emitted_at: datetime | None = None) -> list[ScheduledDelivery]:
        """Schedule the deliveries of one emitted event (default emission time: its envelope ``time``).

        Returns the copies scheduled (empty when the event is dropped).
        """
        at = _utc(emitted_at) if emitted_at is not None else emission_time(event)
        seq = next(self._seq)
        self.stats.emitted += 1
        faults = self.faults
        rng = random.Random(f"{faults.seed}|{seq}|{event.get('id')}")
        # Every draw is made, whatever the rates (see the module docstring).
        drop, same, new = rng.random(), rng.random(), rng.random()
        delays = [rng.uniform(0.0, faults.max_delay_s) for _ in range(3)]
        new_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if drop < faults.drop_rate:
            self.stats.dropped += 1
            self.dropped.append(DroppedEvent(at, seq, event))
            return []
        copies: list[tuple[EventBridgeEvent, CopyKind, float]] = [(event, "original", delays[0])]
        if same < faults.same_id_duplicate_rate:
            self.stats.same_id_duplicates += 1
            copies.append((event, "same-id-duplicate", delays[1]))
        if new < faults.new_id_duplicate_rate:
            self.stats.new_id_duplicates += 1
            copies.append(({**event, "id": new_id}, "new-id-duplicate", delays[2]))
        scheduled = []
        for copy_event, kind, delay in copies:
            delivery = ScheduledDelivery(self._not_before(at + timedelta(seconds=delay)), copy_event, at, seq, kind)
            self._push(delivery)
            scheduled.append(delivery)
        return scheduled

    def redeliver(self, delivery: ScheduledDelivery, at: datetime) -> ScheduledDelivery:
        """Schedule ``delivery`` again at ``at`` (a retry after the target failed); ``attempt`` + 1."""
        retry = replace(delivery, delivery_time=self._not_before(_utc(at)), attempt=delivery.attempt + 1)
        self.stats.redeliveries += 1
        self._push(retry)
        return retry

    # -- output ------------------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Deliveries scheduled but not released yet."""
        return len(self._heap) + len(self._block)

    def next_due(self) -> datetime | None:
        """The earliest time at which :meth:`due` may release something (None: nothing is pending)."""
        candidates = [self._heap[0].at] if self._heap else []
        close = self._block_close_at()
        if close is not None:
            candidates.append(close)
        return min(candidates) if candidates else None

    def due(self, until: datetime) -> list[ScheduledDelivery]:
        """Release every delivery due at or before ``until``, in delivery order."""
        until = _utc(until)
        released: list[ScheduledDelivery] = []
        window = self.faults.reorder_window
        while True:
            close = self._block_close_at()
            head = self._heap[0] if self._heap else None
            if head is not None and head.at <= until and (close is None or head.at <= close):
                heapq.heappop(self._heap)
                if window <= 1:
                    released.append(self._release(head.delivery, head.at))
                    continue
                if not self._block:
                    self._block_opened = head.at
                self._block.append(head.delivery)
                if len(self._block) >= window:
                    released.extend(self._release_block(head.at))
            elif close is not None and close <= until:
                released.extend(self._release_block(close))
            else:
                break
        if self._watermark is None or until > self._watermark:
            self._watermark = until
        return released

    def drain(self) -> list[ScheduledDelivery]:
        """Release everything still pending (the end of the stream), in delivery order."""
        released: list[ScheduledDelivery] = []
        while self.pending:
            due = self.next_due()
            assert due is not None
            released.extend(self.due(due))
        return released

    # -- internals ---------------------------------------------------------------------------------------

    def _not_before(self, at: datetime) -> datetime:
        return at if self._watermark is None or at >= self._watermark else self._watermark

    def _push(self, delivery: ScheduledDelivery) -> None:
        heapq.heappush(self._heap, _Pending(delivery.delivery_time, next(self._order), delivery))

    def _block_close_at(self) -> datetime | None:
        if not self._block or self._block_opened is None:
            return None
        return self._block_opened + timedelta(seconds=self.faults.reorder_hold_s)

    def _release_block(self, at: datetime) -> list[ScheduledDelivery]:
        block, self._block, self._block_opened = self._block, [], None
        if self.faults.newest_first:
            block.reverse()
        else:
            random.Random(f"{self.faults.seed}|block|{next(self._blocks)}").shuffle(block)
        return [self._release(delivery, at) for delivery in block]

    def _release(self, delivery: ScheduledDelivery, at: datetime) -> ScheduledDelivery:
        released = delivery if delivery.delivery_time == at else replace(delivery, delivery_time=at)
        stats = self.stats
        stats.delivered += 1
        if released.emission_seq < self._latest_seq_released:
            stats.overtaken += 1
        self._latest_seq_released = max(self._latest_seq_released, released.emission_seq)
        latency = released.latency_s
        stats.total_latency_s += latency
        stats.max_latency_s = max(stats.max_latency_s, latency)
        return released


def delivery_order(
    events: Iterable[EventBridgeEvent], faults: DeliveryFaults | None = None
) -> list[tuple[datetime, EventBridgeEvent]]:
    """``(delivery_time, event)`` for every delivery of ``events`` (emitted in this order, at their
    envelope ``time``), in delivery order. Dropped events are simply absent."""
    deliverer = Deliverer(faults)
    for event in events:
        deliverer.submit(event)
    return [(d.delivery_time, d.event) for d in deliverer.drain()]
