"""Store contract, ``DecisionStore`` and ``JudgementStore``: decisions claimed once, the rules' marks
on a job set once (every adapter)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.contract.conftest import (
    T0,
    Adapter,
    decision,
    tuning_job,
    upsert,
)
from tuning_governor.errors import StaleState
from tuning_governor.ports import Store

KEY = "job-a"
JOB_KEY = tuning_job().key


def test_a_decision_is_opened_once_and_its_stored_figures_win(store: Store) -> None:
    first = store.open_decision(decision(message="first"), "enforce", T0)
    assert first is not None
    assert (first["state"], first["message"], first["mode"], first["gsi1pk"]) == (
        "pending",
        "first",
        "enforce",
        "STEP#pending",
    )
    assert first["numbers"] == {"spent_usd": 12.5, "limit_usd": 10, "types": ["ml.p3.2xlarge"]}
    # A retry racing it gets the stored (pending) row, not its own figures
    again = store.open_decision(decision(message="second"), "monitor", T0 + timedelta(minutes=1))
    assert again == first
    assert store.get_decision(KEY, "budget", "breach") == first
    assert store.get_decision(KEY, "budget", "warning") is None
    assert store.claim_decision(decision(), "enforce", T0) is True  # pending, no action yet


def test_a_decision_action_is_recorded_then_finished(store: Store) -> None:
    job = tuning_job(name=KEY)
    store.upsert_job(job, region="us-east-1", team="nlp", owner=None, event_time=T0)
    with pytest.raises(StaleState):
        store.record_decision_action(decision(), "stopped", "stop-requested", stop_requested_at=T0)
    assert "stop_requested_at" not in (store.get_job(KEY) or {})  # all or nothing
    store.open_decision(decision(), "enforce", T0)
    store.record_decision_action(decision(), "stopped", "stop-requested", stop_requested_at=T0 + timedelta(minutes=1))
    store.record_decision_action(decision(), "stopped", "stop-requested", stop_requested_at=T0 + timedelta(minutes=2))
    assert (store.get_job(KEY) or {})["stop_requested_at"] == "2026-11-30T09:01:00.000+00:00"  # the first stop
    # Pending with its action recorded: the step ledger resumes it, a new claim does not act again
    assert store.claim_decision(decision(), "enforce", T0) is False
    assert [d["sk"] for d in store.pending_decisions(KEY)] == ["DECISION#budget#breach"]
    store.finish_decision(decision(), "stopped", "stop-requested")
    stored = store.get_decision(KEY, "budget", "breach")
    assert stored is not None
    assert (stored["state"], stored["action"], stored["action_detail"]) == ("done", "stopped", "stop-requested")
    assert "gsi1pk" not in stored and "gsi1sk" not in stored
    assert store.open_decision(decision(), "enforce", T0) is None
    assert store.claim_decision(decision(), "enforce", T0) is False
    assert store.pending_decisions(KEY) == []


def test_pending_decisions_older_than_a_time_are_listed_across_jobs(store: Store) -> None:
    store.open_decision(decision(job_key="b"), "enforce", T0 + timedelta(minutes=2))
    store.open_decision(decision(job_key="a"), "enforce", T0 + timedelta(minutes=1))
    store.open_decision(decision("runtime", job_key="a"), "enforce", T0 + timedelta(minutes=9))
    store.open_decision(decision("failed", "warning", job_key="c"), "enforce", T0)
    store.finish_decision(decision("failed", "warning", job_key="c"), "reported", "")
    stale = store.stale_pending_decisions(T0 + timedelta(minutes=5))
    assert [(d["pk"], d["rule"]) for d in stale] == [("JOB#a", "budget"), ("JOB#b", "budget")]
    assert [d["rule"] for d in store.decisions("a")] == ["budget", "runtime"]
    assert [d["rule"] for d in store.pending_decisions("a")] == ["budget", "runtime"]


def test_a_decision_record_without_its_job_item_writes_nothing(adapter: Adapter) -> None:
    store = adapter.store
    store.open_decision(decision(), "enforce", T0)
    before = adapter.dump()
    with pytest.raises(Exception):  # noqa: B017, PT011 - DynamoDB's TransactionCanceledException, or the memory store's
        store.record_decision_action(decision(), "stopped", "stop-requested", stop_requested_at=T0)
    assert adapter.dump() == before


def test_finishing_a_decision_never_claimed_leaves_a_done_row(store: Store) -> None:
    store.finish_decision(decision(), "already-ended", "late")
    assert store.get_decision(KEY, "budget", "breach") == {
        "pk": "JOB#job-a",
        "sk": "DECISION#budget#breach",
        "state": "done",
        "action": "already-ended",
        "action_detail": "late",
    }


def test_marks_set_once(store: Store) -> None:
    assert store.set_budget_check(JOB_KEY, T0) is False  # no job item
    upsert(store)
    assert store.mark_arrival(JOB_KEY, T0) is True
    assert store.mark_arrival(JOB_KEY, T0 + timedelta(minutes=1)) is False
    assert store.set_budget_check(JOB_KEY, T0) is True
    assert store.set_budget_check(JOB_KEY, T0 + timedelta(minutes=2)) is True
    meta = store.get_job(JOB_KEY)
    assert meta is not None
    assert meta["arrival_evaluated_at"] == "2026-11-30T09:00:00.000+00:00"
    assert meta["budget_check_at"] == "2026-11-30T09:02:00.000+00:00"


def test_a_pending_decision_has_one_owner_at_a_time(store: Store) -> None:
    assert store.lease_decision(KEY, "budget", "breach", "a", T0) is None  # unknown
    store.open_decision(decision(), "enforce", T0)
    leased = store.lease_decision(KEY, "budget", "breach", "a", T0)
    assert leased is not None and (leased["state"], leased["lease_token"]) == ("pending", "a")
    # Another caller waits while the lease runs; the owner takes it again (its own retry)
    assert store.lease_decision(KEY, "budget", "breach", "b", T0 + timedelta(minutes=4)) is None
    assert store.lease_decision(KEY, "budget", "breach", "a", T0 + timedelta(minutes=1)) is not None
    # A lease run out (its owner crashed) goes to the next caller; given back, at once
    assert store.lease_decision(KEY, "budget", "breach", "b", T0 + timedelta(minutes=7)) is not None
    store.release_decision(KEY, "budget", "breach", "a")  # not a's any more: nothing happens
    assert store.lease_decision(KEY, "budget", "breach", "c", T0 + timedelta(minutes=7)) is None
    store.release_decision(KEY, "budget", "breach", "b")
    assert store.lease_decision(KEY, "budget", "breach", "c", T0 + timedelta(minutes=7)) is not None
    # A finished decision is nobody's
    store.finish_decision(decision(), "stopped", "stop-requested")
    assert store.lease_decision(KEY, "budget", "breach", "c", T0 + timedelta(minutes=7)) is None
