"""Store contract, ``CapacityStore``: what holds instances, the capacity ledger, snapshots (every adapter)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.contract.conftest import (
    T0,
    Adapter,
    decision,
    reservation,
    summary,
    training_job,
    tuning_job,
    upsert,
)
from tuning_governor.domain.capacity import Reservation
from tuning_governor.ports import Store


def test_standalone_training_jobs_hold_instances_while_active(store: Store) -> None:
    assert store.upsert_training_job(training_job(modified=T0 + timedelta(minutes=5)), team="cv", event_time=T0) is True
    assert store.upsert_training_job(training_job(modified=T0), team="cv", event_time=T0) is False  # older event
    [holder] = store.holders()
    assert (holder.key, holder.kind, holder.team) == ("TRAINING#solo-train", "training-job", "cv")
    assert dict(holder.instances) == training_job().instances()
    done = training_job(status="Completed", modified=T0 + timedelta(minutes=9))
    assert store.upsert_training_job(done, team=None, event_time=T0) is True
    assert store.holders() == []
    again = training_job(status="InProgress", modified=T0 + timedelta(minutes=10))
    assert store.upsert_training_job(again, team="cv", event_time=T0) is False  # never back from terminal


def test_warm_pools_hold_instances_while_available(store: Store) -> None:
    store.set_warm_pool(training_job("Pool-B", "Completed", warm_pool="Available"), team="cv")
    store.set_warm_pool(training_job("pool-a", "Completed", warm_pool="Available"), team=None)
    assert store.warm_pool_names() == {"Pool-B", "pool-a"}
    assert [(h.key, h.kind, h.team) for h in store.holders()] == [
        ("WARMPOOL#pool-a", "warm-pool", None),
        ("WARMPOOL#pool-b", "warm-pool", "cv"),
    ]
    store.set_warm_pool(training_job("pool-b", "Completed", warm_pool="Terminated"), team="cv")
    store.release_warm_pool("POOL-A")
    store.release_warm_pool("never")
    assert store.warm_pool_names() == set()


def test_set_warm_pool_writes_nothing_for_a_job_that_asked_for_no_pool(adapter: Adapter) -> None:
    store = adapter.store
    store.set_warm_pool(training_job("pool-c", "Completed", warm_pool="Available"), team="cv")
    before = adapter.dump()
    # No warm-pool status and no KeepAlivePeriodInSeconds: no holder to write or release
    store.set_warm_pool(training_job("pool-c", "Completed"), team="cv")
    store.set_warm_pool(training_job("pool-d", "Completed", keep_alive=0), team="cv")
    assert adapter.dump() == before
    # A job that asked for a pool and shows no status (it ended): its holder is released
    store.set_warm_pool(training_job("pool-c", "Completed", keep_alive=600), team="cv")
    assert store.warm_pool_names() == set()


def test_holders_count_running_tuning_jobs_unless_the_ledger_does(store: Store) -> None:
    job = tuning_job()
    store.upsert_job(job, region="us-east-1", team="nlp", owner=None, event_time=T0)
    [holder] = store.holders()
    assert (holder.key, holder.kind, holder.team, dict(holder.instances)) == (
        job.key,
        "tuning-job",
        "nlp",
        job.demand(),
    )
    assert store.holders(tuning_jobs=False) == []


def test_the_ledger_commits_in_version_order(adapter: Adapter) -> None:
    store = adapter.store
    assert store.read_ledger().version == 0
    assert store.read_ledger().reservations == {}
    # The first commit creates the ledger; a second writer that read version 0 loses
    assert store.commit_admission(0, "job-a", reservation("job-a")) == "committed"
    assert store.commit_admission(0, "job-b", reservation("job-b")) == "conflict"
    ledger = store.read_ledger()
    assert (ledger.version, sorted(ledger.reservations)) == (1, ["job-a"])
    assert ledger.reservations["job-a"] == reservation("job-a")
    # A judgement with nothing to reserve still takes its place in the order
    assert store.commit_admission(1, "job-c", None) == "committed"
    assert store.read_ledger().version == 2
    # The commit and its decision claim are one write: a claim already made is "decided", nothing written
    claim = (decision(job_key="job-b"), "enforce", T0)
    assert store.commit_admission(2, "job-b", reservation("job-b"), claim) == "committed"
    assert store.get_decision("job-b", "budget", "breach") is not None
    before = adapter.dump()
    assert store.commit_admission(3, "job-b", reservation("job-b", 5), claim) == "decided"
    assert store.commit_admission(2, "job-b", reservation("job-b", 5), claim) == "conflict"
    assert adapter.dump() == before
    # Reconciling: set and remove in one write at the version read
    assert store.update_reservations(3, {}, []) is True
    assert store.update_reservations(2, {"job-d": reservation("job-d")}, []) is False
    assert store.update_reservations(3, {"job-d": reservation("job-d", 3)}, ["job-a"]) is True
    ledger = store.read_ledger()
    assert (ledger.version, sorted(ledger.reservations)) == (4, ["job-b", "job-d"])
    assert ledger.reservations["job-d"].on_demand == {"ml.p3.2xlarge": 3}
    # Releasing moves the version on, once; the reservation is kept as ended, at its end time
    ended = "2026-11-30T09:20:00.000+00:00"
    assert store.release_reservation("job-b", ended) is True
    assert store.release_reservation("job-b", "2026-11-30T09:30:00.000+00:00") is False
    assert store.release_reservation("never", ended) is False
    ledger = store.read_ledger()
    assert (ledger.version, sorted(ledger.reservations)) == (5, ["job-d"])
    assert dict(ledger.ended) == {"job-b": replace(reservation("job-b"), ended=ended)}


def test_ended_reservations_count_as_of_a_creation_before_their_end_and_are_pruned(store: Store) -> None:
    # Given job-a (2) created at 09:00, ended at 09:20 (released by its end event); job-d (3) ended by the sweep
    early = replace(reservation("job-a"), job_created="2026-11-30T09:00:00.000+00:00")
    assert store.commit_admission(0, "job-a", early) == "committed"
    assert store.release_reservation("job-a", "2026-11-30T09:20:00.000+00:00") is True
    gone = replace(
        reservation("job-d", 3), job_created="2026-11-30T09:01:00.000+00:00", ended="2026-11-30T09:05:00.000+00:00"
    )
    assert store.update_reservations(2, {"job-d": gone}, []) is True
    ledger = store.read_ledger()
    assert ledger.holders() == []  # nothing held now
    # Then a job created at 09:10 is judged against job-a (ended after it was created), not job-d
    assert sorted(ledger.before(("2026-11-30T09:10:00.000+00:00", "job-x")).reservations) == ["job-a"]
    assert ledger.before(("2026-11-30T09:25:00.000+00:00", "job-x")).reservations == {}
    # And a later commit prunes the ended reservations past their retention
    assert ledger.expired("2026-11-30T09:10:00.000+00:00") == ["job-d"]
    assert store.commit_admission(3, "job-x", reservation("job-x"), prune=["job-d"]) == "committed"
    ledger = store.read_ledger()
    assert (sorted(ledger.reservations), sorted(ledger.ended)) == (["job-x"], ["job-a"])


def test_reconciling_before_any_admission_creates_the_ledger(store: Store) -> None:
    assert store.release_reservation("job-a", "2026-11-30T09:20:00.000+00:00") is False
    assert store.update_reservations(0, {"job-a": reservation("job-a")}, ["job-z"]) is True
    assert store.update_reservations(0, {"job-b": reservation("job-b")}, []) is False
    ledger = store.read_ledger()
    assert (ledger.version, sorted(ledger.reservations)) == (1, ["job-a"])


def test_capacity_snapshot(adapter: Adapter) -> None:
    store = adapter.store
    store.put_capacity_snapshot({"at": T0, "used": {"ml.p3.2xlarge": 3}, "share": 0.5})
    [snapshot] = [item for item in adapter.dump() if item["pk"] == "CAPACITY"]
    assert snapshot == {
        "pk": "CAPACITY",
        "sk": "SNAPSHOT",
        "at": "2026-11-30T09:00:00.000+00:00",
        "used": {"ml.p3.2xlarge": 3},
        "share": 0.5,
    }


def test_an_admission_commits_nothing_for_a_job_whose_end_was_recorded_first(adapter: Adapter) -> None:
    store = adapter.store
    key = tuning_job().key
    assert upsert(store) is True
    assert store.commit_admission(0, "other", None) == "committed"
    # Given the job's end recorded (its summary sets the terminal status) while its arrival is judged
    store.write_summary(summary(tuning_job("Stopped", modified=T0 + timedelta(minutes=3)), []))
    before = adapter.dump()
    # When the arrival commits its reservation and its breach claim
    claim = (decision("concurrency", job_key=key), "enforce", T0)
    assert store.commit_admission(1, key, reservation(key), claim) == "ended"
    # Then nothing is written: no reservation for the end to have missed, no decision to act on
    assert adapter.dump() == before
    assert store.read_ledger().reservations == {}


def test_an_admission_displaces_later_created_jobs_in_the_same_commit(adapter: Adapter) -> None:
    store = adapter.store
    late = replace(reservation("job-late", 3), job_created="2026-11-30T09:00:30.000+00:00", incomplete=True)
    kept = replace(reservation("job-kept", 1), job_created="2026-11-30T09:00:40.000+00:00")
    assert store.commit_admission(0, "job-late", late) == "committed"
    assert store.commit_admission(1, "job-kept", kept) == "committed"
    assert store.read_ledger().reservations["job-late"] == late  # CreationTime and incompleteness kept
    # When an earlier-created job is admitted: one later job removed, one kept over the limit, both claimed
    early = replace(reservation("job-early", 2), job_created="2026-11-30T09:00:00.000+00:00")
    removed = ("job-late", None, (decision("concurrency", job_key="job-late"), "enforce", T0))
    over = replace(kept, over_limit=True)
    exempt = ("job-kept", over, (decision("concurrency", job_key="job-kept"), "enforce", T0))
    assert store.commit_admission(2, "job-early", early, None, [removed, exempt]) == "committed"
    ledger = store.read_ledger()
    assert (ledger.version, dict(ledger.reservations)) == (3, {"job-early": early, "job-kept": over})
    assert store.get_decision("job-late", "concurrency", "breach") is not None
    assert store.get_decision("job-kept", "concurrency", "breach") is not None
    # A breacher's decision already claimed: nothing written, judge again
    before = adapter.dump()
    again = ("job-kept", None, (decision("concurrency", job_key="job-kept"), "enforce", T0))
    assert store.commit_admission(3, "job-other", None, None, [again]) == "conflict"
    assert adapter.dump() == before


def test_the_last_sweep_of_each_place_is_kept_one_item_per_place(store: Store) -> None:
    assert store.places_swept() == {}
    store.mark_place_swept("111111111111/eu-west-1", T0)
    store.mark_place_swept("222222222222/us-east-1", T0)
    store.mark_place_swept("111111111111/eu-west-1", T0 + timedelta(minutes=5))  # the newest wins
    assert store.places_swept() == {
        "111111111111/eu-west-1": T0 + timedelta(minutes=5),
        "222222222222/us-east-1": T0,
    }
    assert store.read_ledger().reservations == {}  # nothing else written


def test_a_reservation_reads_back_field_for_field_whatever_its_values(store: Store) -> None:
    # Every field away from its default (a field added to Reservation is read back by its type, or
    # this fails on a type the reader does not know), then a bare one: no team, defaults kept.
    full = Reservation(
        job_key="job-f",
        team="nlp",
        on_demand={"ml.p3.2xlarge": 4, "ml.m5.xlarge": 1},
        spot={"ml.g5.xlarge": 2},
        plan="per-trial",
        slots=3,
        per_trial_on_demand={"ml.p3.2xlarge": 2},
        per_trial_spot={"ml.g5.xlarge": 1},
        created="2026-11-30T09:00:00.000+00:00",
        over_limit=True,
        version=7,
        job_created="2026-11-30T08:59:00.000+00:00",
        incomplete=True,
        ended="",
    )
    bare = Reservation("job-g", None, {}, {}, "", 1, {}, {}, "")
    assert store.commit_admission(0, "job-f", full) == "committed"
    assert store.update_reservations(1, {"job-g": bare}, []) is True
    ledger = store.read_ledger()
    assert ledger.reservations == {"job-f": full, "job-g": bare}
    assert all(type(count) is int for count in ledger.reservations["job-f"].on_demand.values())
    assert store.release_reservation("job-f", "2026-11-30T10:00:00.000+00:00") is True
    assert store.read_ledger().ended["job-f"] == replace(full, ended="2026-11-30T10:00:00.000+00:00")
