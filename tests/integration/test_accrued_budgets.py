"""Budgets judged on accrued spend (finished + running trials) and team monthly budgets, through the real
handlers and the sweep on the AMT stand-in (moto)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

import sweep
from governor_client.amt import AmtStandIn, TrialPlan, VirtualClock
from governor_client.offline.environment import build_environment
from governor_client.offline.slack_server import SlackWebhookServer
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tests.integration.test_governance import decisions, record_stop_calls, status, use_policy
from tuning_governor.domain.cost import SECONDS_PER_HOUR, usd
from tuning_governor.domain.job import state_time
from tuning_governor.governance.job import job_facts

P3_8X = "ml.p3.8xlarge"
HOURLY = Decimal("14.688")  # us-east-1 ml.p3.8xlarge training, the bundled catalog's price
SWEEP_EVERY = timedelta(minutes=5)


pytestmark = pytest.mark.usefixtures("roomy_quota")


@pytest.fixture
def mid_month(mocked_aws: None, slack: SlackWebhookServer) -> Iterator[World]:
    """A world on 10 November, so a team's pace projects well past the month's spend so far."""
    clock = VirtualClock(datetime(2026, 11, 10, 9, 0, tzinfo=UTC))
    with AmtStandIn(clock=clock, seed=7) as amt:
        env = build_environment(slack_url=slack.url, clock=clock.now)
        amt.set_applied_quota(P3_8X, 1000)
        yield World(amt=amt, env=env, slack=slack, deliveries=[])


class LongTrials:
    """Every trial trains ``hours`` and completes (no early stopping); spot trials save ``spot_savings``."""

    def __init__(self, hours: float = 3.0, spot_savings: float = 0.0) -> None:
        self.hours = hours
        self.spot_savings = spot_savings

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> TrialPlan:
        return TrialPlan(
            duration_s=self.hours * 3600, objective_value=rng.uniform(0.7, 0.9), spot_savings_fraction=self.spot_savings
        )


def big_job(
    name: str,
    *,
    team: str = "nlp",
    tags: dict[str, str] | None = None,
    max_parallel: int = 4,
    max_jobs: int = 4,
    spot: bool = False,
) -> dict[str, Any]:
    """The issue's job: trials of 8 x ml.p3.8xlarge, Random search (nothing stopped early), 4 h allowed."""
    request = seed_tuning_request(
        name,
        team=team,
        instance_type=P3_8X,
        instance_count=8,
        max_parallel=max_parallel,
        max_jobs=max_jobs,
        spot=spot,
        extra_tags=tags,
    )
    config = request["HyperParameterTuningJobConfig"]
    config["Strategy"] = "Random"
    config.pop("StrategyConfig", None)
    stopping = request["TrainingJobDefinition"]["StoppingCondition"]
    stopping["MaxRuntimeInSeconds"] = 4 * 3600
    if spot:
        stopping["MaxWaitTimeInSeconds"] = 8 * 3600
    return request


def event_time(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(event["time"]).replace("Z", "+00:00"))


def run_sweep(world: World) -> dict[str, Any]:
    report: dict[str, Any] = sweep.handler(
        {"source": "aws.scheduler"}, FakeLambdaContext("sweep"), services=world.env.services
    )
    return report


def spent(world: World, job: str, at: datetime) -> tuple[Decimal, Decimal, Decimal]:
    """(total, finished, accrued) as the governor judges ``job`` at ``at``."""
    services = world.env.services
    policy = services.policy()
    meta = services.store.get_job(job) or {}
    facts = job_facts(meta, now=at, policy=policy, catalog=services.price_catalog(policy))
    assert facts.spent_usd is not None and facts.spent_finished_usd is not None and facts.spent_accrued_usd is not None
    return facts.spent_usd, facts.spent_finished_usd, facts.spent_accrued_usd


def deliver(world: World, event: dict[str, Any]) -> dict[str, Any]:
    outcome = deliver_event(event, world.env.services).outcome
    assert outcome.get("outcome") != "error", outcome
    return outcome


def count_calls(world: World, operation: str) -> list[str]:
    calls: list[str] = []
    world.env.sagemaker.meta.events.register(
        f"provide-client-params.sagemaker.{operation}", lambda params, **_: calls.append(str(params))
    )
    return calls


