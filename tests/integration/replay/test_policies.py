"""What a policy would have done to a captured month: stops, their times, monitor mode, exemptions, savings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from governor_client.replay import DEFAULT_SWEEP_EVERY, replay_lines
from governor_client.replay.model import ReplayResult
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.replay.conftest import (
    TRAINING,
    TUNING,
    Capture,
    capture,
    event_time,
    finished_trials,
    millis,
    savings_by_hand,
    trial_cost,
)
from tuning_governor.domain.pricing import bundled_catalog
from tuning_governor.policy import parse_policy

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-policies")

P3_2X, P3_8X = "ml.p3.2xlarge", "ml.p3.8xlarge"
BUDGET = Decimal(20)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
QUOTA = f"quotas: {{{P3_2X}: 8}}\n"


def price(instance_type: str) -> Decimal:
    entry = bundled_catalog().price("us-east-1", instance_type)
    assert entry is not None
    return entry.usd_per_hour


@pytest.fixture(scope="module")
def month() -> Capture:
    """No governor stopped anything: team A (4 x 1 p3.2xlarge), team B arriving a minute later (3 x 2),
    and an nlp job on 8 x p3.8xlarge (20 trials, about $48 in all) whose own tag sets a $20 budget."""
    return capture(
        [
            (
                0,
                seed_tuning_request(
                    "team-a-hpo", team="vision", instance_type=P3_2X, instance_count=1, max_parallel=4, max_jobs=8
                ),
            ),
            (
                60,
                seed_tuning_request(
                    "team-b-hpo",
                    team="speech",
                    instance_type=P3_2X,
                    instance_count=2,
                    max_parallel=3,
                    max_jobs=6,
                    extra_tags={"cost-center-exempt": "true"},
                ),
            ),
            (
                120,
                seed_tuning_request(
                    "p3-budget",
                    team="nlp",
                    instance_type=P3_8X,
                    instance_count=8,
                    max_parallel=2,
                    max_jobs=20,
                    extra_tags={"governance:budget-usd": str(BUDGET)},
                ),
            ),
        ]
    )


def replay(month: Capture, policy: str) -> ReplayResult:
    return replay_lines((json.dumps(e) for e in month.events), parse_policy(policy, "test-policy"))


def arrival(month: Capture, job: str) -> datetime:
    """When the job's first InProgress event was emitted: its arrival is judged on that event."""
    return next(
        event_time(e)
        for e in month.events
        if e["detail-type"] == TUNING
        and e["detail"]["HyperParameterTuningJobName"] == job
        and e["detail"]["HyperParameterTuningJobStatus"] == "InProgress"
    )


def second_ceiling(at: datetime) -> datetime:
    """The one-time check's time: the crossing to the second, rounded up (Scheduler is given the minute
    before and the check waits for its second)."""
    floor = at.replace(microsecond=0)
    return floor if floor == at else floor + timedelta(seconds=1)


