"""Store contract: tuning jobs, trials, running trials, team months and summaries (every adapter)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from tests.contract.conftest import T0, Adapter, running, summary, trial, tuning_job
from tuning_governor.errors import StaleState
from tuning_governor.ports import Store

JOB = tuning_job()
KEY = JOB.key


def upsert(store: Store, status: str = "InProgress", minutes: int = 0, team: str | None = "nlp") -> bool:
    job = tuning_job(status, modified=T0 + timedelta(minutes=minutes))
    return store.upsert_job(job, region="us-east-1", team=team, owner="ana", event_time=T0)


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


def test_get_job_of_an_unknown_job_is_none_and_reads_are_copies(store: Store) -> None:
    assert store.get_job("nope") is None
    upsert(store)
    first = store.get_job(KEY)
    assert first is not None
    first["status"] = "changed"
    first["tags"]["x"] = "y"
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


def test_record_trial_counts_once_and_returns_the_job_as_written(store: Store) -> None:
    # Given a running job with one running trial
    upsert(store)
    assert store.track_running(running(1, job_key=KEY), team="nlp") is True
    record = trial(1, job_key=KEY, cost=Decimal("1.250000"), warm_pool_seconds=0)
    # When its trial is recorded twice
    written = store.record_trial(record, job=store.get_job(KEY), team="nlp", latest_end=record.end_time)
    assert store.record_trial(record, job=store.get_job(KEY), team="nlp") is None
    # Then it is counted once, it no longer runs, and the item returned is the item as stored
    meta = store.get_job(KEY)
    assert meta is not None
    assert written == meta
    assert meta["trials_recorded"] == 1
    assert meta["trials_completed"] == 1
    assert meta["billable_instance_seconds"] == 1200
    assert meta["cost_usd"] == Decimal("1.250000")
    assert meta["spot_savings_usd"] == 0
    assert meta["running"] == {}
    assert meta["last_trial_end"] == "2026-11-30T09:10:00.000+00:00"
    assert store.team_running("nlp") == []
    assert [r.training_job_name for r in store.trial_records(KEY)] == [record.training_job_name]
    assert store.trial_records(KEY)[0] == record
    month = store.team_month("nlp", "2026-11")
    assert (month["trials"], month["finished_usd"], month["team"], month["month"]) == (
        1,
        Decimal("1.250000"),
        "nlp",
        "2026-11",
    )
    # A second, unpriced, spot-less trial adds to the same totals; without latest_end, the end stays
    again = store.record_trial(trial(2, job_key=KEY, cost=None, status="Failed"), job=meta, team="nlp")
    meta = store.get_job(KEY)
    assert meta is not None
    assert again == meta
    assert (meta["trials_recorded"], meta["trials_failed"], meta["unpriced_trials"]) == (2, 1, 1)
    assert meta["unpriced_types"] == {"ml.m5.xlarge"}
    assert meta["last_trial_end"] == "2026-11-30T09:10:00.000+00:00"
    assert store.team_month("nlp", "2026-11")["unpriced_trials"] == 1
    assert store.team_month("nlp", "1999-01") == {}


def test_team_spend_reads_month_totals_and_running_trials_from_one_item(adapter: Adapter) -> None:
    store = adapter.store
    upsert(store)
    assert store.team_spend("nlp", "2026-11") == ({}, [])
    store.track_running(running(1, job_key=KEY), team="nlp")
    store.track_running(running(2, job_key=KEY), team="nlp")
    store.record_trial(trial(1, job_key=KEY, cost=Decimal("1.250000")), job=store.get_job(KEY), team="nlp")
    totals, still_running = store.team_spend("nlp", "2026-11")
    assert totals == store.team_month("nlp", "2026-11")
    assert (totals["trials"], totals["finished_usd"]) == (1, Decimal("1.250000"))
    assert [t.trial for t in still_running] == [running(2, job_key=KEY).trial]
    assert store.team_spend("nlp", "2026-12") == ({}, still_running)
    # Month totals are attributes of the team's RUNNING item: no other team item is written
    assert [item["sk"] for item in adapter.dump() if item["pk"] == "TEAM#nlp"] == ["RUNNING"]


def test_record_trial_splits_a_team_month_and_keeps_spot_sums(store: Store) -> None:
    upsert(store)
    start = T0.replace(day=30, hour=23)  # 2 h across the month's end
    record = trial(1, job_key=KEY, cost=Decimal("2.000000"), spot=True, start=start, seconds=7200)
    assert store.record_trial(record, job=store.get_job(KEY), team="nlp") is not None
    november, december = store.team_month("nlp", "2026-11"), store.team_month("nlp", "2026-12")
    assert (november["trials"], december["trials"]) == (0, 1)
    assert november["finished_usd"] + december["finished_usd"] == Decimal("2.000000")
    assert november["finished_usd"] == Decimal("1.000000")
    assert "spot_billed_usd" in november and "spot_on_demand_usd" in december
    meta = store.get_job(KEY)
    assert meta is not None
    assert (meta["spot_billed_usd"], meta["spot_on_demand_usd"]) == (Decimal("2.000000"), Decimal("2.500000"))


def test_record_trial_of_a_job_never_seen_creates_its_totals(store: Store) -> None:
    written = store.record_trial(trial(1, job_key="ghost"), job=None)
    meta = store.get_job("ghost")
    assert meta is not None
    assert written == meta
    assert (meta["trials_recorded"], meta["running"]) == (1, {})


def test_record_trial_on_a_stale_trial_count_writes_nothing(adapter: Adapter) -> None:
    store = adapter.store
    upsert(store)
    read = store.get_job(KEY)
    assert store.record_trial(trial(1, job_key=KEY), job=read, team="nlp") is not None
    before = adapter.dump()
    # A writer that read the job before that trial (or read no item) loses: the count moved on
    with pytest.raises(StaleState):
        store.record_trial(trial(2, job_key=KEY), job=read, team="nlp")
    with pytest.raises(StaleState):
        store.record_trial(trial(2, job_key=KEY), job=None, team="nlp")
    assert adapter.dump() == before
    # Read again, it wins
    assert store.record_trial(trial(2, job_key=KEY), job=store.get_job(KEY), team="nlp") is not None
    assert store.get_job(KEY)["trials_recorded"] == 2  # type: ignore[index]


def test_record_trial_with_a_stale_stagnation_state_writes_nothing(adapter: Adapter) -> None:
    store = adapter.store
    upsert(store)
    state = {"trials_seen": 1, "best": Decimal("0.5")}
    assert store.record_trial(trial(1, job_key=KEY), job=store.get_job(KEY), stagnation=state) is not None
    before = adapter.dump()
    current = store.get_job(KEY)
    assert current is not None
    # Same trial count, but a writer that read no state loses: the state has 1 trial now
    with pytest.raises(StaleState):
        store.record_trial(trial(2, job_key=KEY), job=current | {"stagnation": None}, stagnation={"trials_seen": 1})
    # A writer that read 5 trials loses too
    with pytest.raises(StaleState):
        store.record_trial(
            trial(2, job_key=KEY), job=current | {"stagnation": {"trials_seen": 5}}, stagnation={"trials_seen": 6}
        )
    assert adapter.dump() == before
    # The writer that read the current state wins
    written = store.record_trial(trial(2, job_key=KEY), job=current, stagnation={"trials_seen": 2})
    assert written is not None
    assert written["stagnation"] == store.get_job(KEY)["stagnation"] == {"trials_seen": 2}  # type: ignore[index]
    assert store.set_stagnation_spend(KEY, 1, Decimal("3.5")) is False
    assert store.set_stagnation_spend(KEY, 2, Decimal("3.5")) is True
    assert store.get_job(KEY)["stagnation"]["spent_at_improvement"] == Decimal("3.5")  # type: ignore[index]
    assert store.set_stagnation_spend("ghost", 0, Decimal(1)) is False


def test_update_trial_warm_pool_grows_once(store: Store) -> None:
    upsert(store)
    assert store.update_trial_warm_pool(trial(1, job_key=KEY, warm_pool_seconds=60)) is False  # unknown trial
    assert store.record_trial(trial(1, job_key=KEY), job=store.get_job(KEY)) is not None
    grown = trial(1, job_key=KEY, warm_pool_seconds=300).model_copy(update={"warm_pool_cost_usd": Decimal("0.1")})
    assert store.update_trial_warm_pool(grown) is True
    assert store.update_trial_warm_pool(grown) is False  # holds as much already
    record = store.trial_records(KEY)[0]
    assert (record.warm_pool_seconds, record.warm_pool_instance_seconds, record.warm_pool_cost_usd) == (
        300,
        600,
        Decimal("0.1"),
    )
    meta = store.get_job(KEY)
    assert meta is not None
    assert meta["warm_pool_instance_seconds"] == 600
    assert meta["cost_usd"] == Decimal("1.350000")


def test_running_trials_are_tracked_until_recorded_or_forgotten(store: Store) -> None:
    upsert(store)
    assert store.track_running(running(1, job_key=KEY), team="nlp") is True
    assert store.track_running(running(1, job_key=KEY), team="nlp") is True  # a duplicate event: same entry
    assert store.track_running(running(2, job_key=KEY), team="nlp") is True
    assert [t.trial for t in store.team_running("nlp")] == [
        running(1, job_key=KEY).trial,
        running(2, job_key=KEY).trial,
    ]
    assert sorted((store.get_job(KEY) or {})["running"]) == [
        running(1, job_key=KEY).trial,
        running(2, job_key=KEY).trial,
    ]
    # A late InProgress event after the trial's record never makes it run again
    store.record_trial(trial(1, job_key=KEY), job=store.get_job(KEY), team="nlp")
    assert store.track_running(running(1, job_key=KEY), team="nlp") is False
    assert [t.trial for t in store.team_running("nlp")] == [running(2, job_key=KEY).trial]
    store.forget_running(KEY, [running(2, job_key=KEY).trial], team="nlp")
    assert store.team_running("nlp") == []
    assert (store.get_job(KEY) or {})["running"] == {}
    store.forget_running(KEY, [], team="nlp")
    assert store.team_running("nobody") == []


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


def test_marks_set_once(store: Store) -> None:
    assert store.set_budget_check(KEY, T0) is False  # no job item
    upsert(store)
    assert store.mark_arrival(KEY, T0) is True
    assert store.mark_arrival(KEY, T0 + timedelta(minutes=1)) is False
    assert store.set_budget_check(KEY, T0) is True
    assert store.set_budget_check(KEY, T0 + timedelta(minutes=2)) is True
    meta = store.get_job(KEY)
    assert meta is not None
    assert meta["arrival_evaluated_at"] == "2026-11-30T09:00:00.000+00:00"
    assert meta["budget_check_at"] == "2026-11-30T09:02:00.000+00:00"