# -- point 1: a job's budget counts its running trials --------------------------------------------------------
def test_accrued_spend_stops_the_job_at_the_first_trial_event_past_its_budget(world: World) -> None:
    # Given the job (4 parallel trials of 8 x ml.p3.8xlarge, 3 h each) with a $5 budget tag, and
    # the breach at the budget itself (stop lead 0)
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, "mode: enforce\ndefaults: {budget_stop_lead_seconds: 0}\n")
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("big-job", tags={"governance:budget-usd": "5"}))
    created = world.amt.clock.now()
    # When its events are delivered one by one
    timeline: list[tuple[datetime, Decimal, list[str]]] = []
    for _ in range(5 * 60):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            outcome = deliver(world, event)
            if outcome.get("trial") and outcome.get("job") == "big-job":
                # judged at the event's time or the latest moment the job's item reflects (guard.state_time)
                at = max(
                    event_time(event), state_time(world.env.services.store.get_job("big-job")) or event_time(event)
                )
                timeline.append((at, spent(world, "big-job", at)[0], list(stops)))
        if world.amt.idle():
            break
    # Then the job is stopped at the first trial event whose spend (finished + accrued) reaches $5 ...
    crossing = next(i for i, (_, total, _) in enumerate(timeline) if total >= 5)
    assert all(not stopped for _, _, stopped in timeline[:crossing])
    assert timeline[crossing][2] == ["big-job"]
    assert stops == ["big-job"]
    # ... minutes after it started, not after its first 3-hour trial finished (about $352 each)
    assert timeline[crossing][0] - created < timedelta(minutes=10)
    [breach] = [d for d in decisions(world, "big-job") if d["sk"] == "DECISION#budget#breach"]
    numbers = breach["numbers"]
    assert Decimal(str(numbers["spent_finished_usd"])) == 0
    assert Decimal(str(numbers["spent_usd"])) == Decimal(str(numbers["spent_accrued_usd"])) == timeline[crossing][1]
    assert numbers["running_trials"] >= 1
    assert numbers["budget_source"] == "tag governance:budget-usd"
    assert status(world, "big-job") == "Stopped"


def test_the_sweep_stops_a_job_whose_accrued_spend_crossed_its_budget_with_no_event(world: World) -> None:
    # Given the example: a $50 budget, 4 parallel 8-instance trials of 3 h, sweeps every 5 minutes,
    # no one-time checks (the World's services schedule none) and the breach at the budget itself
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, "mode: enforce\ndefaults: {budget_stop_lead_seconds: 0}\n")
    stops = record_stop_calls(world)
    describes = count_calls(world, "DescribeTrainingJob")
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("big-job", tags={"governance:budget-usd": "50"}))
    created = world.amt.clock.now()
    sweeps: list[tuple[datetime, Decimal, list[str], int]] = []
    last_event = created
    while not stops and world.amt.clock.now() - created < timedelta(hours=1):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            deliver(world, event)
            last_event = event_time(event)
        if (world.amt.clock.now() - created) % SWEEP_EVERY == timedelta(0):
            before = len(describes)
            run_sweep(world)
            now = world.amt.clock.now()
            sweeps.append((now, spent(world, "big-job", now)[0], list(stops), len(describes) - before))
    # Then the first sweep after the spend crossed $50 stopped it; the sweeps before it did not
    assert stops == ["big-job"]
    stopping = next(i for i, (_, _, stopped, _) in enumerate(sweeps) if stopped)
    assert all(total < 50 for _, total, _, _ in sweeps[:stopping])
    at, total, _, _ = sweeps[stopping]
    assert total >= 50
    # with no trial event in between: every trial was in Training, the next event hours away
    assert last_event < at - SWEEP_EVERY
    # overspend <= one sweep interval of the job's full-parallel burn (4 x 8 x $14.688/h for 5 minutes)
    burn = 4 * 8 * HOURLY * Decimal(SWEEP_EVERY.total_seconds()) / SECONDS_PER_HOUR
    assert total - 50 <= burn
    # and the sweep asked SageMaker nothing per trial
    assert [calls for *_, calls in sweeps] == [0] * len(sweeps)
    [breach] = [d for d in decisions(world, "big-job") if d["sk"] == "DECISION#budget#breach"]
    assert Decimal(str(breach["numbers"]["spent_accrued_usd"])) == total
    assert breach["numbers"]["running_trials"] == 4


