"""Microsoft Teams as a report channel: an Adaptive Card posted to a Teams webhook whose URL is a
Secrets Manager secret, once per channel like every other channel.

The webhook is a local server on 127.0.0.1 (``SlackWebhookServer`` records any JSON body posted to it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest

from governor_client.memory import MemoryStore
from governor_client.offline.slack_server import SlackWebhookServer
from tuning_governor.adapters.channels import ChannelClients, ChannelNotifiers
from tuning_governor.adapters.channels.msteams import CARD_CONTENT_TYPE, escape_markdown, render_card
from tuning_governor.app.services import Services
from tuning_governor.app.wiring import _default_notifiers
from tuning_governor.domain.channels import CHANNEL_KINDS
from tuning_governor.domain.reports import Report, decision_report
from tuning_governor.governance.reporting import deliver
from tuning_governor.policy import PolicyError, parse_policy
from tuning_governor.policy.routing import ChannelGrants, routing_warnings, team_channels
from tuning_governor.settings import Settings

pytestmark = pytest.mark.usefixtures("mocked_aws")

PREFIX = "tuning-governor/teams/"
POLICY = f"""
mode: enforce
teams:
  vision:
    channels: {{msteams: {PREFIX}vision-teams}}
"""
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _report(**overrides: object) -> Report:
    fields: dict[str, object] = {
        "rule": "budget",
        "verdict": "breach",
        "job_key": "vision-hpo",
        "job_name": "vision-hpo",
        "team": "vision",
        "message": "spent $12.00 of a $10.00 budget",
        "numbers": {"spent_usd": "12.00", "limit_usd": "10.00"},
        "at": NOW.isoformat(),
        "mode": "enforce",
        "action": "stopped",
        "detail": "stop-requested",
        "owner": "alice@example.com",
    }
    return decision_report(**(fields | overrides))  # type: ignore[arg-type]


@pytest.fixture
def teams_webhook() -> Iterator[SlackWebhookServer]:
    with SlackWebhookServer() as server:
        yield server


def _clients() -> ChannelClients:
    return ChannelClients(
        sns_client=lambda: boto3.client("sns", region_name="us-east-1"),
        secrets_client=lambda: boto3.client("secretsmanager", region_name="us-east-1"),
    )


def _secret(name: str, url: str) -> str:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    return str(client.create_secret(Name=name, SecretString=json.dumps({"webhook_url": url}))["ARN"])


def test_a_decision_is_an_adaptive_card_with_its_facts_and_escaped_free_text() -> None:
    card = render_card(_report(message="see [here](https://evil.example) *now*", owner="<at>bob</at>"))

    assert card["type"] == "AdaptiveCard"
    assert card["version"] == "1.4"
    texts = [block["text"] for block in card["body"] if block["type"] == "TextBlock"]
    assert texts[0] == escape_markdown("STOPPED vision-hpo")
    # the rule emphasised by the card's own markup; the message's markup shown, never a link
    assert texts[1] == r"**budget** (breach): see \[here\]\(https://evil\.example\) \*now\*"
    facts = next(block["facts"] for block in card["body"] if block["type"] == "FactSet")
    assert {fact["title"]: fact["value"] for fact in facts}["Owner"] == r"\<at\>bob\</at\>"
    assert [fact["title"] for fact in facts] == ["Mode", "Action", "Team", "Owner", "Decided at"]
    assert "spent\\_usd: 12\\.00" in texts[-1]


def test_a_team_channel_named_in_the_policy_is_routed_under_the_granted_prefix() -> None:
    policy = parse_policy(POLICY, "test")

    channels = team_channels(_report(), policy, ChannelGrants(slack_secret_prefix=PREFIX))
    assert [(c.channel, c.kind, c.target) for c in channels] == [
        ("msteams:team:vision", "msteams", f"{PREFIX}vision-teams")
    ]
    assert team_channels(_report(), policy, ChannelGrants()) == []
    assert [path for path, _ in routing_warnings(policy, ChannelGrants())] == ["teams.vision.channels.msteams"]


@pytest.mark.parametrize(
    ("channels", "problem"),
    [
        # Every registered kind, in registration order (another channel's registration lengthens the list).
        ("{pager: x}", f"teams.vision.channels: unknown channel kind pager; the kinds are {', '.join(CHANNEL_KINDS)}"),
        (
            "{msteams: 'https://example.invalid/webhook'}",
            "teams.vision.channels: expected the name of a Secrets Manager secret",
        ),
        ("{sns: not-an-arn}", "teams.vision.channels: expected the ARN of a standard SNS topic"),
    ],
)
def test_a_bad_channel_is_refused_at_its_path(channels: str, problem: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(f"teams: {{vision: {{channels: {channels}}}}}", "test")

    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].startswith(problem)


def test_a_team_report_reaches_its_teams_channel_once_however_often_it_is_delivered(
    teams_webhook: SlackWebhookServer,
) -> None:
    # Given the team's Teams webhook in a secret under the stack's prefix
    _secret(f"{PREFIX}vision-teams", teams_webhook.url)
    policy = parse_policy(POLICY, "test")
    store = MemoryStore()
    teams = ChannelNotifiers(_clients())
    report = _report()
    grants = ChannelGrants(slack_secret_prefix=PREFIX)
    notifiers = [teams.notifier(c.kind, c.target, c.channel) for c in team_channels(report, policy, grants)]

    # When the same decision's report is delivered twice (a redelivered event)
    first = deliver(report, store, notifiers, lambda: NOW)
    second = deliver(report, store, notifiers, lambda: NOW)

    # Then one card was posted, and the second delivery found it sent
    assert (first, second) == ({"msteams:team:vision": "sent"}, {"msteams:team:vision": "already-sent"})
    assert len(teams_webhook.messages) == 1
    posted = teams_webhook.messages[0]
    assert posted["type"] == "message"
    assert posted["attachments"][0]["contentType"] == CARD_CONTENT_TYPE
    assert posted["attachments"][0]["content"]["body"][0]["text"] == escape_markdown("STOPPED vision-hpo")


def test_a_refused_post_is_given_back_and_sent_once_on_the_next_delivery_without_the_url_in_logs(
    teams_webhook: SlackWebhookServer, caplog: pytest.LogCaptureFixture
) -> None:
    arn = _secret("tuning-governor/teams-default", teams_webhook.url)
    settings = Settings.model_validate(
        {"TABLE_NAME": "t-table", "AWS_REGION": "us-east-1", "CHANNEL_SECRETS": json.dumps({"msteams": arn})}
    )
    # The stack's own Teams channel, from the template's CHANNEL_SECRETS
    notifiers = _default_notifiers(settings, _clients())
    assert [n.channel for n in notifiers] == ["msteams"]
    store = MemoryStore()
    teams_webhook.fail_next(500)

    with caplog.at_level(logging.DEBUG):
        failed = deliver(_report(), store, notifiers, lambda: NOW)
    again = deliver(_report(), store, notifiers, lambda: NOW)

    assert (failed, again) == ({"msteams": "failed"}, {"msteams": "sent"})
    assert len(teams_webhook.messages) == 1
    assert teams_webhook.url not in caplog.text
    assert teams_webhook.url.split("://", 1)[1] not in caplog.text


def test_services_route_a_team_report_to_the_defaults_then_the_teams_channel(teams_webhook: SlackWebhookServer) -> None:
    _secret(f"{PREFIX}vision-teams", teams_webhook.url)
    settings = Settings.model_validate(
        {"TABLE_NAME": "t-table", "AWS_REGION": "us-east-1", "SLACK_SECRET_PREFIX": PREFIX}
    )
    services = Services(
        settings=settings,
        sagemaker=None,  # type: ignore[arg-type]
        store=MemoryStore(),
        team_notifiers=ChannelNotifiers(_clients()),
        grants=ChannelGrants(slack_secret_prefix=PREFIX),
    )

    channels = services.notifiers_for(_report(), parse_policy(POLICY, "test"))

    assert [n.channel for n in channels] == ["msteams:team:vision"]
