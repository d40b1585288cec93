"""Issue 20's Must-show table through the real handlers (client/governor_client/simulator/queue_study/handlers.py): on
the same arrivals, every queue mode kills none of the jobs stop-on-arrival kills for capacity and uses
the quota at least as well; lend/borrow lends idle share (teams above their share at times), and
fit-to-share admits jobs with a lowered MaxParallel."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from governor_client.simulator.queue_study.handlers import HANDLER_MODES, HandlerMode, measure_handlers, render_handlers
from governor_client.simulator.queue_study.workload import TEAMS

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("queue_table_handlers")

QUEUE_MODES: tuple[HandlerMode, ...] = ("queue", "queue + lend/borrow", "queue + fit-to-share")
Rows = dict[HandlerMode, dict[str, Any]]
SHARES = {team: share for team, (share, _) in TEAMS.items()}


@pytest.fixture(scope="module")
def rows() -> Rows:
    # Given one day of arrivals of three teams on a quota of 16, created directly and submitted in each mode
    # (the sweep every 15 minutes, a SweepSchedule deployers may choose, keeps this under a minute;
    # admission also runs on every job's end, and docs/explanation/queue.md's figures use the template's 5 minutes)
    return measure_handlers([1], HANDLER_MODES, timedelta(minutes=15))


def test_stop_on_arrival_kills_jobs_for_capacity(rows: Rows) -> None:
    assert ("stop-on-arrival", *QUEUE_MODES) == HANDLER_MODES
    stop = rows["stop-on-arrival"]
    assert stop["killed"] > 0 and stop["trials_never_run"] > 0
    assert all(p50 == 0 for p50, _ in stop["teams"].values())


@pytest.mark.parametrize("mode", QUEUE_MODES)
def test_no_queue_mode_kills_what_stop_on_arrival_kills_and_each_uses_the_quota_as_well(
    rows: Rows, mode: HandlerMode
) -> None:
    stop, queued = rows["stop-on-arrival"], rows[mode]
    # Then none of stop-on-arrival's kills is killed (its work lost), and no trial is left never run
    assert (queued["killed_of_stop"], queued["killed"], queued["trials_never_run"]) == (0, 0, 0)
    # And it does at least as much useful work and holds the quota at least as well over the day
    assert queued["useful_instance_hours"] >= stop["useful_instance_hours"]
    assert queued["quota_use_day"] >= stop["quota_use_day"]
    # And its per-team use against share over the day is in the table
    assert len(queued["usage"]["vision"]) == 8


def test_lend_borrow_lends_idle_share_and_fit_to_share_lowers_max_parallel(rows: Rows) -> None:
    lend, fit, plain = rows["queue + lend/borrow"], rows["queue + fit-to-share"], rows["queue"]
    # With RESERVE shares no team holds more than its share; lending lets a team borrow past it
    assert all(v <= share + 1e-9 for team, share in SHARES.items() for v in fit["usage"][team])
    assert any(v > share for team, share in SHARES.items() for v in lend["usage"][team])
    # Fit-to-share admits some jobs with a lowered MaxParallel; nothing else does
    assert fit["fitted"] > 0 and plain["fitted"] == 0 and lend["fitted"] == 0
    # Every preempted job was resumed (its work not lost), and nothing is preempted without lending
    assert plain["preempted"] == fit["preempted"] == 0
    assert lend["preempted"] > 0 and lend["resumed"] >= lend["preempted"]
    text = render_handlers(rows, [1])
    assert "| queue + lend/borrow |" in text and "/8 |" in text
