"""Store contract, ``TeamMonthStore``: month totals, running trials, month decisions (every adapter)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from tests.contract.conftest import (
    T0,
    Adapter,
    decision,
    running,
    trial,
    tuning_job,
    upsert,
)
from tuning_governor.ports import Store

KEY = tuning_job().key


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


def test_a_team_decision_has_one_owner_while_pending_and_none_after(store: Store) -> None:
    breach = decision("team-budget", team="nlp", job_key="job-a")
    first = store.claim_team_decision(breach, "2026-11", "enforce", T0, token="a")
    assert (first["state"], first["lease_token"], first["job_key"]) == ("pending", "a", "job-a")
    # Another job's event finds it while the owner works on it: the row as it stands, not its own
    other = decision("team-budget", team="nlp", job_key="job-b", message="found by job-b")
    held = store.claim_team_decision(other, "2026-11", "monitor", T0 + timedelta(minutes=1), token="b")
    assert (held["lease_token"], held["job_key"], held["mode"]) == ("a", "job-a", "enforce")
    assert (
        store.claim_team_decision(breach, "2026-11", "enforce", T0 + timedelta(minutes=1), token="a")["lease_token"]
        == "a"
    )
    # Given back (its report failed), the next caller owns it at once, the first claim's figures kept
    store.release_team_decision(breach, "2026-11", "b")  # not b's: nothing happens
    assert store.claim_team_decision(other, "2026-11", "enforce", T0, token="b")["lease_token"] == "a"
    store.release_team_decision(breach, "2026-11", "a")
    taken = store.claim_team_decision(other, "2026-11", "enforce", T0 + timedelta(minutes=2), token="b")
    assert (taken["lease_token"], taken["job_key"], taken["message"]) == ("b", "job-a", "over budget")
    # A lease run out (its owner crashed) goes to the next caller
    late = store.claim_team_decision(breach, "2026-11", "enforce", T0 + timedelta(minutes=8), token="c")
    assert late["lease_token"] == "c"
    assert store.claim_team_decision(breach, "2026-12", "enforce", T0, token="a")["state"] == "pending"  # another month
    jobs = [{"job": "job-a", "action": "stopped"}]
    store.finish_team_decision(breach, "2026-11", jobs)
    done = store.claim_team_decision(breach, "2026-11", "enforce", T0 + timedelta(hours=1), token="d")
    assert (done["state"], done["jobs"]) == ("done", jobs)
    rows = {d["sk"]: d for d in store.team_decisions("nlp")}  # type: ignore[attr-defined]
    assert sorted(rows) == ["DECISION#team-budget#breach#2026-11", "DECISION#team-budget#breach#2026-12"]
    assert rows["DECISION#team-budget#breach#2026-11"]["claimed_at"] == "2026-11-30T09:00:00.000+00:00"


def test_warm_pool_billed_after_a_trial_was_recorded_reaches_its_team_month(store: Store) -> None:
    # Given a trial recorded for team nlp ($1.25), whose warm pool then bills $0.40 more retention
    upsert(store)
    assert store.record_trial(trial(1, job_key=KEY), job=store.get_job(KEY), team="nlp") is not None
    grown = trial(1, job_key=KEY, warm_pool_seconds=300).model_copy(update={"warm_pool_cost_usd": Decimal("0.4")})
    # When the retention is added (twice: a duplicate event adds nothing)
    assert store.update_trial_warm_pool(grown, team="nlp") is True
    assert store.update_trial_warm_pool(grown, team="nlp") is False
    # Then the team's month holds every dollar its job holds
    meta = store.get_job(KEY)
    assert meta is not None
    assert meta["cost_usd"] == Decimal("1.650000")
    assert store.team_month("nlp", "2026-11")["finished_usd"] == meta["cost_usd"]
