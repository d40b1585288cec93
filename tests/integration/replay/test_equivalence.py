"""A captured history replayed gives the job summaries the live governor wrote, even when the capture is noisy."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from governor_client.replay import replay_lines
from governor_client.replay.model import JobResult, ReplayResult
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.replay.conftest import Capture, capture
from tuning_governor.models.records import JobSummary
from tuning_governor.policy import Policy

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-equivalence")

TERMINAL = {"Completed", "Stopped", "Failed"}


@pytest.fixture(scope="module")
def history() -> Capture:
    """Three jobs delivered live: the seed job, a managed-spot job, and a job its owner stops part-way."""
    return capture(
        [
            (0, seed_tuning_request("xgb-churn-hb")),
            (300, seed_tuning_request("xgb-churn-spot", spot=True, max_jobs=10, max_parallel=2)),
            (600, seed_tuning_request("xgb-churn-stopped", max_jobs=20, max_parallel=3)),
        ],
        user_stops=[(1800, "xgb-churn-stopped")],
        live=True,
    )


def noisy(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """EventBridge's at-least-once, unordered delivery applied to the captured stream."""
    try:
        from governor_client.simulator.delivery import DeliveryFaults, delivery_order
    except ImportError:  # pragma: no cover - the delivery model is a colleague's module
        rng = random.Random(3)
        terminal = [e for e in events if e["detail"].get("HyperParameterTuningJobStatus") in TERMINAL]
        others = [e for e in events if e not in terminal]
        doubled = others + rng.sample(others, len(others) // 3)
        rng.shuffle(doubled)
        return doubled + terminal
    faults = DeliveryFaults(
        same_id_duplicate_rate=0.3, new_id_duplicate_rate=0.2, max_delay_s=240, reorder_window=5, seed=5
    )
    return [event for _, event in delivery_order(events, faults)]


def assert_same(live: JobSummary, replayed: JobResult) -> None:
    assert replayed.summary == "final"
    assert replayed.status == live.status
    assert replayed.trials_by_status == live.trials_by_status
    assert replayed.best_training_job == live.best_training_job
    assert replayed.best_hyperparameters == live.best_hyperparameters
    assert live.objective is not None
    assert replayed.objective is not None
    assert replayed.objective.value == live.objective.value
    assert replayed.billable_instance_seconds == live.cost.billable_instance_seconds
    assert live.cost.cost_usd is not None
    assert replayed.cost_usd == pytest.approx(float(live.cost.cost_usd), abs=1e-9)
    assert replayed.spot_savings_usd == pytest.approx(float(live.cost.spot_savings_usd), abs=1e-9)
    # The early-stopping and timing figures carry the DynamoDB summary's names and values.
    es = live.cost.early_stopping
    assert replayed.early_stopping.model_dump() == {
        "trials_stopped_early": es.trials_stopped_early,
        "trials_cut_by_job_stop": es.trials_cut_by_job_stop,
        "saved_billable_instance_seconds": es.saved_billable_instance_seconds,
        "billable_instance_seconds_without_early_stopping": es.billable_instance_seconds_without_early_stopping,
    }
    assert replayed.timing.model_dump() == {
        "wall_clock_seconds": live.timing.wall_clock_seconds,
        "estimate_without_early_stopping_seconds": live.timing.estimate_without_early_stopping_seconds,
        "one_at_a_time_seconds": live.timing.one_at_a_time_seconds,
    }


def test_the_live_history_covers_what_the_comparison_needs(history: Capture) -> None:
    # Otherwise the comparisons below would prove little.
    statuses = {name: summary.status for name, summary in history.live.items()}
    assert statuses == {"xgb-churn-hb": "Completed", "xgb-churn-spot": "Completed", "xgb-churn-stopped": "Stopped"}
    assert history.live["xgb-churn-spot"].cost.spot_savings_usd > 0
    assert all(set(s.trials_by_status) >= {"Completed", "Stopped"} for s in history.live.values())
    # The owner's stop cut trials short: they are told apart from Hyperband's stops, by the Stopping event
    stopped = history.live["xgb-churn-stopped"].cost.early_stopping
    assert stopped.trials_cut_by_job_stop > 0 and stopped.job_stop_source == "stopping-transition"
    assert history.live["xgb-churn-hb"].timing.estimate_without_early_stopping_seconds is not None


def test_replaying_the_captured_events_gives_the_live_summaries(history: Capture) -> None:
    result = replay_lines((json.dumps(e) for e in history.events), Policy())
    assert result.rejected_events == []
    assert result.failed_events == []
    assert set(result.jobs) == set(history.live)
    for name, live in history.live.items():
        assert_same(live, result.jobs[name])


def test_duplicated_and_reordered_delivery_gives_the_same_summaries(history: Capture) -> None:
    delivered = noisy(history.events)
    # The noise is real: more deliveries than events, and a different order.
    assert len(delivered) > len(history.events) * 1.2
    assert [e["id"] for e in delivered[: len(history.events)]] != [e["id"] for e in history.events]
    result: ReplayResult = replay_lines((json.dumps(e) for e in delivered), Policy())
    assert result.failed_events == []
    assert result.events.processed == len(delivered)
    for name, live in history.live.items():
        assert_same(live, result.jobs[name])
    # Each job reported once per channel, whatever the duplicates
    sent = [(n.channel, n.job, n.kind) for n in result.notifications]
    assert len(sent) == len(set(sent))
    summaries = [kind for _, _, kind in sent if kind.startswith("summary-") and kind != "summary-corrected"]
    assert len(summaries) == 2 * len(history.live)
    # A terminal event replayed before some trials' events reports what the replay knew then; the
    # figures that come after bring one corrected report per job and channel (issue 8, root cause 4).
    corrected = [(channel, job) for channel, job, kind in sent if kind == "summary-corrected"]
    assert len(corrected) <= 2 * len(history.live)
