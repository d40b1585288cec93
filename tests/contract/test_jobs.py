"""Store contract, ``JobStore``: tuning jobs, summaries, summary gaps, a job's items (every adapter)."""

from __future__ import annotations

import contextlib
from datetime import timedelta
from decimal import Decimal

from governor_client.memory import MemoryStore
from tests.contract.conftest import (
    T0,
    summary,
    trial,
    tuning_job,
    upsert,
)
from tests.memory_guard import ReadOnlyItemError
from tuning_governor.adapters.store.jobs import Jobs
from tuning_governor.adapters.store.trials import Trials
from tuning_governor.ports import Store

JOB = tuning_job()


KEY = JOB.key


def test_upsert_job_writes_the_job_and_refuses_stale_events(store: Store) -> None:
    # Given a job recorded InProgress at T0+5
    assert upsert(store, minutes=5) is True
    meta = store.get_job(KEY)
    assert meta is not None
    assert (meta["status"], meta["team"], meta["owner"], meta["region"]) == ("InProgress", "nlp", "ana", "us-east-1")
    assert meta["last_modified"] == "2026-11-30T09:05:00.000+00:00"
    assert isinstance(meta["max_parallel"], Decimal)
    assert "stopping_at" not in meta
    # When an older event arrives, then it is refused and nothing changes
    assert upsert(store, "Stopping", minutes=1) is False
    assert store.get_job(KEY) == meta
    # A newer one is taken; Stopping keeps its first time
    assert upsert(store, "Stopping", minutes=6) is True
    assert upsert(store, "Stopping", minutes=7) is True
    assert store.get_job(KEY)["stopping_at"] == "2026-11-30T09:06:00.000+00:00"  # type: ignore[index]
    # A terminal status is never left, even for a newer non-terminal event
    assert upsert(store, "Stopped", minutes=8) is True
    assert upsert(store, "InProgress", minutes=9) is False
    assert store.get_job(KEY)["status"] == "Stopped"  # type: ignore[index]


def test_get_job_of_an_unknown_job_is_none_and_a_reader_cannot_change_the_table(store: Store) -> None:
    """DynamoDB hands each reader its own copy; the in-memory table hands the stored item, read-only in
    the suite (tests/memory_guard.py): either way a reader's change never reaches the table."""
    assert store.get_job("nope") is None
    upsert(store)
    first = store.get_job(KEY)
    assert first is not None
    for change in (lambda: first.__setitem__("status", "changed"), lambda: first["tags"].__setitem__("x", "y")):
        with contextlib.suppress(ReadOnlyItemError):
            change()
    again = store.get_job(KEY)
    assert again is not None
    assert again["status"] == "InProgress"
    assert "x" not in again["tags"]


def test_jobs_with_status_follow_the_status(store: Store) -> None:
    upsert(store)
    other = tuning_job(name="other-job", modified=T0)
    store.upsert_job(other, region="us-east-1", team="cv", owner=None, event_time=T0)
    assert [item["job_name"] for item in store.jobs_with_status("InProgress")] == sorted(
        [JOB.name, "other-job"], key=lambda n: (JOB.creation_time, f"JOB#{n.lower()}")
    )
    assert [item["job_name"] for item in store.team_jobs_in_progress("cv")] == ["other-job"]
    upsert(store, "Stopping", minutes=1)
    assert [item["job_name"] for item in store.jobs_with_status("Stopping")] == [JOB.name]
    assert [item["job_name"] for item in store.jobs_with_status("InProgress")] == ["other-job"]
    assert store.team_jobs_in_progress("nlp") == []


