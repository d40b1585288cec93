"""Store contract: the adapters cannot drift apart (the ports' shape: ``test_ports``).

* one script calling every method of the port, conflicts and duplicates included, gives the same
  results and leaves item-for-item the same table on every adapter;
* racing threads get first-writer-wins outcomes on every adapter (moto's requests made atomic, as
  AWS applies each request atomically).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.contract.conftest import (
    ADAPTERS,
    T0,
    Adapter,
    catalog,
    decision,
    open_adapter,
    reservation,
    running,
    summary,
    training_job,
    trial,
    tuning_job,
)
from tests.contract.test_queue import entry
from tuning_governor.errors import StaleState
from tuning_governor.ports import AREAS, Store

PORT_METHODS = sorted(
    name for area in AREAS for name, value in vars(area).items() if callable(value) and not name.startswith("_")
)


class Recording:
    """Forwards to a store and records which methods were called."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.called: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        self.called.add(name)
        return getattr(self._store, name)


def _attempt(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except StaleState as exc:
        return f"StaleState: {exc}"
    except Exception:  # the adapters' own errors for a cancelled write differ by type only
        return "raised, nothing written"


def _arrivals(store: Any, run: Callable[[Any], None], key: str) -> None:
    """Jobs arrive and are admitted against the capacity ledger; trials start."""
    job = tuning_job()
    run(store.upsert_job(job, region="us-east-1", team="nlp", owner="ana", event_time=T0))
    run(
        store.upsert_job(
            tuning_job(modified=T0 - timedelta(minutes=1)), region="x", team=None, owner=None, event_time=T0
        )
    )
    run(store.mark_arrival(key, T0))
    run(store.mark_arrival(key, T0))
    run(store.refresh_tags(key, tags={"owner": "bo", "governance:exempt": "true"}, owner="bo", read_at=T0))
    run(store.refresh_tags(key, tags={}, owner=None, read_at=T0 - timedelta(minutes=1)))
    run(store.refresh_tags("nobody", tags={}, owner=None, read_at=T0))
    run(store.read_ledger())
    claim = (decision(job_key=key), "enforce", T0)
    run(store.commit_admission(0, key, reservation(key), claim))
    run(store.commit_admission(1, key, reservation(key), claim))
    run(store.commit_admission(0, "other", None))
    run(store.update_reservations(1, {"other": reservation("other")}, []))
    # Another place's ledger: its own item, its own versions; the home ledger is unchanged by it
    away, away_key = store.ledger_at("CAPACITY#111111111111#eu-west-1"), f"111111111111/eu-west-1/{key}"
    run(away.read_ledger())
    run(away.commit_admission(0, away_key, reservation(away_key)))
    run(away.release_reservation(away_key, "2026-11-30T10:00:00.000+00:00"))
    run(away.read_ledger())
    run(store.read_ledger())
    run(store.holders())
    run(store.holders(tuning_jobs=False))
    run(store.put_capacity_snapshot({"at": T0, "holders": 2, "share": 0.25}))
    # The sweep's walk of the member places: the last sweep of each
    run(store.places_swept())
    run(store.mark_place_swept("111111111111/eu-west-1", T0))
    run(store.mark_place_swept("111111111111/eu-west-1", T0 + timedelta(minutes=5)))
    run(store.places_swept())
    for i in (1, 2, 3):
        run(store.track_running(running(i, job_key=key), team="nlp"))
    run(store.team_running("nlp"))


def _trials(store: Any, run: Callable[[Any], None], key: str) -> None:
    """Trials finish (duplicates and stale reads too); warm pools grow; team months fill."""
    read = store.get_job(key)
    first = trial(1, job_key=key)
    run(store.record_trial(first, job=read, team="nlp", stagnation={"trials_seen": 1}, latest_end=first.end_time))
    run(store.record_trial(first, job=store.get_job(key), team="nlp"))
    run(_attempt(lambda: store.record_trial(trial(2, job_key=key), job=read, team="nlp")))
    run(
        _attempt(
            lambda: store.record_trial(
                trial(2, job_key=key),
                job=(store.get_job(key) or {}) | {"stagnation": {"trials_seen": 4}},
                stagnation={"trials_seen": 9},
            )
        )
    )
    run(store.record_trial(trial(2, job_key=key, cost=None, status="Failed"), job=store.get_job(key), team="nlp"))
    run(
        store.record_trial(
            trial(3, job_key=key, spot=True, start=T0.replace(day=30, hour=23), seconds=7200),
            job=store.get_job(key),
            team="nlp",
        )
    )
    run(store.set_stagnation_spend(key, 1, Decimal("2.5")))
    run(store.update_trial_warm_pool(trial(1, job_key=key, warm_pool_seconds=120)))
    run(store.track_running(running(1, job_key=key), team="nlp"))
    run(store.trial_records(key))
    run(store.team_month("nlp", "2026-11"))
    run(store.team_month("nlp", "2026-12"))
    run(store.team_spend("nlp", "2026-12"))
    run(store.team_jobs_in_progress("nlp"))


def _decisions(store: Any, run: Callable[[Any], None], key: str) -> None:
    """Decisions are claimed, acted on and reported on each channel; a team decision."""
    later = T0 + timedelta(minutes=3)
    run(store.set_budget_check(key, later))
    run(store.get_decision(key, "budget", "breach"))
    run(store.open_decision(decision(job_key=key), "enforce", later))
    run(store.lease_decision(key, "budget", "breach", "t1", later))
    run(store.lease_decision(key, "budget", "breach", "t2", later))
    run(store.release_decision(key, "budget", "breach", "t2"))
    run(store.release_decision(key, "budget", "breach", "t1"))
    run(store.lease_decision(key, "budget", "breach", "t2", later))
    run(store.claim_decision(decision("runtime", job_key=key), "enforce", later))
    run(store.pending_decisions(key))
    run(store.stale_pending_decisions(later))
    run(_attempt(lambda: store.record_decision_action(decision("failed", job_key=key), "stopped", "x")))
    run(store.record_decision_action(decision(job_key=key), "stopped", "stop-requested", stop_requested_at=later))
    for channel in ("sns", "slack"):
        run(store.claim_delivery(key, "decision-budget", channel, later, token="t1"))
        run(store.claim_delivery(key, "decision-budget", channel, later, token="t1"))
        run(store.claim_delivery(key, "decision-budget", channel, later, token="t2"))
    run(store.finish_delivery(key, "decision-budget", "sns", later, sent=True))
    run(store.finish_delivery(key, "decision-budget", "slack", later, sent=False))
    run(store.delivery_sent(key, "decision-budget", "sns"))
    run(store.delivery_sent(key, "decision-budget", "slack"))
    run(store.finish_decision(decision(job_key=key), "stopped", "stop-requested"))
    run(store.decisions(key))
    team = decision("team-budget", job_key=key)
    run(store.claim_team_decision(team, "2026-11", "enforce", later, token="t1"))
    run(store.claim_team_decision(team, "2026-11", "enforce", later, token="t2"))
    run(store.release_team_decision(team, "2026-11", "t2"))
    run(store.release_team_decision(team, "2026-11", "t1"))
    run(store.stale_team_decisions(later))
    run(store.stale_team_decisions(later + timedelta(seconds=1)))
    run(store.claim_team_decision(team, "2026-11", "enforce", later, token="t2"))
    run(store.finish_team_decision(team, "2026-11", [{"job": key, "action": "stopped"}]))
    run(store.stale_team_decisions(later + timedelta(seconds=1)))
    run(store.claim_team_decision(team, "2026-11", "enforce", later, token="t3"))


def _endings(store: Any, run: Callable[[Any], None], key: str) -> None:
    """Capacity changes; the job ends, is summarised and released; prices are stored."""
    later = T0 + timedelta(minutes=3)
    job = tuning_job()
    run(store.upsert_training_job(training_job(), team="nlp", event_time=T0))
    run(store.set_warm_pool(training_job("pool", "Completed", warm_pool="Available"), team="nlp"))
    run(store.set_warm_pool(training_job("pool", "Completed"), team="nlp"))  # asked for no pool: nothing written
    run(store.warm_pool_names())
    run(store.holders())
    run(store.release_warm_pool("pool"))
    run(
        store.upsert_job(
            tuning_job("Stopping", modified=later), region="us-east-1", team="nlp", owner="ana", event_time=later
        )
    )
    run(store.jobs_with_status("Stopping"))
    run(store.forget_running(key, [running(2, job_key=key).trial, running(3, job_key=key).trial], team="nlp"))
    done = summary(tuning_job("Stopped", modified=later), store.trial_records(key), now=later)
    run(store.write_summary(done))
    run(store.get_summary(key))
    run(store.set_summary_reported(key, Decimal("4.2"), later))
    run(store.set_summary_reported(key, Decimal("4.2"), later))
    run(store.mark_gaps(key, job_name=job.name, region="us-east-1", ended_at=later, missing=["b", "a"]))
    run(store.jobs_with_gaps())
    run(store.clear_gaps(key))
    run(store.release_reservation(key, "2026-11-30T09:20:00.000+00:00"))
    run(store.release_reservation(key, "2026-11-30T09:21:00.000+00:00"))
    run(store.read_ledger())
    run(store.record_trial(trial(1, job_key="ghost"), job=None, team="cv"))  # a team whose trial never ran
    run(_attempt(lambda: store.forget_running("nobody", ["t1"], team="cv")))
    run(store.put_price_catalog(catalog()))
    run(store.price_catalogs())
    run(store.price_catalog("us-east-1"))
    run(store.price_catalog("eu-north-1"))
    run(store.record_stop_latency("p3", key, 121.5, later))
    run(store.record_stop_latency("p3", key, 121.5, later))
    run(store.stop_latencies("p3"))
    run(store.stop_latencies("m5"))
    run(store.get_job(key))
    run(store.items(key))


def _queue(store: Any, run: Callable[[Any], None], key: str) -> None:
    """Submissions queued, claimed, released, finished; a repeat; an expired claim taken over."""
    first, second = entry("a"), entry("b", priority=3, minutes=1)
    run(store.enqueue(first))
    run(store.enqueue(second))
    run(store.enqueue(entry("a", minutes=9)))
    run(store.waiting_requests())
    run(store.claim_request(first.job_name, "o1", T0, T0 + timedelta(minutes=5)))
    run(store.claim_request(first.job_name, "o2", T0 + timedelta(minutes=1), T0 + timedelta(minutes=6)))
    run(store.release_request(first.job_name, "o2"))
    run(store.claim_request(first.job_name, "o2", T0 + timedelta(minutes=6), T0 + timedelta(minutes=11)))
    run(store.finish_request(first.job_name, "admitted", f"for {key}", T0 + timedelta(minutes=7)))
    run(store.finish_request(first.job_name, "refused", "late", T0 + timedelta(minutes=8)))
    run(store.release_request(second.job_name, "nobody"))
    run(store.get_request(first.job_name))
    run(store.get_request(second.job_name))
    run(store.waiting_requests())


def script(store: Any) -> list[Any]:
    """Every method of the port, in the order a governed account calls them, with the losers' calls too."""
    out: list[Any] = []
    for phase in (_arrivals, _trials, _decisions, _endings, _queue):
        phase(store, out.append, tuning_job().key)
    return out


def test_the_same_calls_give_the_same_results_and_the_same_table(aws_credentials: None) -> None:
    results: dict[str, tuple[list[Any], list[dict[str, Any]], set[str]]] = {}
    for kind in ADAPTERS:
        with open_adapter(kind) as adapter:
            recording = Recording(adapter.store)
            results[kind] = (script(recording), adapter.dump(), recording.called)
    (moto_out, moto_table, called), (memory_out, memory_table, _) = results["moto"], results["memory"]
    assert set(PORT_METHODS) <= called, f"not exercised: {sorted(set(PORT_METHODS) - called)}"
    for i, (a, b) in enumerate(zip(moto_out, memory_out, strict=True)):
        assert a == b, f"call {i} of the script"
    assert len(moto_table) > 12
    assert [(i["pk"], i["sk"]) for i in moto_table] == [(i["pk"], i["sk"]) for i in memory_table]
    for a, b in zip(moto_table, memory_table, strict=True):
        assert a == b, (a["pk"], a["sk"])
        # Same types too (Decimal vs int compare equal): DynamoDB gives numbers back as Decimal.
        assert {k: type(v) for k, v in a.items()} == {k: type(v) for k, v in b.items()}, (a["pk"], a["sk"])


# -- racing threads ------------------------------------------------------------------------------------------
THREADS = 8


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    barrier = threading.Barrier(len(calls))

    def go(call: Callable[[], Any]) -> Any:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(go, calls))


