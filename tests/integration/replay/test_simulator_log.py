"""Replaying the simulator's own event log, duplicates and reordering on, gives the live run's summaries."""

from __future__ import annotations

from pathlib import Path

from moto import mock_aws

from governor_client.replay import replay_file
from governor_client.simulator.delivery import DeliveryFaults
from governor_client.simulator.simulation import Simulation
from tests.integration.replay.test_equivalence import assert_same
from tests.integration.simulator.conftest import teams_scenario
from tuning_governor.policy import Policy


def test_replay_of_the_simulators_noisy_event_log_matches_the_live_summaries(
    aws_credentials: None, tmp_path: Path
) -> None:
    log = tmp_path / "events.jsonl"
    faults = DeliveryFaults(
        same_id_duplicate_rate=0.2, new_id_duplicate_rate=0.1, max_delay_s=120, reorder_window=4, seed=9
    )
    scenario = teams_scenario()
    # Given a live run through the handlers with duplicated, delayed and reordered delivery
    with mock_aws(), Simulation(scenario, seed=7, faults=faults, event_log=log) as sim:
        result = sim.run()
        live = {job: sim.env.services.store.get_summary(job) for job in scenario.tuning_jobs}
    assert result.outcome_counts["duplicate"] > 0
    assert result.delivery_stats.overtaken > 0
    # When its event log is replayed as it was written
    replayed = replay_file(log, Policy())
    # Then every job's summary is the same
    assert replayed.rejected_events == []
    assert set(replayed.jobs) == set(scenario.tuning_jobs)
    for name, summary in live.items():
        assert summary is not None
        assert_same(summary, replayed.jobs[name])
