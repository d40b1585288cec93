"""Store contract, ``QueueStore``: submitted requests, their order and their conditional state changes
(every adapter)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from tests.contract.conftest import T0, Adapter
from tuning_governor.models.queue import QueuedRequest, job_name_for
from tuning_governor.ports import Store

ROLE = "arn:aws:iam::123456789012:role/nlp-submit"


def entry(submission: str = "t-1", *, team: str = "nlp", priority: int = 0, minutes: int = 0) -> QueuedRequest:
    name = job_name_for(team, submission)
    return QueuedRequest(
        client_token=submission,
        team=team,
        submitter=ROLE,
        job_name=name,
        request={"HyperParameterTuningJobName": name, "Objective": 0.25, "Nested": {"N": [1, 2.5]}},
        demand={"ml.p3.2xlarge": 4},
        priority=priority,
        enqueued_at=T0 + timedelta(minutes=minutes),
        wait_until=T0 + timedelta(hours=2),
    )


def test_a_request_reads_back_as_it_was_enqueued_floats_and_all(store: Store) -> None:
    stored, new = store.enqueue(entry())
    assert new
    assert store.get_request(stored.job_name) == entry()
    assert store.get_request("q-unknown") is None


def test_a_repeated_submission_is_one_entry_in_its_first_place(store: Store) -> None:
    first, _ = store.enqueue(entry("a", minutes=0))
    store.enqueue(entry("b", minutes=1))
    again, new = store.enqueue(entry("a", minutes=5))
    assert not new
    assert again.enqueued_at == first.enqueued_at
    assert [r.client_token for r in store.waiting_requests()] == ["a", "b"]


def test_waiting_requests_come_in_priority_then_fifo_order(store: Store) -> None:
    store.enqueue(entry("late-high", priority=5, minutes=9))
    store.enqueue(entry("early-low", priority=-3, minutes=0))
    store.enqueue(entry("early", minutes=1))
    store.enqueue(entry("later", minutes=2))
    assert [r.client_token for r in store.waiting_requests()] == ["late-high", "early", "later", "early-low"]


def test_a_claim_is_exclusive_until_its_lease_ends(store: Store) -> None:
    name = store.enqueue(entry())[0].job_name
    assert store.claim_request(name, "one", T0, T0 + timedelta(minutes=5))
    assert not store.claim_request(name, "two", T0 + timedelta(minutes=4), T0 + timedelta(minutes=9))
    held = store.get_request(name)
    assert held is not None and (held.state, held.claim_owner) == ("admitting", "one")
    # The holder crashed: after its lease another admission may claim it
    assert store.claim_request(name, "two", T0 + timedelta(minutes=6), T0 + timedelta(minutes=11))
    assert not store.release_request(name, "one")
    assert store.release_request(name, "two")
    back = store.get_request(name)
    assert back is not None and (back.state, back.claim_owner) == ("queued", None)
    assert [r.job_name for r in store.waiting_requests()] == [name]


@pytest.mark.parametrize("state", ["admitted", "expired", "refused"])
def test_a_finished_request_leaves_the_queue_once(adapter: Adapter, state: str) -> None:
    store = adapter.store
    name = store.enqueue(entry())[0].job_name
    assert store.finish_request(name, state, "why", T0)  # type: ignore[arg-type]
    assert not store.finish_request(name, "refused", "again", T0)
    assert not store.claim_request(name, "x", T0, T0 + timedelta(minutes=5))
    assert store.waiting_requests() == []
    done = store.get_request(name)
    assert done is not None and (done.state, done.reason) == (state, "why")
    item = next(i for i in adapter.dump() if i["pk"] == f"QUEUE#{name}")
    assert "gsi1pk" not in item


@pytest.mark.usefixtures("atomic_moto_requests")
def test_of_many_concurrent_claims_exactly_one_wins(store: Store) -> None:
    name = store.enqueue(entry())[0].job_name
    wins: list[str] = []
    barrier = threading.Barrier(8)

    def claim(owner: str) -> None:
        barrier.wait()
        if store.claim_request(name, owner, T0, T0 + timedelta(minutes=5)):
            wins.append(owner)

    threads = [threading.Thread(target=claim, args=(f"o{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1


def test_an_admission_records_what_it_borrowed_and_the_consent_to_fit(store: Store) -> None:
    consenting = entry("fit").model_copy(update={"fit_to_share": True})
    name = store.enqueue(consenting)[0].job_name
    assert store.finish_request(name, "admitted", "borrowing 2 ml.p3.2xlarge", T0, {"ml.p3.2xlarge": 2})
    stored = store.get_request(name)
    assert stored is not None
    assert (stored.state, stored.borrowed, stored.fit_to_share) == ("admitted", {"ml.p3.2xlarge": 2}, True)