def test_summary_is_written_idempotently_and_makes_the_job_terminal(store: Store) -> None:
    upsert(store)
    store.record_trial(trial(1, job_key=KEY), job=store.get_job(KEY))
    assert store.get_summary(KEY) is None
    done = summary(tuning_job("Completed", modified=T0 + timedelta(minutes=30)), store.trial_records(KEY))
    store.write_summary(done)
    store.write_summary(done)
    assert store.get_summary(KEY) == done
    meta = store.get_job(KEY)
    assert meta is not None
    assert (meta["status"], meta["gsi1pk"]) == ("Completed", "STATUS#Completed")
    assert store.jobs_with_status("InProgress") == []
    assert [item["job_name"] for item in store.jobs_with_status("Completed")] == [JOB.name]
    # The first report's figures are kept once
    assert store.set_summary_reported(KEY, Decimal("1.25"), T0) is True
    assert store.set_summary_reported(KEY, Decimal("9"), T0 + timedelta(hours=1)) is False
    meta = store.get_job(KEY)
    assert meta is not None
    assert (meta["summary_reported_usd"], meta["summary_reported_at"]) == (
        Decimal("1.25"),
        "2026-11-30T09:00:00.000+00:00",
    )
    assert [item["sk"] for item in store.items(KEY)] == [
        "META",
        "SUMMARY",
        f"TRIAL#{trial(1, job_key=KEY).training_job_name.lower()}",
    ]


def test_gaps_are_listed_oldest_end_first_until_cleared(store: Store) -> None:
    store.mark_gaps("b", job_name="B", region="us-east-1", ended_at=T0 + timedelta(hours=2), missing=["t2", "t1"])
    store.mark_gaps("a", job_name="A", region="us-east-1", ended_at=T0 + timedelta(hours=1), missing=["t3"])
    store.mark_gaps("a", job_name="A", region="us-east-1", ended_at=T0 + timedelta(hours=1), missing=["t3", "t4"])
    gaps = store.jobs_with_gaps()
    assert [(g["job_name"], g["missing"]) for g in gaps] == [("A", ["t3", "t4"]), ("B", ["t1", "t2"])]
    store.clear_gaps("a")
    store.clear_gaps("never")
    assert [g["job_name"] for g in store.jobs_with_gaps()] == ["B"]


def test_refresh_tags_replaces_a_running_jobs_tags_and_owner_but_never_its_team(store: Store) -> None:
    # Unknown job: nothing written
    assert store.refresh_tags(KEY, tags={"a": "b"}, owner=None, read_at=T0) is False
    assert store.get_job(KEY) is None
    # Given a running job of team nlp, owner ana
    upsert(store, minutes=5)
    # When its tags are re-read (exempt added, owner changed, team tag moved)
    new_tags = {"governance:exempt": "true", "owner": "bo", "team": "cv"}
    assert store.refresh_tags(KEY, tags=new_tags, owner="bo", read_at=T0 + timedelta(minutes=6)) is True
    meta = store.get_job(KEY)
    assert meta is not None
    assert (meta["tags"], meta["owner"], meta["team"]) == (new_tags, "bo", "nlp")
    # An older read never overwrites a newer one
    assert store.refresh_tags(KEY, tags={}, owner=None, read_at=T0 + timedelta(minutes=5)) is False
    assert store.get_job(KEY)["tags"] == new_tags  # type: ignore[index]
    # An owner tag removed: no owner
    assert store.refresh_tags(KEY, tags={}, owner=None, read_at=T0 + timedelta(minutes=7)) is True
    assert "owner" not in store.get_job(KEY)  # type: ignore[operator]
    # An ended job's tags are its final ones
    upsert(store, "Stopped", minutes=8)
    assert store.refresh_tags(KEY, tags={"x": "y"}, owner=None, read_at=T0 + timedelta(minutes=9)) is False


def test_an_area_built_over_the_store_reads_and_writes_the_same_table(store: Store) -> None:
    # store.area(kind): an area no façade joins, over the same item table and trial retention.
    jobs = store.area(Jobs)  # type: ignore[attr-defined]
    assert isinstance(jobs, Jobs) and jobs is not store
    assert upsert(store) is True
    assert jobs.get_job(KEY) == store.get_job(KEY)
    assert jobs.set_summary_reported(KEY, Decimal("1.5"), T0) is True
    assert store.get_job(KEY)["summary_reported_usd"] == Decimal("1.5")  # type: ignore[index]
    kept = MemoryStore(trial_retention_days=365).area(Trials)
    assert kept._trial_retention == timedelta(days=365)  # finished trials of the area expire as the store's