def budget_crossing(month: Capture, job: str) -> datetime:
    """When the replay decides the job's budget breach, computed here on its own: at each of the job's
    trial events, at each sweep (every DEFAULT_SWEEP_EVERY of the events' time, before the first line
    dated after it) and at the one-time check each of those judgements asks for (the second where the
    running trials' burn brings spend + 120 s of burn to the budget, if within the hour). Spend =
    billed cost of the finished trials + what the running ones accrued: elapsed since
    TrainingStartTime x instances x price. Breach = spend + burn x 120 s (what a stop still bills) >= budget.
    """
    rate = price(P3_8X)
    lead = Decimal(120)
    finished, done = Decimal(0), set()
    running: dict[str, tuple[datetime, int]] = {}

    def spent(at: datetime) -> Decimal:
        accrued = (
            (Decimal(str(max(0.0, (at - start).total_seconds()))) * count * rate / 3600).quantize(Decimal("0.000001"))
            for start, count in running.values()
        )
        return finished + sum(accrued, Decimal(0))

    def burn() -> Decimal:
        return sum((count * rate for _, count in running.values()), Decimal(0))

    def breached(at: datetime) -> bool:
        return spent(at) + burn() * lead / 3600 >= BUDGET

    def next_check(at: datetime) -> datetime | None:
        hourly = burn()
        if hourly <= 0:
            return None
        left = max(Decimal(0), BUDGET - spent(at) - hourly * lead / 3600)
        when = at + timedelta(seconds=float(left * 3600 / hourly))
        return second_ceiling(max(when, at + timedelta(seconds=1))) if when - at <= timedelta(hours=1) else None

    every = DEFAULT_SWEEP_EVERY
    assert every is not None
    sweep_at: datetime | None = None
    check: datetime | None = None
    for event in month.events:
        at = event_time(event)
        if sweep_at is None:
            sweep_at = EPOCH + every * -((EPOCH - at) // every)  # the first multiple of ``every`` at or after
        while due := [t for t in (sweep_at, check) if t is not None and t < at]:
            when = min(due)
            if breached(when):
                return when
            if when == sweep_at:
                sweep_at += every
            if when == check:
                check = None
            check = next_check(when) or check
        detail = event["detail"]
        if event["detail-type"] != TRAINING or not (detail.get("TuningJobArn") or "").endswith(f"/{job}"):
            continue
        name = detail["TrainingJobName"]
        if detail["TrainingJobStatus"] in {"Completed", "Stopped", "Failed"} and name not in done:
            done.add(name)
            running.pop(name, None)
            finished += trial_cost(detail, rate)
        elif detail.get("TrainingStartTime") and name not in done:
            running[name] = (millis(detail["TrainingStartTime"]), int(detail["ResourceConfig"]["InstanceCount"]))
        if breached(at):
            return at
        check = next_check(at) or check
    raise AssertionError("the captured job never reached its budget")


@pytest.fixture(scope="module")
def enforced(month: Capture) -> ReplayResult:
    return replay(month, "mode: enforce\n" + QUOTA)


def test_the_capture_ran_every_job_to_the_end(month: Capture) -> None:
    # The history is what happened without a governor: every job completed and spent more than after a stop.
    finals = {
        e["detail"]["HyperParameterTuningJobName"]: e["detail"]["HyperParameterTuningJobStatus"]
        for e in month.events
        if e["detail-type"] == TUNING
    }
    assert finals == {"team-a-hpo": "Completed", "team-b-hpo": "Completed", "p3-budget": "Completed"}
    assert len(finished_trials(month.events, "p3-budget")) == 20


def test_enforce_stops_the_job_that_does_not_fit_and_the_job_over_budget(
    month: Capture, enforced: ReplayResult
) -> None:
    stops = [(a.job, a.action, a.rule, a.at) for a in enforced.actions]
    assert stops == [
        ("team-b-hpo", "stop", "concurrency", arrival(month, "team-b-hpo")),
        ("p3-budget", "stop", "budget", budget_crossing(month, "p3-budget")),
    ]
    # Team A fitted (0 + 4 <= 8); B did not (4 + 6 > 8)
    assert enforced.jobs["team-a-hpo"].decisions == []
    [concurrency] = enforced.jobs["team-b-hpo"].decisions
    assert (concurrency.rule, concurrency.mode, concurrency.action) == ("concurrency", "enforce", "stopped")
    assert concurrency.at == arrival(month, "team-b-hpo")
    assert "usage 4 + demand 6 > limit 8 (policy quotas)" in concurrency.message
    breach = next(d for d in enforced.jobs["p3-budget"].decisions if d.verdict == "breach")
    assert (breach.rule, breach.action, breach.at) == ("budget", "stopped", budget_crossing(month, "p3-budget"))
    assert enforced.jobs["p3-budget"].stop_requested_at == breach.at


def test_savings_are_the_history_cost_after_each_stop(month: Capture, enforced: ReplayResult) -> None:
    expected = {
        job: savings_by_hand(month.events, job, stop.at, price(itype))
        for job, itype in (("team-b-hpo", P3_2X), ("p3-budget", P3_8X))
        for stop in enforced.actions
        if stop.job == job
    }
    assert enforced.savings.by_job == pytest.approx(expected, abs=1e-4)
    assert enforced.savings.usd == pytest.approx(sum(expected.values()), abs=1e-4)
    assert enforced.savings.complete is True
    # B was stopped on arrival, before any of its trials started: everything it spent was avoidable.
    assert enforced.savings.by_job["team-b-hpo"] == pytest.approx(enforced.jobs["team-b-hpo"].cost_usd, abs=1e-4)
    # The budget stop came mid-way, with a trial running: that trial counts only for its time after the stop.
    stop_at = budget_crossing(month, "p3-budget")
    later = [d for d in finished_trials(month.events, "p3-budget").values() if millis(d["TrainingEndTime"]) > stop_at]
    assert any(millis(d["TrainingStartTime"]) < stop_at for d in later)
    saved = enforced.savings.by_job["p3-budget"]
    assert saved is not None
    assert 0 < saved < sum(float(trial_cost(d, price(P3_8X))) for d in later)


def test_the_history_is_not_rewritten_by_a_stop(enforced: ReplayResult) -> None:
    # Summaries say what happened; the stop is an action with a time, not a changed status.
    assert {name: job.status for name, job in enforced.jobs.items()} == {
        "team-a-hpo": "Completed",
        "team-b-hpo": "Completed",
        "p3-budget": "Completed",
    }
    assert all(job.summary == "final" for job in enforced.jobs.values())


def test_stop_reports_are_recorded_on_both_channels(enforced: ReplayResult) -> None:
    kinds = {(n.channel, n.job, n.kind) for n in enforced.notifications}
    for channel in ("sns", "slack"):
        assert (channel, "team-b-hpo", "decision-concurrency-breach") in kinds
        assert (channel, "p3-budget", "decision-budget-breach") in kinds
        assert (channel, "team-a-hpo", "summary-completed") in kinds


def test_monitor_mode_decides_the_same_but_stops_nothing(month: Capture, enforced: ReplayResult) -> None:
    monitored = replay(month, "mode: monitor\n" + QUOTA)
    assert monitored.actions == []
    assert monitored.savings.usd == 0
    assert monitored.savings.by_job == {}
    decided = {(name, d.rule, d.verdict, d.at): d.action for name, job in monitored.jobs.items() for d in job.decisions}
    would_stop = {key for key, action in decided.items() if action == "would-stop"}
    assert would_stop == {
        ("team-b-hpo", "concurrency", "breach", arrival(month, "team-b-hpo")),
        ("p3-budget", "budget", "breach", budget_crossing(month, "p3-budget")),
    }
    assert all(d.mode == "monitor" for job in monitored.jobs.values() for d in job.decisions)
    # The same decisions at the same times as under enforce
    enforced_keys = {(n, d.rule, d.verdict, d.at) for n, j in enforced.jobs.items() for d in j.decisions}
    assert set(decided) == enforced_keys


def test_an_exempt_job_is_never_stopped_but_its_decision_is_reported(month: Capture) -> None:
    # The policy names the tag team B's job carries as its exemption tag.
    result = replay(month, "mode: enforce\nexempt_tag: cost-center-exempt\n" + QUOTA)
    assert [(a.job, a.rule) for a in result.actions] == [("p3-budget", "budget")]
    [decision] = result.jobs["team-b-hpo"].decisions
    assert (decision.rule, decision.action) == ("concurrency", "exempt")
    assert "team-b-hpo" not in result.savings.by_job
    assert ("sns", "team-b-hpo", "decision-concurrency-breach") in {
        (n.channel, n.job, n.kind) for n in result.notifications
    }


def test_the_catalog_prices_come_before_the_policy_prices(month: Capture) -> None:
    # Issue 7.3's order: refreshed catalog, then the bundled one, then the policy's prices (which fill
    # the types and regions no catalog prices; they do not replace a catalog's price).
    result = replay(month, f"prices: {{{P3_2X}: 1.5}}\n")
    trials = finished_trials(month.events, "team-a-hpo").values()
    catalog_priced = sum(float(trial_cost(d, price(P3_2X))) for d in trials)
    assert result.jobs["team-a-hpo"].cost_usd == pytest.approx(catalog_priced, abs=1e-5)
    policy_priced = sum(float(trial_cost(d, Decimal("1.5"))) for d in trials)
    assert result.jobs["team-a-hpo"].cost_usd != pytest.approx(policy_priced, abs=1e-2)
