"""Per-team routing on moto: a team's reports also reach its own Slack webhook (read from its secret,
owner mentioned) and its own SNS topic, each exactly once through failures and redelivery; other
teams' reports reach the default channels only."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import build_environment, subscribe_queue
from governor_client.offline.slack_server import SlackWebhookServer
from governor_client.simulator.runner import deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import T0, World
from tests.integration.test_exactly_once import run_redelivering, sweep_later
from tests.integration.test_governance import record_stop_calls, use_policy
from tests.integration.test_secret_hygiene import _assert_nowhere, _Everything, _table_text, debug_logs

__all__ = ["debug_logs"]  # a fixture, used by name

SECRET_PREFIX = "tuning-governor/teams/"
TOPIC_PREFIX = "tg-team-"
VISION_SECRET = f"{SECRET_PREFIX}vision"


@dataclass
class TeamWorld:
    world: World
    team_slack: SlackWebhookServer
    team_topic_arn: str
    team_queue_url: str

    def team_sns(self) -> list[dict[str, Any]]:
        """Every SNS envelope the team topic delivered (drained from its queue)."""
        sqs = self.world.env.sqs
        out: list[dict[str, Any]] = []
        while batch := sqs.receive_message(QueueUrl=self.team_queue_url, MaxNumberOfMessages=10).get("Messages", []):
            for message in batch:
                out.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=self.team_queue_url, ReceiptHandle=message["ReceiptHandle"])
        return out


@pytest.fixture
def teams(mocked_aws: None, slack: SlackWebhookServer) -> Iterator[TeamWorld]:
    """The offline stack deployed with SlackSecretPrefix and TeamTopicPrefix; team vision's own webhook
    (a second local server) in its secret under the prefix, and its own topic with a queue subscribed."""
    clock = VirtualClock(T0)
    with SlackWebhookServer() as team_slack, AmtStandIn(clock=clock, seed=7) as amt:
        env = build_environment(
            slack_url=slack.url, clock=clock.now, slack_secret_prefix=SECRET_PREFIX, team_topic_prefix=TOPIC_PREFIX
        )
        env.secrets.create_secret(Name=VISION_SECRET, SecretString=json.dumps({"webhook_url": team_slack.url}))
        sns = boto3.client("sns", region_name=env.region)
        topic_arn = sns.create_topic(Name=f"{TOPIC_PREFIX}vision")["TopicArn"]
        queue_url = subscribe_queue(sns, env.sqs, topic_arn, "vision-inbox")
        yield TeamWorld(World(amt=amt, env=env, slack=slack, deliveries=[]), team_slack, topic_arn, queue_url)


def _policy(team_world: TeamWorld, secret: str = VISION_SECRET) -> str:
    return f"""\
mode: enforce
defaults: {{job_budget_usd: 0.05}}
teams:
  vision: {{slack_secret: {secret}, sns_topic_arn: "{team_world.team_topic_arn}"}}
