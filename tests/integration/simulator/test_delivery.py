"""EventBridge delivery semantics (governor_client.simulator.delivery): pure and seeded, no AWS."""

from __future__ import annotations

import dataclasses
import itertools
import math
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from governor_client.simulator.delivery import (
    Deliverer,
    DeliveryFaults,
    ScheduledDelivery,
    delivery_order,
    emission_time,
)

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
N = 4000


def _event(i: int, at: datetime) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.UUID(int=i, version=4)),
        "detail-type": "SageMaker Training Job State Change",
        "source": "aws.sagemaker",
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "detail": {"TrainingJobName": f"job-{i}", "TrainingJobStatus": "InProgress"},
    }


def _stream(n: int = N, spacing_s: float = 1.0) -> list[dict[str, Any]]:
    return [_event(i, T0 + timedelta(seconds=i * spacing_s)) for i in range(n)]


def _schedule(
    faults: DeliveryFaults, events: list[dict[str, Any]] | None = None
) -> tuple[Deliverer, list[ScheduledDelivery]]:
    deliverer = Deliverer(faults)
    for event in events if events is not None else _stream():
        deliverer.submit(event)
    return deliverer, deliverer.drain()


def _within(count: int, n: int, rate: float, sigmas: float = 4.0) -> bool:
    """True when ``count`` successes in ``n`` trials is within ``sigmas`` standard deviations of ``rate``."""
    return abs(count - n * rate) <= sigmas * math.sqrt(n * rate * (1 - rate))


def test_clean_delivery_is_each_event_once_at_emission_in_order() -> None:
    events = _stream(200)
    deliverer, deliveries = _schedule(DeliveryFaults(), events)
    assert [d.event for d in deliveries] == events
    assert all(d.delivery_time == emission_time(d.event) for d in deliveries)
    assert all(d.copy == "original" and d.attempt == 1 for d in deliveries)
    assert deliverer.stats.overtaken == 0
    assert deliverer.dropped == []
    assert DeliveryFaults().is_clean


def test_the_same_seed_gives_the_same_deliveries_and_another_seed_does_not() -> None:
    faults = DeliveryFaults(
        same_id_duplicate_rate=0.1, new_id_duplicate_rate=0.1, max_delay_s=30, drop_rate=0.05, seed=4
    )
    first = [(d.delivery_time, d.event["id"], d.copy) for d in _schedule(faults)[1]]
    again = [(d.delivery_time, d.event["id"], d.copy) for d in _schedule(faults)[1]]
    other = [(d.delivery_time, d.event["id"], d.copy) for d in _schedule(dataclasses.replace(faults, seed=5))[1]]
    assert first == again
    assert first != other


@pytest.mark.parametrize(("same", "new"), [(0.2, 0.0), (0.0, 0.15), (0.05, 0.3)])
def test_duplicate_rates_hold_and_each_kind_keeps_or_renews_the_id(same: float, new: float) -> None:
    deliverer, deliveries = _schedule(DeliveryFaults(same_id_duplicate_rate=same, new_id_duplicate_rate=new, seed=1))
    same_copies = [d for d in deliveries if d.copy == "same-id-duplicate"]
    new_copies = [d for d in deliveries if d.copy == "new-id-duplicate"]
    assert _within(len(same_copies), N, same)
    assert _within(len(new_copies), N, new)
    assert len(deliveries) == N + len(same_copies) + len(new_copies)
    originals = {d.emission_seq: d.event for d in deliveries if d.copy == "original"}
    assert len(originals) == N
    for copy in same_copies:
        assert copy.event is originals[copy.emission_seq]  # EventBridge redelivers the very same event
    for copy in new_copies:
        original = originals[copy.emission_seq]
        assert copy.event["id"] != original["id"]  # SageMaker sends another event for the same change
        assert uuid.UUID(copy.event["id"]).version == 4
        assert copy.event["detail"] == original["detail"]
        assert copy.event["time"] == original["time"]
    assert len({c.event["id"] for c in new_copies}) == len(new_copies)
    assert (deliverer.stats.same_id_duplicates, deliverer.stats.new_id_duplicates) == (
        len(same_copies),
        len(new_copies),
    )


def test_delays_are_uniform_in_range_and_reorder_without_delivering_early() -> None:
    max_delay = 20.0
    deliverer, deliveries = _schedule(DeliveryFaults(max_delay_s=max_delay, seed=2))
    latencies = [d.latency_s for d in deliveries]
    assert all(0.0 <= latency <= max_delay for latency in latencies)
    assert abs(sum(latencies) / len(latencies) - max_delay / 2) < 0.5  # uniform: mean 10 s, sd of the mean ~0.09 s
    assert sum(1 for latency in latencies if latency < max_delay / 2) == pytest.approx(N / 2, abs=4 * math.sqrt(N) / 2)
    times = [d.delivery_time for d in deliveries]
    assert times == sorted(times)
    # Events 1 s apart, delays up to 20 s: many are overtaken by later ones.
    seqs = [d.emission_seq for d in deliveries]
    assert seqs != sorted(seqs)
    assert deliverer.stats.overtaken > N / 4
    assert deliverer.stats.max_latency_s <= max_delay


