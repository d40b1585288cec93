"""The simulation end to end: stand-in + EventBridge delivery + the real handlers on moto."""

from __future__ import annotations

import itertools
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from governor_client.amt.events import TRAINING_DETAIL_TYPE, TUNING_DETAIL_TYPE
from governor_client.offline.slack_server import SlackWebhookServer
from governor_client.simulator.delivery import DeliveryFaults
from governor_client.simulator.requests import tuning_request
from governor_client.simulator.simulation import (
    CreateTuningJob,
    Progress,
    RetryPolicy,
    Scenario,
    Simulation,
    read_delivery_log,
    read_event_log,
)
from tests.contract.conftest import moto_dump
from tuning_governor.errors import TransientError

from .conftest import MICRO, fresh_world, summaries_of, teams_scenario

REGION = "us-east-1"
TERMINAL = {"Completed", "Stopped", "Failed"}


def _trial_names(sim: Simulation, job: str) -> list[str]:
    return sim.amt.training_jobs_of(job)


def _summary_reports(sim: Simulation) -> int:
    """Summary reports sent (a "corrected" report, sent at most once per job when the figures moved
    after the report, e.g. warm-pool retention billed after the job ended, is counted apart)."""
    messages = sim.env.sns_messages()
    corrected = [m for m in messages if m["MessageAttributes"]["outcome"]["Value"] == "corrected"]
    assert len(corrected) == len({m["Subject"].split()[1] for m in corrected}), "a job corrected twice"
    return sum(
        1
        for m in messages
        if m["MessageAttributes"]["status"]["Value"] in TERMINAL
        and m["MessageAttributes"]["outcome"]["Value"] != "corrected"
    )


def _price(sim: Simulation, instance_type: str) -> Decimal:
    entry = sim.env.services.catalog.price(REGION, instance_type)
    assert entry is not None, instance_type
    return Decimal(entry.usd_per_hour)


def test_several_teams_jobs_and_standalone_jobs_are_governed(
    mocked_aws: None, slack: SlackWebhookServer, tmp_path: Path
) -> None:
    scenario = teams_scenario()
    progress: list[Progress] = []
    log, deliveries = tmp_path / "events.jsonl", tmp_path / "deliveries.jsonl"
    simulation = Simulation(
        scenario, seed=7, slack_url=slack.url, event_log=log, delivery_log=deliveries, on_progress=progress.append
    )
    with simulation as sim:
        result = sim.run()
        store = sim.env.services.store
        owners = {"vision-bo": ("vision", "bo@example.com"), "churn-hb": ("churn", "ana@example.com")}
        owners |= {"fraud-grid": ("fraud", "cy@example.com"), "fraud-rand": ("fraud", "cy@example.com")}
        for job, (team, owner) in owners.items():
            summary = store.get_summary(job)
            assert summary is not None, job
            trials = _trial_names(sim, job)
            assert (summary.team, summary.owner) == (team, owner)
            assert summary.trials_total == len(trials)
            assert summary.unaccounted_trials == []
            assert {r.training_job_name for r in store.trial_records(job)} == set(trials)
        # Standalone jobs are nobody's trials; solo-2 took over solo-1's warm pool.
        for job in scenario.tuning_jobs:
            assert not [r for r in store.trial_records(job) if r.training_job_name.startswith("vision-solo")]
        solo_1 = sim.env.sagemaker.describe_training_job(TrainingJobName="vision-solo-1")
        assert solo_1["WarmPoolStatus"]["Status"] == "Reused"
        assert solo_1["WarmPoolStatus"]["ReusedByJob"] == "vision-solo-2"
        sns = sim.env.sns_messages()

    assert result.errors == 0
    assert result.dead_lettered == []
    assert not result.truncated
    assert result.delivery_stats.dropped == 0
    assert result.deliveries == result.events_emitted  # clean delivery: each event once
    assert result.trial_events_delivered == sum(1 for o in result.outcomes if o.detail_type == TRAINING_DETAIL_TYPE)
    assert {o.detail_type for o in result.outcomes} == {TRAINING_DETAIL_TYPE, TUNING_DETAIL_TYPE}
    # One summary report per tuning job (other reports, e.g. monitor-mode decisions, are InProgress),
    # and every report on both channels.
    summaries = [m for m in sns if m["MessageAttributes"]["status"]["Value"] in TERMINAL]
    assert len(summaries) == len(scenario.tuning_jobs)
    assert len(slack.messages) == len(sns)
    # The event log holds every delivered event as the target got it, in order; the delivery log says
    # when and with what outcome, line for line.
    events = list(read_event_log(log))
    assert [e["id"] for e in events] == [o.event_id for o in result.outcomes]
    assert all(e["source"] == "aws.sagemaker" and "detail" in e for e in events)
    logged = list(read_delivery_log(deliveries))
    assert [(d.seq, d.event_id, d.outcome) for d in logged] == [(o.seq, o.event_id, o.outcome) for o in result.outcomes]
    assert [d.delivered_at for d in logged] == sorted(d.delivered_at for d in logged)
    assert all(d.delivered_at >= d.emitted_at for d in logged)
    # Progress: at most one call per 10 virtual minutes, then a final one.
    assert progress[-1].done
    assert progress[-1].deliveries == result.deliveries
    assert progress[-1].actions_done == progress[-1].actions_total == len(scenario.actions)
    assert all(not p.done for p in progress[:-1])
    times = [p.virtual_time for p in progress]
    assert times == sorted(times)
    assert all((b.virtual_time - a.virtual_time).total_seconds() >= 600 for a, b in itertools.pairwise(progress[:-1]))


