"""The queue simulation (issue 20's Must-show table), computed by the scheduling core alone."""

from __future__ import annotations

import pytest

from governor_client.simulator.queue_study.__main__ import main
from governor_client.simulator.queue_study.engine import MODES, simulate
from governor_client.simulator.queue_study.table import _day_use, measure
from governor_client.simulator.queue_study.workload import TEAMS, arrivals

SEEDS = (1, 2, 3, 4, 5)


def test_queueing_kills_none_of_the_jobs_stop_on_arrival_kills_and_uses_the_quota_at_least_as_well() -> None:
    for seed in SEEDS:
        day = arrivals(seed)
        stop = simulate("stop-on-arrival", day)
        assert stop.killed, f"seed {seed}: the quota is not tight enough to show anything"
        for mode in MODES[1:]:
            queued = simulate(mode, day)
            assert queued.killed == [] and queued.refused == [], (seed, mode)
            assert _day_use(queued) >= _day_use(stop), (seed, mode)


def test_only_lend_and_borrow_goes_past_a_share_and_never_past_its_borrow_limit() -> None:
    rows = measure(SEEDS)
    for mode, row in rows.items():
        teams = row["teams"]
        assert isinstance(teams, dict)
        peaks = [t["peak_use_of_share"] for t in teams.values()]
        assert max(peaks) <= (2.0 if mode == "queue+lend/borrow" else 1.0), mode  # borrow_limit 100 %
    assert rows["queue+lend/borrow"]["preempted"] and not rows["queue"]["preempted"]


def test_the_table_prints_every_mode_and_team(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seeds", "1", "2"]) == 0
    out = capsys.readouterr().out
    assert all(f"| {mode} |" in out for mode in MODES)
    assert all(f"| queue | {team} |" in out for team in TEAMS)