def test_drops_remove_an_event_and_all_its_copies_and_are_recorded() -> None:
    faults = DeliveryFaults(drop_rate=0.1, same_id_duplicate_rate=0.5, new_id_duplicate_rate=0.5, seed=3)
    deliverer, deliveries = _schedule(faults)
    dropped_ids = {d.event_id for d in deliverer.dropped}
    assert _within(len(dropped_ids), N, 0.1)
    delivered_seqs = {d.emission_seq for d in deliveries}
    assert delivered_seqs.isdisjoint({d.emission_seq for d in deliverer.dropped})
    assert delivered_seqs | {d.emission_seq for d in deliverer.dropped} == set(range(N))
    assert not dropped_ids & {d.event_id for d in deliveries}
    assert deliverer.stats.dropped == len(deliverer.dropped)


def test_switching_a_fault_on_does_not_change_the_other_draws() -> None:
    delays_only = {d.emission_seq: d.delivery_time for d in _schedule(DeliveryFaults(max_delay_s=10, seed=8))[1]}
    with_duplicates = _schedule(DeliveryFaults(max_delay_s=10, same_id_duplicate_rate=0.3, seed=8))[1]
    assert {d.emission_seq: d.delivery_time for d in with_duplicates if d.copy == "original"} == delays_only


def test_a_reorder_window_shuffles_blocks_released_together() -> None:
    events = _stream(300, spacing_s=0.0)  # a burst: all emitted in the same second
    deliverer, deliveries = _schedule(DeliveryFaults(reorder_window=5, seed=6), events)
    seqs = [d.emission_seq for d in deliveries]
    assert sorted(seqs) == list(range(300))
    assert seqs != list(range(300))
    for block in itertools.batched(seqs, 5, strict=True):
        assert max(block) - min(block) == 4  # a permutation of 5 consecutive events
    assert all(d.delivery_time == T0 for d in deliveries)
    assert deliverer.stats.overtaken > 0


def test_newest_first_releases_each_block_in_reverse_emission_order() -> None:
    events = _stream(16, spacing_s=0.0)  # two bursts of 8 in the same second
    _, deliveries = _schedule(DeliveryFaults(reorder_window=8, newest_first=True), events)
    assert [d.emission_seq for d in deliveries] == [*range(7, -1, -1), *range(15, 7, -1)]


def test_a_partial_reorder_block_is_released_after_the_hold() -> None:
    events = [_event(0, T0), _event(1, T0), _event(2, T0 + timedelta(seconds=60))]
    deliverer = Deliverer(DeliveryFaults(reorder_window=4, reorder_hold_s=5.0))
    for event in events:
        deliverer.submit(event)
    assert deliverer.due(T0 + timedelta(seconds=4)) == []
    assert deliverer.next_due() == T0 + timedelta(seconds=5)
    first = deliverer.due(T0 + timedelta(seconds=5))
    assert sorted(d.emission_seq for d in first) == [0, 1]
    assert all(d.delivery_time == T0 + timedelta(seconds=5) for d in first)
    rest = deliverer.drain()
    assert [(d.emission_seq, d.delivery_time) for d in rest] == [(2, T0 + timedelta(seconds=65))]


def test_redelivery_comes_at_the_requested_time_with_the_next_attempt_number() -> None:
    deliverer = Deliverer()
    deliverer.submit(_event(0, T0))
    (first,) = deliverer.due(T0)
    retry = deliverer.redeliver(first, T0 + timedelta(seconds=60))
    assert deliverer.due(T0 + timedelta(seconds=59)) == []
    (again,) = deliverer.due(T0 + timedelta(seconds=60))
    assert again == retry
    assert (again.attempt, again.event, again.copy) == (2, first.event, "original")
    assert deliverer.stats.redeliveries == 1


def test_an_event_submitted_after_its_time_was_released_is_delivered_at_the_watermark() -> None:
    deliverer = Deliverer()
    deliverer.submit(_event(0, T0))
    deliverer.due(T0 + timedelta(seconds=30))
    deliverer.submit(_event(1, T0 + timedelta(seconds=10)))  # emitted earlier than what was already released
    (late,) = deliverer.due(T0 + timedelta(seconds=30))
    assert late.delivery_time == T0 + timedelta(seconds=30)


def test_delivery_order_yields_time_and_event_pairs() -> None:
    events = _stream(50)
    pairs = delivery_order(events, DeliveryFaults(max_delay_s=3, seed=9))
    assert sorted(e["id"] for _, e in pairs) == sorted(e["id"] for e in events)
    assert [t for t, _ in pairs] == sorted(t for t, _ in pairs)


@pytest.mark.parametrize(
    "kwargs",
    [{"drop_rate": 1.5}, {"same_id_duplicate_rate": -0.1}, {"max_delay_s": -1}, {"reorder_window": -2}],
)
def test_invalid_faults_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"must be|cannot be"):
        DeliveryFaults(**kwargs)


def test_an_event_without_an_envelope_time_needs_an_explicit_emission_time() -> None:
    event = _event(0, T0)
    del event["time"]
    with pytest.raises(ValueError, match="no envelope time"):
        Deliverer().submit(event)
    (scheduled,) = Deliverer().submit(event, emitted_at=T0)
    assert scheduled.delivery_time == T0
