"""Finding 12 of issue 18: a job's team comes from a source its data scientist cannot change. With
``teams.<team>.execution_roles``, the execution role the job runs as (iam:PassRole decides who may pass
it; SageMaker never changes it) names the team, and a team tag that disagrees is reported and ignored."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import build_environment
from governor_client.offline.slack_server import SlackWebhookServer
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import P3_8X, SWEEP_EVERY, LongTrials, big_job, deliver, run_sweep
from tests.integration.test_governance import decisions, record_stop_calls, use_policy

NLP_ROLE = "arn:aws:iam::123456789012:role/nlp-sagemaker"
CV_ROLE = "arn:aws:iam::123456789012:role/cv-sagemaker"
POLICY = f"""\
mode: enforce
teams:
  nlp: {{monthly_budget_usd: 100, job_budget_usd: 50, execution_roles: [{NLP_ROLE}]}}
  cv: {{job_budget_usd: 100000, execution_roles: [{CV_ROLE}]}}
"""


@pytest.fixture
def mid_month(mocked_aws: None, slack: SlackWebhookServer) -> Iterator[World]:
    clock = VirtualClock(datetime(2026, 11, 10, 9, 0, tzinfo=UTC))
    with AmtStandIn(clock=clock, seed=7) as amt:
        env = build_environment(slack_url=slack.url, clock=clock.now)
        amt.set_applied_quota(P3_8X, 1000)
        yield World(amt=amt, env=env, slack=slack, deliveries=[])


def job_as(name: str, role: str, *, team: str, max_parallel: int) -> dict[str, Any]:
    request = big_job(name, team=team, max_parallel=max_parallel, max_jobs=max_parallel)
    request["TrainingJobDefinition"]["RoleArn"] = role
    return request


def run_for(world: World, minutes: int) -> None:
    start = world.amt.clock.now()
    while world.amt.clock.now() - start < timedelta(minutes=minutes):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            deliver(world, event)
        if (world.amt.clock.now() - start) % SWEEP_EVERY == timedelta(0):
            run_sweep(world)


def test_a_job_tagged_with_another_teams_name_never_spends_its_month_or_stops_its_jobs(mid_month: World) -> None:
    world = mid_month
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, POLICY.replace("job_budget_usd: 50, ", ""))
    stops = record_stop_calls(world)
    sm = world.env.sagemaker
    # Given nlp's own job ($117.50/h: $58.75 in 30 minutes, inside nlp's $100 month)
    sm.create_hyper_parameter_tuning_job(**job_as("nlp-own", NLP_ROLE, team="nlp", max_parallel=1))
    # ... and a cv data scientist's job, run as cv's role but tagged team=nlp ($235/h)
    sm.create_hyper_parameter_tuning_job(**job_as("cv-rogue", CV_ROLE, team="nlp", max_parallel=2))
    # When both run for 30 minutes
    run_for(world, 30)
    store = world.env.services.store
    # Then the rogue job is cv's: its spend is in cv's month, not nlp's
    assert (store.get_job("cv-rogue") or {}).get("team") == "cv"
    assert sorted(t.trial.rsplit("-", 2)[0] for t in store.team_running("cv")) == ["cv-rogue", "cv-rogue"]
    assert [t.trial.rsplit("-", 2)[0] for t in store.team_running("nlp")] == ["nlp-own"]
    # ... nlp's month is not breached (its own job's pace only projects past it: a warning on that job)
    # and nlp's job is not stopped
    assert [d["verdict"] for d in decisions(world, "nlp-own") if d["rule"] == "team-budget"] == ["warning"]
    assert stops == []
    # ... and the tag it carried is reported as ignored
    tag_reports = [m["Message"] for m in world.env.sns_messages() if "cv-rogue" in m["Subject"]]
    assert any('team="nlp"' in m and "ignored" in m for m in tag_reports), tag_reports


def test_a_team_tag_naming_a_richer_team_does_not_raise_the_jobs_budget(mid_month: World) -> None:
    world = mid_month
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, POLICY.replace("monthly_budget_usd: 100, ", ""))
    stops = record_stop_calls(world)
    # Given an nlp data scientist's job (nlp's budget: $50 a job) tagged with cv's name ($100000 a job)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**job_as("nlp-dodge", NLP_ROLE, team="cv", max_parallel=1))
    # When it runs past $50
    run_for(world, 40)
    # Then it is stopped on nlp's job budget
    assert stops == ["nlp-dodge"]
    [budget] = [d for d in decisions(world, "nlp-dodge") if d["rule"] == "budget" and d["verdict"] == "breach"]
    assert budget["numbers"]["budget_usd"] == 50


def test_an_arrival_event_without_the_role_is_completed_by_describe(mid_month: World) -> None:
    world = mid_month
    use_policy(world, POLICY)
    # Given an nlp job tagged cv whose InProgress event carries no RoleArn (AWS's documented event
    # shape need not carry the definitions)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**job_as("nlp-thin", NLP_ROLE, team="cv", max_parallel=1))
    world.amt.advance(60)
    [arrival] = [
        e for e in world.amt.drain_events() if e["detail"].get("HyperParameterTuningJobStatus") == "InProgress"
    ]
    for key in ("TrainingJobDefinition", "TrainingJobDefinitions"):
        definition = arrival["detail"].get(key)
        for each in definition if isinstance(definition, list) else [definition] if definition else []:
            each.pop("RoleArn", None)
    # When it is delivered
    deliver(world, arrival)
    # Then the governor read the role from SageMaker and the job is nlp's
    job = world.env.services.store.get_job("nlp-thin") or {}
    assert (job.get("team"), job.get("roles")) == ("nlp", [NLP_ROLE])


def test_retagging_a_running_job_with_another_teams_name_moves_nothing(mid_month: World) -> None:
    world = mid_month
    world.amt.engine.behaviour = LongTrials(hours=0.25)  # the nlp job launches new trials after the retag
    use_policy(world, RETAG_POLICY)
    stops = record_stop_calls(world)
    sm = world.env.sagemaker
    # Given cv's own job ($117.50/h, inside cv's $100 month for 40 minutes) and an nlp job ($235/h)
    cv_job = job_as("cv-own", CV_ROLE, team="cv", max_parallel=1)
    cv_job["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] = 4
    sm.create_hyper_parameter_tuning_job(**cv_job)
    nlp_job = job_as("nlp-b", NLP_ROLE, team="nlp", max_parallel=2)
    nlp_job["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] = 12
    sm.create_hyper_parameter_tuning_job(**nlp_job)
    world.amt.advance(60)
    events = world.amt.drain_events()
    for event in events:
        deliver(world, event)
    [arrival] = [e for e in events if e["detail"].get("HyperParameterTuningJobName") == "nlp-b"]
    run_for(world, 2)
    # When its data scientist retags the nlp job team=cv while it runs, and SageMaker's next event of
    # the job (it may send several per state change) carries the new tag
    arn = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="nlp-b")["HyperParameterTuningJobArn"]
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": "team", "Value": "cv"}])
    later = copy.deepcopy(arrival) | {"id": "nlp-b-after-retag"}
    later["detail"]["Tags"] = {**arrival["detail"]["Tags"], "team": "cv"}
    later["detail"]["LastModifiedTime"] = int(world.amt.clock.now().timestamp() * 1000)
    deliver(world, later)
    run_for(world, 38)
    store = world.env.services.store
    # Then the nlp job stays nlp's: cv's month is not breached, and nothing is stopped
    assert (store.get_job("nlp-b") or {}).get("team") == "nlp"
    assert [d["sk"] for d in store.team_decisions("cv") if "#breach#" in d["sk"]] == []
    assert stops == []


RETAG_POLICY = f"""\
mode: enforce
teams:
  nlp: {{execution_roles: [{NLP_ROLE}]}}
  cv: {{monthly_budget_usd: 100, execution_roles: [{CV_ROLE}]}}
"""
