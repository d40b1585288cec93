"""The what-if page's figures on a hand-built replay result: savings per stopped job, and the stop rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from governor_client.replay.figures import decided_by, job_savings, stop_rows
from governor_client.replay.model import (
    ActionResult,
    DecisionResult,
    EarlyStoppingResult,
    EventCounts,
    FactsInfo,
    JobResult,
    PolicyInfo,
    ReplayResult,
    Savings,
    SweepInfo,
    TimingResult,
)

T = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def decision(rule: str, action: str, minute: int, **numbers: Any) -> DecisionResult:
    return DecisionResult(
        rule=rule,
        verdict="breach",
        mode="monitor" if action == "would-stop" else "enforce",
        action=action,
        at=T + timedelta(minutes=minute),
        message=f"{rule} message",
        numbers=numbers,
    )


def job(cost: float | None, decisions: list[DecisionResult], *, final: bool = True) -> JobResult:
    stop = next((d.at for d in decisions if d.action == "stopped"), None)
    return JobResult(
        status="Completed" if final else "InProgress",
        summary="final" if final else "provisional",
        best_training_job=None,
        best_hyperparameters={},
        objective=None,
        trials_by_status={},
        billable_instance_seconds=3600,
        cost_usd=cost,
        cost_status="priced" if cost is not None else "unpriced",
        spot_savings_usd=0.0 if cost is not None else None,
        stop_requested_at=stop,
        early_stopping=EarlyStoppingResult(
            trials_stopped_early=0,
            trials_cut_by_job_stop=0,
            saved_billable_instance_seconds=0,
            billable_instance_seconds_without_early_stopping=3600,
        ),
        timing=TimingResult(
            wall_clock_seconds=None, estimate_without_early_stopping_seconds=None, one_at_a_time_seconds=None
        ),
        decisions=decisions,
    )


def result(jobs: dict[str, JobResult], by_job: dict[str, float | None]) -> ReplayResult:
    actions = [
        ActionResult(job=name, action="stop", rule=d.rule, at=d.at)
        for name, j in jobs.items()
        for d in j.decisions
        if d.action == "stopped" and name in by_job
    ]
    return ReplayResult(
        policy=PolicyInfo(source="p.yaml", mode="enforce"),
        events=EventCounts(lines=1, processed=1, rejected=0, failed=0, first_at=T, last_at=T),
        sweeps=SweepInfo(every_seconds=300, runs=0),
        jobs=jobs,
        actions=sorted(actions, key=lambda a: a.at),
        notifications=[],
        rejected_events=[],
        failed_events=[],
        savings=Savings(
            usd=sum(v for v in by_job.values() if v is not None),
            by_job=by_job,
            complete=all(v is not None for v in by_job.values()),
            method="m",
        ),
        facts=FactsInfo(table=None, jobs_from_table=0, incomplete=[]),
    )


def test_savings_per_stopped_job_is_the_cost_as_it_ran_on_less_what_the_stop_avoids() -> None:
    # Given: a $10 job stopped at 09:20 that would have avoided $4.25 after it; a job stopped at 09:05 with
    # an unpriced trial; a job still running when the history ended ($3, stopped at 09:10, $1 avoided);
    # and a job a monitor-mode policy would have stopped at 09:30 ($8, $2.50 avoidable had it been enforced)
    jobs = {
        "priced": job(10.0, [decision("budget", "stopped", 20, spent_usd=5, budget_usd=5)]),
        "unpriced": job(None, [decision("runtime", "stopped", 5, runtime_seconds=7200, cap_seconds=7200)]),
        "unfinished": job(3.0, [decision("concurrency", "stopped", 10)], final=False),
        "monitored": job(8.0, [decision("team-budget", "would-stop", 30, spent_usd=51, budget_usd=50)]),
        "untouched": job(2.0, []),
    }
    replayed = result(jobs, {"priced": 4.25, "unpriced": None, "unfinished": 1.0})
    teams = {"priced": "vision", "monitored": "speech"}
    # When the page's savings are built
    rows = {s.job: s for s in job_savings(replayed, teams, {"monitored": Decimal("2.5")})}
    # Then each stopped job's cost with the stop is its cost as it ran on less what the stop avoided
    assert list(rows) == ["unpriced", "unfinished", "priced", "monitored"]  # in time order of the stop
    priced = rows["priced"]
    assert (priced.cost_in_history_usd, priced.avoided_usd) == (Decimal("10.0"), Decimal("4.25"))
    assert priced.cost_with_stop_usd == Decimal("5.75")
    assert (priced.kind, priced.team, priced.at) == ("stopped", "vision", T + timedelta(minutes=20))
    # unknown stays unknown, never $0
    assert rows["unpriced"].avoided_usd is None and rows["unpriced"].cost_with_stop_usd is None
    # a job the history does not see to its end is marked: its cost as it ran on is a lower bound
    assert rows["unfinished"].finished_in_history is False and rows["unfinished"].cost_with_stop_usd == Decimal(2)
    # monitor mode: labelled "if enforced", at the would-stop decision
    monitored = rows["monitored"]
    assert (monitored.kind, monitored.at, monitored.cost_with_stop_usd) == (
        "if enforced",
        T + timedelta(minutes=30),
        Decimal("5.5"),
    )


def test_stop_rows_list_every_stop_and_would_stop_in_time_order_with_the_numbers_that_decided() -> None:
    late_second = decision("runtime", "stopped", 40, runtime_seconds=9000, cap_seconds=7200)
    jobs = {
        "a": job(
            1.0,
            [
                decision("budget", "stopped", 20, spent_usd=5.5, budget_usd=5),
                late_second,
                decision("pricing", "warned", 1),
            ],
        ),
        "b": job(
            1.0,
            [
                decision(
                    "concurrency",
                    "stopped",
                    10,
                    instance_types={"ml.p3.2xlarge": {"usage": 4, "demand": 6, "limit": 8, "source": "policy quotas"}},
                )
            ],
        ),
    }
    replayed = result(jobs, {"a": 0.5, "b": 1.0})
    # the runtime stop came when the job was already stopping: no second accepted stop call
    replayed = replayed.model_copy(update={"actions": [a for a in replayed.actions if a.at != late_second.at]})
    rows = stop_rows(replayed, {"a": "vision"})
    assert [(r.number, r.job, r.rule, r.accepted) for r in rows] == [
        (1, "b", "concurrency", True),
        (2, "a", "budget", True),
        (3, "a", "runtime", False),
    ]
    assert [r.team for r in rows] == [None, "vision", "vision"]
    assert rows[0].decided_by == "ml.p3.2xlarge: usage 4 + demand 6 vs limit 8 (policy quotas)"
    assert rows[1].decided_by == "spent $5.50 vs limit $5.00"
    assert rows[2].decided_by == "runtime 2.50 h vs cap 2.00 h"
    assert decided_by("budget", {"spent_usd": 7, "budget_usd": 5, "lower_bound": True}, "m") == (
        "spent $7.00 (lower bound: unpriced trials) vs limit $5.00"
    )
    assert decided_by("tags", {}, "the message") == "the message"
