"""Issue 20's Must-show table through the real handlers (client/governor_sim/queue_sim/handlers.py): on
the same arrivals, the queue kills none of the jobs stop-on-arrival kills for capacity, and uses the
quota at least as well."""

from __future__ import annotations

from governor_sim.queue_sim.handlers import measure_handlers, render_handlers


def test_the_queue_kills_none_of_what_stop_on_arrival_kills_and_uses_the_quota_as_well() -> None:
    # Given one day of arrivals of three teams on a quota of 16, created directly and submitted
    rows = measure_handlers([1])
    stop, queue = rows["stop-on-arrival"], rows["queue"]
    # Then stopping on arrival kills jobs for capacity, and their trials never run
    assert stop["killed"] > 0 and stop["trials_never_run"] > 0
    # And the queue kills none of them (none at all), and every trial runs
    assert (queue["killed_of_stop"], queue["killed"], queue["trials_never_run"]) == (0, 0, 0)
    # And it does at least as much useful work and uses the quota at least as well over the day
    assert queue["useful_instance_hours"] >= stop["useful_instance_hours"]
    assert queue["quota_use_day"] >= stop["quota_use_day"]
    # And jobs waited in the queue (stop-on-arrival never makes anyone wait)
    assert all(p50 == 0 for p50, _ in stop["teams"].values())
    assert any(p95 > 0 for _, p95 in queue["teams"].values())
    assert "| queue |" in render_handlers(rows, [1])