def test_trial_records_carry_spot_failure_and_cost_fields(mocked_aws: None) -> None:
    with Simulation(teams_scenario(), seed=7) as sim:
        sim.run()
        store = sim.env.services.store
        seen: Counter[str] = Counter()
        for job in sim.scenario.tuning_jobs:
            for record in store.trial_records(job):
                described = sim.env.sagemaker.describe_training_job(TrainingJobName=record.training_job_name)
                count = described["ResourceConfig"]["InstanceCount"]
                price = _price(sim, described["ResourceConfig"]["InstanceType"])
                billable = described.get("BillableTimeInSeconds", 0)
                training = described.get("TrainingTimeInSeconds", billable)
                assert record.status == described["TrainingJobStatus"]
                assert (record.billable_seconds, record.training_seconds) == (billable, training)
                assert record.instance_count == count
                assert record.cost_usd == (price * count * billable / 3600).quantize(MICRO)
                assert record.spot is described["EnableManagedSpotTraining"]
                if record.spot and training > 0:  # a spot trial that got instances
                    seen["spot"] += 1
                    assert record.billable_seconds < record.training_seconds
                    saved = price * count * (training - billable) / 3600
                    assert record.spot_savings_usd == saved.quantize(MICRO)
                    secondary = [t["Status"] for t in described["SecondaryStatusTransitions"]]
                    seen["interrupted"] += "Interrupted" in secondary
                if record.status == "Failed":
                    assert record.failure_reason == described["FailureReason"]
                    seen["failed-unbilled" if billable == 0 else "failed-partly-billed"] += 1
    # The seeded scenario shows every case at least once.
    assert seen["spot"] >= 3
    assert seen["interrupted"] >= 1
    assert seen["failed-unbilled"] >= 1  # failed while Starting: no billing fields at all
    assert seen["failed-partly-billed"] >= 1