@pytest.fixture
def racing(adapter: Adapter, request: pytest.FixtureRequest) -> Adapter:
    if adapter.kind == "moto":
        request.getfixturevalue("atomic_moto_requests")
    return adapter


def test_racing_claims_have_one_winner(racing: Adapter) -> None:
    store = racing.store
    outcomes = race([lambda: store.claim_delivery("job-a", "summary", "sns", T0) for _ in range(THREADS)])
    assert sorted(outcomes) == [False] * (THREADS - 1) + [True]
    opened = race([lambda: store.claim_decision(decision(), "enforce", T0) for _ in range(THREADS)])
    assert all(opened)  # pending, no action yet: every racer may act, the stored row is one
    assert len(store.decisions("job-a")) == 1


def test_racing_duplicate_trials_are_counted_once(racing: Adapter) -> None:
    store = racing.store
    store.upsert_job(tuning_job(), region="us-east-1", team="nlp", owner=None, event_time=T0)
    key = tuning_job().key
    read = store.get_job(key)
    outcomes = race([lambda: store.record_trial(trial(1, job_key=key), job=read, team="nlp") for _ in range(THREADS)])
    assert outcomes.count(None) == THREADS - 1
    meta = store.get_job(key)
    assert meta is not None
    assert [o for o in outcomes if o is not None] == [meta]
    assert meta["trials_recorded"] == 1
    assert store.team_month("nlp", "2026-11")["trials"] == 1