def test_a_running_spot_trial_accrues_at_the_discount_observed_on_the_jobs_finished_spot_trials(
    world: World,
) -> None:
    # Given a spot job running one 1-hour trial at a time, saving 70 % of billable time
    world.amt.engine.behaviour = LongTrials(hours=1, spot_savings=0.7)
    use_policy(world, "mode: monitor\n")
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("spot-job", max_parallel=1, max_jobs=3, spot=True))
    store = world.env.services.store
    # When the first trial is running, nothing finished yet: it accrues at the on-demand price
    first_running: datetime | None = None
    while first_running is None:
        world.amt.advance(60)
        for event in world.amt.drain_events():
            deliver(world, event)
        running = (store.get_job("spot-job") or {}).get("running") or {}
        if running:
            [entry] = running.values()
            assert entry["spot"] is True
            first_running = datetime.fromisoformat(str(entry["start"]))
    at = first_running + timedelta(minutes=30)
    assert spent(world, "spot-job", at)[2] == usd(8 * HOURLY / 2)
    # Once a spot trial has finished, the next running one accrues at that trial's billed/on-demand ratio
    while len(store.trial_records("spot-job")) < 1 or not (store.get_job("spot-job") or {}).get("running"):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            deliver(world, event)
    [record] = store.trial_records("spot-job")
    assert record.spot and record.cost_usd is not None and record.spot_savings_usd
    ratio = record.cost_usd / (record.cost_usd + record.spot_savings_usd)
    assert Decimal("0.25") < ratio < Decimal("0.35")
    [entry] = ((store.get_job("spot-job") or {}).get("running") or {}).values()
    at = datetime.fromisoformat(str(entry["start"])) + timedelta(minutes=30)
    _, finished, accrued = spent(world, "spot-job", at)
    assert finished == record.cost_usd
    assert accrued == usd(8 * HOURLY * ratio / 2)


def test_a_late_in_progress_event_never_resurrects_a_finished_trial_and_duplicates_count_once(world: World) -> None:
    world.amt.engine.behaviour = LongTrials(hours=1)
    use_policy(world, "mode: monitor\nteams: {nlp: {monthly_budget_usd: 100000}}\n")
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("dup-job", max_parallel=1, max_jobs=1))
    store = world.env.services.store
    started: list[dict[str, Any]] = []
    ended: list[dict[str, Any]] = []
    for _ in range(3 * 60):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            detail = event["detail"]
            if detail.get("TrainingJobStatus") == "InProgress" and detail.get("TrainingStartTime"):
                # Given every running-trial event delivered twice (EventBridge may duplicate)
                assert deliver(world, event)["running"] in {"tracked", "known"}
                assert deliver(world, dict(event, id="another-id"))["running"] == "known"
                started.append(event)
                [entry] = ((store.get_job("dup-job") or {}).get("running") or {}).values()
                assert [t.trial for t in store.team_running("nlp")] == [entry["trial"]]
            elif detail.get("TrainingJobStatus") == "Completed":
                deliver(world, event)
                assert deliver(world, dict(event, id="again"))["outcome"] == "duplicate"
                ended.append(event)
            else:
                deliver(world, event)
        if world.amt.idle():
            break
    assert started and len(ended) == 1
    # Then the finished trial is no longer running, on the job or the team, and is counted once
    [record] = store.trial_records("dup-job")
    assert ((store.get_job("dup-job") or {}).get("running") or {}) == {}
    assert store.team_running("nlp") == []
    month = store.team_month("nlp", "2026-11")
    assert (Decimal(str(month["finished_usd"])), month["trials"]) == (record.cost_usd, 1)
    # When a running-trial event arrives late, after the terminal one
    late = deliver(world, dict(started[0], id="late"))
    # Then it does not make the trial run again
    assert late["running"] == "already-finished"
    assert ((store.get_job("dup-job") or {}).get("running") or {}) == {}
    assert store.team_running("nlp") == []


