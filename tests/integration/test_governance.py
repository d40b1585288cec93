"""Governance through the real handlers on the AMT stand-in: concurrency, budgets, monitor mode, exemptions."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from governor_client.simulator.runner import deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tuning_governor.governance.job import job_facts
from tuning_governor.policy import Policy, parse_policy

P3_2X = "ml.p3.2xlarge"
P3_8X = "ml.p3.8xlarge"


def use_policy(world: World, text: str) -> Policy:
    policy = parse_policy(text, "test")
    world.env.services.policy = lambda: policy
    return policy


def record_stop_calls(world: World) -> list[str]:
    calls: list[str] = []

    def seen(params: dict[str, Any], **_: Any) -> None:
        calls.append(params["HyperParameterTuningJobName"])

    world.env.sagemaker.meta.events.register("provide-client-params.sagemaker.StopHyperParameterTuningJob", seen)
    return calls


def status(world: World, name: str) -> str:
    return str(
        world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)[
            "HyperParameterTuningJobStatus"
        ]
    )


def decisions(world: World, job: str) -> list[dict[str, Any]]:
    return world.env.services.store.decisions(job)


def launch_two_teams(world: World, b_tags: dict[str, str] | None = None) -> None:
    """Team A: 4 parallel x 1 ml.p3.2xlarge; a minute later team B: 3 parallel x 2 (events not yet delivered)."""
    sm = world.env.sagemaker
    sm.create_hyper_parameter_tuning_job(
        **seed_tuning_request(
            "team-a-hpo", team="vision", instance_type=P3_2X, instance_count=1, max_parallel=4, max_jobs=8
        )
    )
    world.pump(60)
    sm.create_hyper_parameter_tuning_job(
        **seed_tuning_request(
            "team-b-hpo",
            team="speech",
            instance_type=P3_2X,
            instance_count=2,
            max_parallel=3,
            max_jobs=6,
            extra_tags=b_tags,
        )
    )


def two_teams(world: World) -> None:
    launch_two_teams(world)
    world.run_until_idle()


ENFORCE = "mode: enforce\n"
AT_BUDGET = "defaults: {budget_stop_lead_seconds: 0}\n"


def test_the_arriving_job_that_does_not_fit_is_stopped_and_running_jobs_are_untouched(world: World) -> None:
    # Given an applied Service Quota of 8 ml.p3.2xlarge and an enforcing policy
    code = world.amt.set_applied_quota(P3_2X, 8)
    use_policy(world, ENFORCE)
    stops = record_stop_calls(world)
    # When team A's job (4 instances) runs and team B's (3 x 2 = 6) arrives
    two_teams(world)
    # Then B is stopped, A is untouched
    assert stops == ["team-b-hpo"]
    assert status(world, "team-a-hpo") == "Completed"
    assert status(world, "team-b-hpo") == "Stopped"
    assert decisions(world, "team-a-hpo") == []
    [decision] = decisions(world, "team-b-hpo")
    row = decision["numbers"]["instance_types"][P3_2X]
    assert (row["usage"], row["demand"], row["limit"], row["headroom"]) == (4, 6, 8, 4)
    assert row["limit_source"] == f"Service Quota {code} ({P3_2X} for training job usage)"
    assert (decision["rule"], decision["mode"], decision["action"]) == ("concurrency", "enforce", "stopped")
    # And the report names the limit, its source, the usage, the demand and the headroom
    reports = [m for m in world.env.sns_messages() if m["MessageAttributes"]["outcome"]["Value"] == "stopped"]
    stop_reports = [m for m in reports if "STOPPED" in m["Subject"]]
    assert len(stop_reports) == 1
    body = stop_reports[0]["Message"]
    for needle in ("usage 4", "demand 6", "limit 8", "headroom 4", code):
        assert needle in body
    # B's own finalisation still happened (Stopped summary), with its stop time known
    summary = world.env.services.store.get_summary("team-b-hpo")
    assert summary is not None
    assert summary.status == "Stopped"


def test_policy_quota_lower_than_service_quota_is_the_limit(world: World) -> None:
    world.amt.set_applied_quota(P3_2X, 100)
    use_policy(world, ENFORCE + f"quotas: {{{P3_2X}: 8}}\n")
    stops = record_stop_calls(world)
    two_teams(world)
    assert stops == ["team-b-hpo"]
    [decision] = decisions(world, "team-b-hpo")
    assert decision["numbers"]["instance_types"][P3_2X]["limit_source"] == "policy quotas"


def test_team_limit_applies_on_top_of_the_account_limit(world: World) -> None:
    world.amt.set_applied_quota(P3_2X, 100)
    use_policy(world, ENFORCE + f"teams:\n  speech:\n    instances: {{{P3_2X}: 4}}\n")
    stops = record_stop_calls(world)
    two_teams(world)
    assert stops == ["team-b-hpo"]
    [decision] = decisions(world, "team-b-hpo")
    row = decision["numbers"]["instance_types"][P3_2X]
    assert (row["team_limit"], row["team_usage"], row["demand"]) == (4, 0, 6)


@pytest.mark.parametrize(
    ("policy", "job_tags", "expected_action"),
    [
        ("mode: monitor\n", {}, "would-stop"),
        ("mode: enforce\n", {"governance:exempt": "true"}, "exempt"),
    ],
)
def test_monitor_mode_and_exempt_tag_make_no_stop_calls_but_record_would_stop(
    world: World, policy: str, job_tags: dict[str, str], expected_action: str
) -> None:
    world.amt.set_applied_quota(P3_2X, 8)
    use_policy(world, policy)
    stops = record_stop_calls(world)
    launch_two_teams(world, b_tags=job_tags)
    world.run_until_idle()
    assert stops == []
    assert status(world, "team-b-hpo") == "Completed"
    [decision] = decisions(world, "team-b-hpo")
    assert decision["action"] == expected_action
    assert decision["numbers"]["instance_types"][P3_2X]["usage"] == 4


def spent_now(world: World, job: str, at: datetime) -> Decimal:
    """What the governor counts as spent on ``job`` at ``at``: finished trials + accrued by running ones."""
    services = world.env.services
    policy = services.policy()
    meta = services.store.get_job(job) or {}
    facts = job_facts(meta, now=at, policy=policy, catalog=services.price_catalog(policy))
    assert facts.spent_usd is not None
    return facts.spent_usd


def _budget_job(world: World, policy: str, tags: dict[str, str]) -> tuple[list[str], list[tuple[Decimal, list[str]]]]:
    """Run a p3.8xlarge job event by event; return the stop calls and (spent after each trial event, stops so far).

    Spent is what the governor judges at that event: finished trials + what the running ones accrued.
    """
    world.amt.set_applied_quota(P3_8X, 100)
    use_policy(world, policy)
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **seed_tuning_request(
            "p3-budget",
            team="nlp",
            instance_type=P3_8X,
            instance_count=8,
            max_parallel=2,
            max_jobs=50,
            extra_tags=tags,
        )
    )
    timeline: list[tuple[Decimal, list[str]]] = []
    for _ in range(48 * 60):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            outcome = deliver_event(event, world.env.services).outcome
            if outcome.get("outcome") in {"recorded", "progress"} and "trial" in outcome:
                at = datetime.fromisoformat(event["time"].replace("Z", "+00:00"))
                timeline.append((spent_now(world, "p3-budget", at), list(stops)))
        if world.amt.idle():
            break
    return stops, timeline


def test_budget_tag_stops_at_the_first_trial_event_that_reaches_it(world: World) -> None:
    # Spent counts the running trials' accrued cost, so the first event past $50 may be a running trial's.
    # (Stop lead 0: the breach is the budget itself, not the budget less what a stop still bills.)
    stops, timeline = _budget_job(world, ENFORCE + AT_BUDGET, {"governance:budget-usd": "50"})
    crossing = next(i for i, (spent, _) in enumerate(timeline) if spent >= 50)
    # Nothing stopped before the crossing event; the stop came with it
    assert all(not stopped for _, stopped in timeline[:crossing])
    assert timeline[crossing][1] == ["p3-budget"]
    assert stops == ["p3-budget"]
    assert status(world, "p3-budget") == "Stopped"
    recorded = {d["sk"]: d for d in decisions(world, "p3-budget")}
    breach = recorded["DECISION#budget#breach"]
    assert breach["numbers"]["budget_source"] == "tag governance:budget-usd"
    assert Decimal(str(breach["numbers"]["spent_usd"])) == timeline[crossing][0]
    numbers = {k: Decimal(str(v)) for k, v in breach["numbers"].items() if k.startswith("spent_")}
    assert numbers["spent_usd"] == numbers["spent_finished_usd"] + numbers["spent_accrued_usd"]
    # The projection warned once, before the stop
    assert "DECISION#budget#warning" in recorded


def test_budget_in_monitor_mode_only_records_would_stop(world: World) -> None:
    stops, timeline = _budget_job(world, "mode: monitor\n", {"governance:budget-usd": "50"})
    assert stops == []
    assert timeline[-1][0] >= 50
    breach = next(d for d in decisions(world, "p3-budget") if d["sk"] == "DECISION#budget#breach")
    assert breach["action"] == "would-stop"


def test_duplicate_deciding_event_never_stops_or_reports_twice(world: World) -> None:
    world.amt.set_applied_quota(P3_2X, 8)
    use_policy(world, ENFORCE)
    stops = record_stop_calls(world)
    launch_two_teams(world)
    world.amt.advance(1)
    arrival = [e for e in world.amt.drain_events() if e["detail"].get("HyperParameterTuningJobName") == "team-b-hpo"]
    assert arrival
    for _ in range(3):
        deliver_event(arrival[0], world.env.services)
    assert stops == ["team-b-hpo"]
    assert len([m for m in world.env.sns_messages() if "STOPPED" in m["Subject"]]) == 1
    assert len([m for m in world.slack.messages if "STOPPED" in m["text"]]) == 1