@pytest.mark.parametrize("keep_alive_s", [0, 600], ids=["no-warm-pools", "warm-pools"])
def test_duplicates_reordering_and_delays_give_the_same_summaries_as_a_clean_run(
    aws_credentials: None, keep_alive_s: int
) -> None:
    scenario = teams_scenario(keep_alive_s=keep_alive_s)
    with fresh_world(Simulation(scenario, seed=7)) as sim:
        clean_result = sim.run()
        clean = summaries_of(sim, scenario.tuning_jobs)
        clean_reports = _summary_reports(sim)
    # Delays up to 2 minutes (beyond the tuner's 30 s finish latency, so some trial events arrive after
    # their tuning job's terminal event), both kinds of duplicates, and shuffled blocks of 3.
    faults = DeliveryFaults(
        same_id_duplicate_rate=0.2, new_id_duplicate_rate=0.2, max_delay_s=120, reorder_window=3, seed=21
    )
    with fresh_world(Simulation(scenario, seed=7, faults=faults)) as sim:
        noisy_result = sim.run()
        noisy = summaries_of(sim, scenario.tuning_jobs)
        noisy_reports = _summary_reports(sim)

    stats = noisy_result.delivery_stats
    assert stats.same_id_duplicates > 10
    assert stats.new_id_duplicates > 10
    assert stats.overtaken > 50
    assert noisy_result.events_emitted == clean_result.events_emitted  # the same world underneath
    assert noisy_result.outcome_counts["duplicate"] > clean_result.outcome_counts["duplicate"]
    # Some trial events, emitted before their tuning job's terminal event, were delivered after it.
    first_final: dict[str, tuple[int, Any]] = {}
    for o in noisy_result.outcomes:
        if o.outcome == "finalised":
            first_final.setdefault(o.result["job"], (o.seq, o.emitted_at))
    late = [
        o
        for o in noisy_result.outcomes
        if o.detail_type == TRAINING_DETAIL_TYPE
        and o.copy == "original"  # (the finaliser records such a trial itself: its event is then a duplicate)
        and o.result.get("job") in first_final
        and o.seq > first_final[o.result["job"]][0]
        and o.emitted_at <= first_final[o.result["job"]][1]
    ]
    assert late, "no trial event overtook its tuning job's terminal event; the test lost its point"
    assert all(summary is not None for summary in clean.values())
    assert noisy == clean
    assert noisy_reports == clean_reports == len(scenario.tuning_jobs)


def test_warm_pool_retention_is_costed_in_the_summary(mocked_aws: None) -> None:
    with Simulation(teams_scenario(keep_alive_s=600, failure_rate=0.0), seed=7) as sim:
        sim.run()
        for job in sim.scenario.tuning_jobs:
            expected = Decimal(0)
            for name in _trial_names(sim, job):
                described = sim.env.sagemaker.describe_training_job(TrainingJobName=name)
                retained = (described.get("WarmPoolStatus") or {}).get("ResourceRetainedBillableTimeInSeconds", 0)
                count = described["ResourceConfig"]["InstanceCount"]
                expected += _price(sim, described["ResourceConfig"]["InstanceType"]) * count * retained / 3600
            summary = sim.env.services.store.get_summary(job)
            assert summary is not None
            assert expected > 0
            assert summary.cost.warm_pool_cost_usd == pytest.approx(expected, abs=Decimal("0.00001")), job


def _one_small_job() -> Scenario:
    return Scenario([CreateTuningJob(0, tuning_request("retry-me", strategy="Random", max_jobs=3, max_parallel=3))])


def failing_finalisations(sim: Simulation, times: int) -> None:
    """The first ``times`` finalisations fail with a throttled Describe (a dependency failing on the
    terminal event; a failing report channel no longer fails an event, issue 18)."""
    sagemaker = sim.env.services.sagemaker
    describe = sagemaker.describe_tuning_job
    left = [times]

    def flaky(name: str) -> Any:
        described = describe(name)
        if described.status in {"Completed", "Stopped", "Failed"} and left[0] > 0:
            left[0] -= 1
            raise TransientError("DescribeHyperParameterTuningJob throttled (injected)")
        return described

    sagemaker.describe_tuning_job = flaky  # type: ignore[method-assign]


def test_a_failing_delivery_is_retried_after_the_policy_delay(mocked_aws: None, slack: SlackWebhookServer) -> None:
    with Simulation(_one_small_job(), seed=7, slack_url=slack.url) as sim:
        failing_finalisations(sim, 1)  # the first attempt at the terminal event fails
        result = sim.run()
        sns = sim.env.sns_messages()
    terminal = [
        o for o in result.outcomes if o.detail_type == TUNING_DETAIL_TYPE and o.outcome in {"error", "finalised"}
    ]
    assert [(o.attempt, o.outcome) for o in terminal] == [(1, "error"), (2, "finalised")]
    assert terminal[0].event_id == terminal[1].event_id
    assert (terminal[1].delivered_at - terminal[0].delivered_at).total_seconds() == 60
    assert terminal[1].result["reports"] == {"sns": "sent", "slack": "sent"}
    assert len(slack.messages) == 1
    assert len(sns) == 1
    assert result.dead_lettered == []


