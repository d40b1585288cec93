"""Store contract, ``TrialStore``: trials counted once, running trials (every adapter)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.contract.conftest import (
    Adapter,
    running,
    trial,
    tuning_job,
    upsert,
)
from tuning_governor.errors import StaleState
from tuning_governor.ports import Store

KEY = tuning_job().key


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