# -- point 2: team monthly budgets -----------------------------------------------------------------------
TEAM_POLICY = """\
mode: {mode}
teams:
  nlp: {{monthly_budget_usd: 100}}
"""


@pytest.mark.parametrize(("mode", "expected"), [("enforce", "stopped"), ("monitor", "would-stop")])
def test_a_team_over_its_monthly_budget_has_its_running_jobs_stopped_and_is_reported_once(
    mid_month: World, mode: str, expected: str
) -> None:
    world = mid_month
    # Given team nlp with $100 for the month, two nlp jobs (one exempt) and a job of another team
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, TEAM_POLICY.format(mode=mode))
    stops = record_stop_calls(world)
    sm = world.env.sagemaker
    sm.create_hyper_parameter_tuning_job(**big_job("nlp-a", max_parallel=2, max_jobs=2))
    sm.create_hyper_parameter_tuning_job(
        **big_job("nlp-b", max_parallel=1, max_jobs=1, tags={"governance:exempt": "true"})
    )
    sm.create_hyper_parameter_tuning_job(**big_job("cv-c", team="cv", max_parallel=1, max_jobs=1))
    created = world.amt.clock.now()
    # When their trials accrue (3 x 8 x $14.688/h: $100 in about 17 minutes), with sweeps every 5 minutes
    while world.amt.clock.now() - created < timedelta(minutes=40):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            deliver(world, event)
        if (world.amt.clock.now() - created) % SWEEP_EVERY == timedelta(0):
            run_sweep(world)
    store = world.env.services.store
    team_items = {d["sk"]: d for d in store.team_decisions("nlp")}
    breach = team_items["DECISION#team-budget#breach#2026-11"]
    # Then the team's decision is taken once, on a spend of at least $100 (finished + accrued) ...
    assert Decimal(str(breach["numbers"]["spent_usd"])) >= 100
    assert breach["numbers"]["budget_source"] == "teams.nlp.monthly_budget_usd"
    # ... with a projected warning before it: 9.4 days into November, $31.25 projects to $100
    warning = team_items["DECISION#team-budget#warning#2026-11"]
    assert warning["at"] < breach["at"]
    assert Decimal(str(warning["numbers"]["spent_usd"])) < 100 < Decimal(str(warning["numbers"]["projected_usd"]))
    # ... each running nlp job gets its action, the other team's job none
    assert {j["job"]: j["action"] for j in breach["jobs"]} == {"nlp-a": expected, "nlp-b": "exempt"}
    # (nlp-a's judgement crossed the projection: the team's warning is one of its decisions too)
    assert {d["verdict"]: d["action"] for d in decisions(world, "nlp-a") if d["rule"] == "team-budget"} == {
        "breach": expected,
        "warning": "warned",
    }
    assert [d["action"] for d in decisions(world, "nlp-b") if d["rule"] == "team-budget"] == ["exempt"]
    assert [d for d in decisions(world, "cv-c") if d["rule"] == "team-budget"] == []
    assert stops == (["nlp-a"] if mode == "enforce" else [])
    # ... and it is reported once for the team (one breach, one warning message per channel)
    subjects = [m["Subject"] for m in world.env.sns_messages() if "team-budget" in m["Subject"]]
    assert len(subjects) == 2
    assert sum("team nlp" in s for s in subjects) == 2
    assert len([m for m in world.slack.messages if "team-budget" in m["text"]]) == 2
    # When another nlp job starts later in the month
    sm.create_hyper_parameter_tuning_job(**big_job("nlp-late", max_parallel=1, max_jobs=1))
    world.amt.advance(60)
    for event in world.amt.drain_events():
        deliver(world, event)
    # Then it is stopped (or would be) on its own decision, reported on its own, once
    assert [d["action"] for d in decisions(world, "nlp-late") if d["rule"] == "team-budget"] == [expected]
    assert stops == (["nlp-a", "nlp-late"] if mode == "enforce" else [])
    late_reports = [m for m in world.env.sns_messages() if "nlp-late" in m["Subject"]]
    assert len(late_reports) == 1