slack_users: {{alice@example.com: U012AB3CD}}
"""


def _decision(job: str) -> str:
    return f"STOPPED {job}: budget"


def _slack(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    return [m for m in messages if text in str(m.get("text", ""))]


def _sns(envelopes: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    return [e for e in envelopes if text in str(e["Subject"])]


def _delivery_rows(team_world: TeamWorld, job: str) -> dict[str, str]:
    items = team_world.world.env.services.store.items(job)
    return {
        str(i["sk"]).removeprefix("DELIVERY#"): str(i["state"]) for i in items if str(i["sk"]).startswith("DELIVERY#")
    }


def test_a_teams_decision_reaches_every_channel_once_through_a_failed_team_webhook(teams: TeamWorld) -> None:
    world = teams.world
    # Given team vision with its own Slack secret and topic, its owner mapped to a Slack member, and a
    # budget both jobs exceed; and team vision's webhook failing (HTTP 500 past the client's own retries)
    use_policy(world, _policy(teams))
    stops = record_stop_calls(world)
    teams.team_slack.fail_next(500, 500, 500)
    sm = world.env.sagemaker
    sm.create_hyper_parameter_tuning_job(
        **seed_tuning_request("vision-hb", team="vision", owner="alice@example.com", max_jobs=4, max_parallel=2)
    )
    sm.create_hyper_parameter_tuning_job(
        **seed_tuning_request("nlp-hb", team="nlp", owner="bob@example.com", max_jobs=4, max_parallel=2)
    )
    # When the jobs run, and the sweep runs a sweep interval later
    failed = run_redelivering(world)
    sweep_later(world)
    # Then the team webhook's failure failed no event (issue 18): the sweep's delivery step re-sent it
    assert teams.team_slack.failed == [500, 500, 500]
    assert failed == []
    assert sorted(stops) == ["nlp-hb", "vision-hb"]
    default_sns, team_sns = world.env.sns_messages(), teams.team_sns()
    # And vision's decision is out exactly once on each of its four channels, the owner mentioned in Slack
    vision = _decision("vision-hb")
    assert len(_sns(default_sns, vision)) == len(_sns(team_sns, vision)) == 1
    [default_post] = _slack(world.slack.messages, vision)
    [team_post] = _slack(teams.team_slack.messages, vision)
    for post in (default_post, team_post):
        assert "*Owner*\\n<@U012AB3CD>" in json.dumps(post["blocks"])
    [team_envelope] = _sns(team_sns, vision)
    assert team_envelope["MessageAttributes"]["owner"] == {"Type": "String", "Value": "alice@example.com"}
    assert team_envelope["MessageAttributes"]["team"]["Value"] == "vision"
    rows = _delivery_rows(teams, "vision-hb")
    assert {k: v for k, v in rows.items() if k.startswith("decision-budget-breach#")} == {
        "decision-budget-breach#sns": "sent",
        "decision-budget-breach#slack": "sent",
        "decision-budget-breach#slack:team:vision": "sent",
        "decision-budget-breach#sns:team:vision": "sent",
    }
    [row] = [d for d in world.env.services.store.decisions("vision-hb") if d["rule"] == "budget"]
    assert (row["state"], row["action"]) == ("done", "stopped")
    # And vision's job summary went to its team channels too
    assert len(_slack(teams.team_slack.messages, "[tuning-governor] vision-hb stopped")) == 1
    assert len(_sns(team_sns, "vision-hb stopped")) == 1
    # And nlp's decision went to the default channels only, its unmapped owner named, not pinged
    nlp = _decision("nlp-hb")
    assert len(_sns(default_sns, nlp)) == 1
    [nlp_post] = _slack(world.slack.messages, nlp)
    assert "*Owner*\\nbob@example.com" in json.dumps(nlp_post["blocks"]) and "<@" not in json.dumps(nlp_post)
    assert not [m for m in teams.team_slack.messages if "nlp-hb" in json.dumps(m)]
    assert not [e for e in team_sns if "nlp-hb" in e["Subject"]]
    assert not [k for k in _delivery_rows(teams, "nlp-hb") if ":team:" in k]


def test_a_missing_team_secret_fails_its_channel_only_and_keeps_the_decision_pending(teams: TeamWorld) -> None:
    world = teams.world
    # Given team vision's policy naming a secret under the prefix that does not exist
    use_policy(world, _policy(teams, secret=f"{SECRET_PREFIX}missing"))
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **seed_tuning_request("vision-hb", team="vision", owner="alice@example.com", max_jobs=4, max_parallel=2)
    )
    # When the job runs until its decision's report is attempted
    errors: list[dict[str, Any]] = []
    for _ in range(24 * 60):
        world.amt.advance(60)
        errors += [
            o
            for e in world.amt.drain_events()
            if (o := deliver_event(e, world.env.services).outcome)["outcome"] == "error"
        ]
        if any(d["rule"] == "budget" for d in world.env.services.store.decisions("vision-hb")):
            break
    # Then no event fails for it (issue 18: a report is its own step; the sweep retries it)
    assert errors == []
    # And the other channels, default and team topic, still have the report; the decision stays pending
    vision = _decision("vision-hb")
    assert len(_slack(world.slack.messages, vision)) == 1
    assert len(_sns(world.env.sns_messages(), vision)) == 1
    assert len(_sns(teams.team_sns(), vision)) == 1
    [row] = [d for d in world.env.services.store.decisions("vision-hb") if d["rule"] == "budget"]
    assert row["state"] == "pending"
    assert _delivery_rows(teams, "vision-hb").get("decision-budget-breach#slack:team:vision") is None


def test_a_team_secret_outside_the_prefix_is_not_used(teams: TeamWorld) -> None:
    world = teams.world
    # Given team vision's secret created outside the stack's SlackSecretPrefix
    world.env.secrets.create_secret(Name="elsewhere/vision", SecretString=teams.team_slack.url)
    use_policy(world, _policy(teams, secret="elsewhere/vision"))
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **seed_tuning_request("vision-hb", team="vision", owner="alice@example.com", max_jobs=4, max_parallel=2)
    )
    # When the job runs
    assert run_redelivering(world) == []
    # Then nothing is posted to that webhook; the default channels and the team topic have the report
    vision = _decision("vision-hb")
    assert teams.team_slack.requests == 0
    assert len(_slack(world.slack.messages, vision)) == 1
    assert len(_sns(teams.team_sns(), vision)) == 1


def test_a_team_webhook_url_is_never_logged_or_stored(
    teams: TeamWorld, debug_logs: _Everything, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    world = teams.world
    # Given team vision's own webhook, failing past the client's retries once, everything logged at DEBUG
    use_policy(world, _policy(teams))
    teams.team_slack.fail_next(500, 500, 500)
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **seed_tuning_request("vision-hb", team="vision", owner="alice@example.com", max_jobs=4, max_parallel=2)
    )
    # When the job runs, and the sweep runs a sweep interval later (its delivery step re-sends)
    assert run_redelivering(world) == []
    sweep_later(world)
    # Then the team webhook was used, and its URL, path and token are in no log line, output or item
    assert teams.team_slack.messages
    captured = capsys.readouterr()
    records = "\n".join(f"{r.name} {r.getMessage()} {r.__dict__!r}" for r in caplog.records)
    texts = ("\n".join(debug_logs.lines), records, captured.out, captured.err, _table_text(world))
    _assert_nowhere(teams.team_slack.url, *texts)