def test_racing_trials_of_one_job_read_once_have_one_writer(racing: Adapter) -> None:
    store = racing.store
    store.upsert_job(tuning_job(), region="us-east-1", team="nlp", owner=None, event_time=T0)
    key = tuning_job().key
    store.track_running(running(99, job_key=key), team="nlp")  # the running map exists
    read = store.get_job(key)

    def record(i: int) -> Any:
        return _attempt(lambda: store.record_trial(trial(i, job_key=key), job=read, team="nlp"))

    outcomes = race([lambda i=i: record(i) for i in range(1, THREADS + 1)])  # type: ignore[misc]
    assert sum(isinstance(o, dict) for o in outcomes) == 1
    assert sum(str(o).startswith("StaleState") for o in outcomes) == THREADS - 1
    meta = store.get_job(key)
    assert meta is not None
    assert meta["trials_recorded"] == 1
    assert store.team_month("nlp", "2026-11")["trials"] == 1


def test_racing_admissions_commit_one_per_version(racing: Adapter) -> None:
    store = racing.store
    store.commit_admission(0, "seed", None)
    outcomes = race(
        [lambda i=i: store.commit_admission(1, f"job-{i}", reservation(f"job-{i}")) for i in range(THREADS)]  # type: ignore[misc]
    )
    assert sorted(outcomes) == ["committed"] + ["conflict"] * (THREADS - 1)
    ledger = store.read_ledger()
    assert (ledger.version, len(ledger.reservations)) == (2, 1)


def test_racing_callers_of_one_decision_get_one_owner(racing: Adapter) -> None:
    store = racing.store
    store.open_decision(decision(job_key="job-a"), "enforce", T0)
    outcomes = race(
        [lambda i=i: store.lease_decision("job-a", "budget", "breach", f"t{i}", T0) for i in range(THREADS)]  # type: ignore[misc]
    )
    owners = [o["lease_token"] for o in outcomes if o is not None]
    assert len(owners) == 1
    team = decision("team-budget", job_key="job-a")
    claims = race(
        [
            lambda i=i: store.claim_team_decision(  # type: ignore[misc]
                team.model_copy(update={"job_key": f"job-{i}"}), "2026-11", "enforce", T0, token=f"t{i}"
            )
            for i in range(THREADS)
        ]
    )
    [owner] = {c["lease_token"] for c in claims}
    assert sum(c["job_key"] == f"job-{owner[1:]}" for c in claims) == THREADS
