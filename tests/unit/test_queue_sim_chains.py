"""How the handler-driven Must-show table counts what happened to one arrival on the stand-in
(client/governor_client/simulator/queue_study/chains.py): a job stopped for capacity is KILLED only when its work ends
lost; a preempted job resumed to completion is not; trials are counted over the whole resume chain."""

from __future__ import annotations

from datetime import timedelta

from governor_client.simulator.queue_study.chains import JobRecord, TrialRecord, account
from governor_client.simulator.queue_study.usage import render_usage, usage_by_block
from governor_client.simulator.queue_study.workload import START, Job

ARRIVAL = Job("vision-001", "vision", START, max_parallel=4, instances=2, trials=10, trial_minutes=60, priority=0)


def _trials(status: str, n: int, at_h: float) -> tuple[TrialRecord, ...]:
    begin = START + timedelta(hours=at_h)
    return tuple(TrialRecord(status, begin, begin + timedelta(hours=1)) for _ in range(n))


def _job(name: str, status: str, trials: tuple[TrialRecord, ...], **kw: object) -> JobRecord:
    fields = {"created": START + timedelta(minutes=30), "max_parallel": 4, "max_jobs": 10, "stopped_by": None}
    return JobRecord(name=name, status=status, trials=trials, **(fields | kw))  # type: ignore[arg-type]


def test_a_preempted_job_resumed_to_completion_is_not_killed_and_its_trials_all_count() -> None:
    # Given the root preempted after 3 trials (2 in flight stopped) and its warm-start resume completing the rest
    root = _job("q-1", "Stopped", _trials("Completed", 3, 0) + _trials("Stopped", 2, 1), stopped_by="queue-preempt")
    resume = _job("q-1-r1-abcd", "Completed", _trials("Completed", 5, 3), max_jobs=5)
    # When the arrival is accounted
    got = account(ARRIVAL, [root, resume])
    # Then it is preempted and resumed, not killed; 2 trials wasted; 8 completed trials x 2 instances useful
    assert (got.killed, got.preempted, got.resumed, got.trials_wasted, got.trials_never_run) == (False, 1, 1, 2, 0)
    assert got.useful_instance_hours == 16.0
    assert got.wait_minutes == 30.0 and not got.fitted


def test_a_job_stopped_on_arrival_and_never_resumed_is_killed_with_its_unlaunched_trials() -> None:
    root = _job("vision-001", "Stopped", _trials("Stopped", 4, 0), stopped_by="concurrency")
    got = account(ARRIVAL, [root])
    assert (got.killed, got.preempted, got.resumed, got.trials_wasted, got.trials_never_run) == (True, 0, 0, 4, 6)
    assert got.useful_instance_hours == 0.0 and got.wait_minutes is None


def test_a_resume_stopped_again_and_not_resumed_leaves_the_work_lost() -> None:
    root = _job("q-1", "Stopped", _trials("Completed", 3, 0), stopped_by="queue-preempt")
    resume = _job("q-1-r1-abcd", "Stopped", _trials("Completed", 1, 3), max_jobs=7, stopped_by="queue-preempt")
    got = account(ARRIVAL, [root, resume])
    assert (got.killed, got.preempted, got.resumed, got.trials_never_run) == (True, 2, 1, 6)


def test_an_admission_with_a_lowered_max_parallel_is_fitted() -> None:
    got = account(ARRIVAL, [_job("q-1", "Completed", _trials("Completed", 10, 0), max_parallel=2)])
    assert got.fitted and not got.killed


def test_usage_is_the_mean_held_per_block_against_the_share() -> None:
    # Given vision holding 2 instances for the first 90 minutes and 6 from hour 4 to hour 5
    intervals = {
        "vision": [
            (START, START + timedelta(minutes=90), 2),
            (START + timedelta(hours=4), START + timedelta(hours=5), 6),
        ]
    }
    blocks = usage_by_block(intervals, block_hours=3, hours=6)
    # Then the first 3-hour block holds 2 x 1.5 / 3 = 1.0 on average, the second 6 x 1 / 3 = 2.0
    assert blocks["vision"] == [1.0, 2.0] and blocks["nlp"] == [0.0, 0.0]
    table = render_usage({"vision": [1.0, 2.0]}, block_hours=3)
    assert "| vision | 1.0/8 | 2.0/8 |" in table and "| 00-03 | 03-06 |" in table
