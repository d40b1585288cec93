"""Tags as they are now (issue 17, mechanism 8): a notice's advice — tag the job governance:exempt=true,
or raise its budget tag — takes effect while the job runs, through the tag-change event (CloudTrail's
AddTags/DeleteTags, re-read with ListTags) or, when that event is lost, the sweep's re-read.
Through the real handlers on the AMT stand-in, enforce mode, with the one-time checks."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from governor_client.simulator.runner import deliver_event
from tests.integration.conftest import T0, World
from tests.integration.test_accrued_budgets import count_calls, deliver, run_sweep
from tests.integration.test_governance import decisions, record_stop_calls, use_policy
from tests.integration.test_grace_period import budget_job, notice_of, run_until
from tuning_governor.adapters.checks import PendingChecks

GRACED = "mode: enforce\ndefaults: {grace_minutes: {budget: 30}}\n"


pytestmark = pytest.mark.usefixtures("roomy_quota")


def noticed_job(world: World, name: str) -> tuple[PendingChecks, datetime, list[str]]:
    """A $50-budget job past its budget, under a 30-minute grace notice; (checks, stop time, Stop calls)."""
    use_policy(world, GRACED)
    stops = record_stop_calls(world)
    checks = PendingChecks()
    world.env.services.checks = checks
    budget_job(world, name, owner="alice")
    run_until(world, checks, T0 + timedelta(minutes=10))
    notice = notice_of(world, name)
    return checks, datetime.fromisoformat(str(notice["numbers"]["stop_at"])), stops


def arn_of(world: World, name: str) -> str:
    return str(
        world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)[
            "HyperParameterTuningJobArn"
        ]
    )


def tag(world: World, name: str, **tags: str) -> None:
    world.env.sagemaker.add_tags(
        ResourceArn=arn_of(world, name), Tags=[{"Key": k, "Value": v} for k, v in tags.items()]
    )


@pytest.mark.parametrize(
    ("tags", "budget_source"),
    [({"governance:exempt": "true"}, "tag"), ({"governance:budget-usd": "5000"}, "tag")],
    ids=["exempt", "raised-budget"],
)
def test_a_notice_then_the_owner_tags_the_job_as_advised_and_it_is_not_stopped(
    world: World, tags: dict[str, str], budget_source: str
) -> None:
    # Given a job under a budget grace notice
    checks, stop_at, stops = noticed_job(world, "advised")
    # When its owner follows the notice's advice (AddTags; CloudTrail's event reaches the governor)
    world.amt.advance(60)
    tag(world, "advised", **tags)
    # Then the job's item holds its tags as they are now, at once
    run_until(world, checks, world.amt.clock.now() + timedelta(minutes=1))
    item = world.env.services.store.get_job("advised") or {}
    assert item["tags"] | tags == item["tags"]
    # and neither the check at the notice's time nor the sweeps after it stop the job
    run_until(world, checks, stop_at + timedelta(minutes=5))
    run_sweep(world)
    assert stops == []
    verdicts = {(d["rule"], d["verdict"], d.get("action")) for d in decisions(world, "advised")}
    assert ("budget", "breach", "stopped") not in verdicts


def test_when_the_tag_event_is_lost_the_sweep_rereads_the_tags_of_a_noticed_job(world: World) -> None:
    # Given a job under a budget grace notice
    checks, stop_at, stops = noticed_job(world, "lost-event")
    # When its owner tags it exempt but the tag event never arrives (no trail, or lost)
    tag(world, "lost-event", **{"governance:exempt": "true"})
    lost = [e for e in world.amt.drain_events() if e["detail-type"] == "AWS API Call via CloudTrail"]
    assert len(lost) == 1
    # Then the next sweep re-reads its tags (one ListTags) before judging it, and it is never stopped
    list_tags = count_calls(world, "ListTags")
    report = run_sweep(world)
    assert report["tags_reread"] == ["lost-event"]
    assert len(list_tags) == 1
    assert (world.env.services.store.get_job("lost-event") or {})["tags"]["governance:exempt"] == "true"
    run_until(world, checks, stop_at + timedelta(minutes=5))
    run_sweep(world)
    assert stops == []


def test_the_sweep_rereads_no_tags_of_jobs_without_a_notice_or_pending_check(world: World) -> None:
    use_policy(world, "mode: enforce\n")
    budget_job(world, "quiet", **{"governance:budget-usd": "100000"})
    world.amt.advance(60)
    for event in world.amt.drain_events():
        deliver(world, event)
    assert run_sweep(world)["tags_reread"] == []


def test_tag_events_of_other_resources_unknown_jobs_and_failed_calls_are_ignored(world: World) -> None:
    base = {
        "version": "0",
        "id": "e-1",
        "account": "123456789012",
        "time": "2026-11-30T09:00:00Z",
        "region": "us-east-1",
        "resources": [],
    }
    call = base | {"source": "aws.sagemaker", "detail-type": "AWS API Call via CloudTrail"}

    def detail(arn: str, **more: Any) -> dict[str, Any]:
        return {
            "eventSource": "sagemaker.amazonaws.com",
            "eventName": "AddTags",
            "requestParameters": {"resourceArn": arn, "tags": []},
        } | more

    training = "arn:aws:sagemaker:us-east-1:123456789012:training-job/some-trial"
    unknown = "arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/never-seen"
    outcomes = [
        deliver_event(call | {"detail": detail(training)}, world.env.services).outcome,
        deliver_event(call | {"detail": detail(unknown)}, world.env.services).outcome,
        deliver_event(call | {"detail": detail(unknown, errorCode="AccessDenied")}, world.env.services).outcome,
        deliver_event(
            base
            | {
                "source": "aws.tag",
                "detail-type": "Tag Change on Resource",
                "resources": [unknown],
                "detail": {
                    "service": "sagemaker",
                    "resource-type": "hyper-parameter-tuning-job",
                    "changed-tag-keys": ["a"],
                    "tags": {"a": "b"},
                    "version": 2,
                },
            },
            world.env.services,
        ).outcome,
    ]
    assert [o["outcome"] for o in outcomes] == ["ignored"] * 4
    assert "training-job" in outcomes[0]["reason"]


@pytest.mark.parametrize(
    ("detail", "problem"),
    [
        ({"eventSource": "sagemaker.amazonaws.com", "eventName": "AddTags", "requestParameters": {}}, "ARN"),
        (
            {
                "eventSource": "sagemaker.amazonaws.com",
                "eventName": "AddTags",
                "requestParameters": {"resourceArn": "not-an-arn"},
            },
            "ARN",
        ),
        ({"eventSource": "sagemaker.amazonaws.com", "eventName": "AddTags"}, "requestParameters"),
        (
            {"eventSource": "sagemaker.amazonaws.com", "eventName": "CreateTrainingJob", "requestParameters": {}},
            "eventName",
        ),
    ],
)
def test_malformed_tag_events_are_rejected_with_a_reason(world: World, detail: dict[str, Any], problem: str) -> None:
    event = {
        "version": "0",
        "id": "e-2",
        "account": "123456789012",
        "time": "2026-11-30T09:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "source": "aws.sagemaker",
        "detail-type": "AWS API Call via CloudTrail",
        "detail": detail,
    }
    outcome = deliver_event(event, world.env.services).outcome
    assert outcome["outcome"] == "rejected"
    assert problem in outcome["reason"]


def test_a_tag_event_claiming_an_exemption_the_job_does_not_have_exempts_nothing(world: World) -> None:
    # Given a job under a budget grace notice
    checks, stop_at, stops = noticed_job(world, "forged")
    # When a Tag Change on Resource event says it is exempt, but SageMaker's tags say otherwise
    forged = {
        "version": "0", "id": "forged-1", "account": "123456789012", "time": "2026-11-30T09:11:00Z",
        "region": "us-east-1", "source": "aws.tag", "detail-type": "Tag Change on Resource",
        "resources": [arn_of(world, "forged")],
        "detail": {"service": "sagemaker", "resource-type": "hyper-parameter-tuning-job",
                   "changed-tag-keys": ["governance:exempt"], "tags": {"governance:exempt": "true"}, "version": 5},
    }  # fmt: skip
    outcome = deliver(world, forged)
    # Then the job is judged on the tags ListTags gives: not exempt, and stopped at the notice's time
    assert outcome["outcome"] == "retagged"
    assert "governance:exempt" not in outcome["tags"]
    assert "governance:exempt" not in (world.env.services.store.get_job("forged") or {})["tags"]
    run_until(world, checks, stop_at + timedelta(minutes=2))
    assert stops == ["forged"]


def test_deleting_a_low_budget_tag_lets_the_policys_budget_apply_at_once(world: World) -> None:
    # Given a job whose own $50 budget tag has put it under a notice, and a $5,000 default budget
    use_policy(world, "mode: enforce\ndefaults: {job_budget_usd: 5000, grace_minutes: {budget: 30}}\n")
    stops = record_stop_calls(world)
    checks = PendingChecks()
    world.env.services.checks = checks
    budget_job(world, "untagged", owner="alice")
    run_until(world, checks, T0 + timedelta(minutes=10))
    stop_at = datetime.fromisoformat(str(notice_of(world, "untagged")["numbers"]["stop_at"]))
    # When the tag is deleted (DeleteTags; CloudTrail's event reaches the governor)
    world.env.sagemaker.delete_tags(ResourceArn=arn_of(world, "untagged"), TagKeys=["governance:budget-usd"])
    run_until(world, checks, stop_at + timedelta(minutes=5))
    # Then the default budget applies and the job is not stopped
    assert "governance:budget-usd" not in (world.env.services.store.get_job("untagged") or {})["tags"]
    assert stops == []