def test_a_delivery_that_keeps_failing_is_dead_lettered(mocked_aws: None, slack: SlackWebhookServer) -> None:
    with Simulation(_one_small_job(), seed=7, slack_url=slack.url, retry=RetryPolicy(maximum_retry_attempts=1)) as sim:
        failing_finalisations(sim, 6)
        result = sim.run()
    errors = [o for o in result.outcomes if o.outcome == "error"]
    assert [o.attempt for o in errors] == [1, 2]
    (dead,) = result.dead_lettered
    assert (dead.attempt, dead.event_id) == (2, errors[0].event_id)
    assert slack.messages == []


def test_dropped_events_are_reported_and_never_delivered(aws_credentials: None, tmp_path: Path) -> None:
    faults = DeliveryFaults(drop_rate=0.1, seed=5)
    with fresh_world(Simulation(teams_scenario(), seed=7, faults=faults, event_log=tmp_path / "log.jsonl")) as sim:
        result = sim.run()
    dropped = {d.event_id for d in result.dropped}
    assert len(dropped) == result.delivery_stats.dropped > 0
    delivered = {event["id"] for event in read_event_log(tmp_path / "log.jsonl")}
    assert not dropped & delivered
    assert len(delivered) + len(dropped) == result.events_emitted


def test_without_handlers_the_simulation_is_deterministic(aws_credentials: None, tmp_path: Path) -> None:
    faults = DeliveryFaults(
        same_id_duplicate_rate=0.1, new_id_duplicate_rate=0.1, max_delay_s=30, reorder_window=2, seed=3
    )
    logs = []
    for attempt in range(2):
        path = tmp_path / f"run-{attempt}.jsonl"
        with fresh_world(Simulation(teams_scenario(), seed=7, faults=faults, handlers=False, event_log=path)) as sim:
            result = sim.run()
        assert set(result.outcome_counts) == {"not-invoked"}
        logs.append(path.read_text())
    assert logs[0] == logs[1]
    assert len(logs[0].splitlines()) == result.deliveries


def test_a_run_stops_at_max_virtual_seconds(mocked_aws: None) -> None:
    with Simulation(_one_small_job(), seed=7, handlers=False, max_virtual_s=120) as sim:
        result = sim.run()
        with pytest.raises(RuntimeError, match="runs once"):
            sim.run()
    assert result.truncated
    assert (result.finished_at - result.started_at).total_seconds() <= 120


def test_team_months_hold_every_dollar_of_their_jobs_warm_pools_included(mocked_aws: None) -> None:
    # Given tuning jobs of three teams whose trials keep warm pools for 10 minutes (retention billed
    # after each trial was recorded: the pool ends later)
    with Simulation(teams_scenario(keep_alive_s=600, failure_rate=0.0), seed=7) as sim:
        sim.run()
        store = sim.env.services.store
        jobs: dict[str, Decimal] = {}
        retained = Decimal(0)
        items = moto_dump(sim.env.dynamodb) if sim.env.dynamodb is not None else list(store.scan())  # type: ignore[attr-defined]
        for item in items:
            if item["sk"] == "META" and item.get("team") and str(item["pk"]).startswith("JOB#"):
                jobs[item["team"]] = jobs.get(item["team"], Decimal(0)) + Decimal(str(item.get("cost_usd") or 0))
                retained += Decimal(str(item.get("warm_pool_instance_seconds") or 0))
        teams = {
            team: sum(
                (
                    Decimal(str(store.team_month(team, month).get("finished_usd") or 0))
                    for month in ("2026-11", "2026-12")
                ),
                Decimal(0),
            )
            for team in jobs
        }
    # Then each team's months add up to its jobs' cost, to the cent
    assert retained > 0
    assert sorted(jobs) == ["churn", "fraud", "vision"]
    assert {team: round(total, 2) for team, total in teams.items()} == {
        team: round(total, 2) for team, total in jobs.items()
    }
