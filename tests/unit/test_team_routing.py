"""Per-team report routing: the policy keys, the pure routing decision, the owner mention in Slack (and
its escaping), the SNS owner attribute, and the loader's warning on team channels the stack does not grant."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tuning_governor.adapters.channels.slack import render_blocks
from tuning_governor.app.wiring import policy_loader
from tuning_governor.domain.reports import Report, decision_report
from tuning_governor.policy import FilePolicySource, Policy, PolicyError, parse_policy
from tuning_governor.policy.routing import ChannelGrants, TeamChannel, routing_warnings, team_channels

TOPIC = "arn:aws:sns:us-east-1:123456789012:tg-team-vision"
GRANTS = ChannelGrants(
    slack_secret_prefix="tuning-governor/teams/", topic_prefix="tg-team-", region="us-east-1", account="123456789012"
)
POLICY = f"""\
teams:
  vision:
    slack_secret: tuning-governor/teams/vision
    sns_topic_arn: {TOPIC}
  nlp:
    job_budget_usd: 100
slack_users:
  alice@example.com: U012AB3CD
  bob: W0BOB1234
"""


def _report(team: str | None = "vision", **overrides: Any) -> Report:
    fields: dict[str, Any] = {
        "rule": "budget",
        "verdict": "breach",
        "job_key": "job-1",
        "job_name": "job-1",
        "team": team,
        "message": "spent $12.00 of a $10.00 budget",
        "numbers": {"spent_usd": "12.00"},
        "at": "2026-11-30T09:00:00+00:00",
        "mode": "enforce",
        "action": "stopped",
        "detail": "stop-requested",
    }
    return decision_report(**(fields | overrides))


def _mrkdwn(report: Report) -> str:
    texts: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                texts.append(str(node["text"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(render_blocks(report))
    return "\n".join(texts)


# -- policy keys --------------------------------------------------------------------------------------
def test_team_channels_and_slack_users_parse_and_default_to_none() -> None:
    policy = parse_policy(POLICY, "test")

    assert policy.teams["vision"].slack_secret == "tuning-governor/teams/vision"
    assert policy.teams["vision"].sns_topic_arn == TOPIC
    assert (policy.teams["nlp"].slack_secret, policy.teams["nlp"].sns_topic_arn) == (None, None)
    assert policy.slack_users == {"alice@example.com": "U012AB3CD", "bob": "W0BOB1234"}
    assert Policy().slack_users == {}
    assert parse_policy("slack_users:\n", "test").slack_users == {}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            'teams: {vision: {slack_secret: "arn:aws:secretsmanager:us-east-1:123456789012:secret:v-AbC123"}}',
            "teams.vision.slack_secret: expected the name of a Secrets Manager secret (1-512 letters, digits and"
            " /_+=.@-, e.g. tuning-governor/teams/vision), not an ARN or a webhook URL, got"
            ' "arn:aws:secretsmanager:us-east-1:123456789012:secret:v-Ab..."',
        ),
        (
            'teams: {vision: {slack_secret: "https://hooks.slack.example/services/T000/B000/XXXX"}}',
            "teams.vision.slack_secret: expected the name of a Secrets Manager secret (1-512 letters, digits and"
            " /_+=.@-, e.g. tuning-governor/teams/vision), not an ARN or a webhook URL, got"
            ' "https://hooks.slack.example/services/T000/B000/XXXX"',
        ),
        ("teams: {vision: {slack_secret: 7}}", "teams.vision.slack_secret: expected a string, got 7"),
        (
            "teams: {vision: {sns_topic_arn: tg-team-vision}}",
            "teams.vision.sns_topic_arn: expected the ARN of a standard SNS topic, arn:aws:sns:<region>:<account id>:"
            '<topic name>, got "tg-team-vision"',
        ),
        (
            'teams: {vision: {sns_topic_arn: "arn:aws:sns:us-east-1:123456789012:tg-team-vision.fifo"}}',
            "teams.vision.sns_topic_arn: expected the ARN of a standard SNS topic, arn:aws:sns:<region>:<account id>:"
            '<topic name>, got "arn:aws:sns:us-east-1:123456789012:tg-team-vision.fifo"',
        ),
        (
            "slack_users: {alice@example.com: alice}",
            'slack_users["alice@example.com"]: expected a Slack member ID: U or W then upper-case letters and'
            ' digits, e.g. U012AB3CD, got "alice"',
        ),
        (
            "slack_users: {bob: u0bob1234}",
            "slack_users.bob: expected a Slack member ID: U or W then upper-case letters and digits, e.g."
            ' U012AB3CD, got "u0bob1234"',
        ),
        ('slack_users: {"": U012AB3CD}', 'slack_users[""]: bad key: expected a non-empty string'),
        ("slack_users: [alice]", "slack_users: expected a mapping, got a list"),
        (
            "teams: {vision: {slack_secrets: x}}",
            'teams.vision.slack_secrets: unknown key; did you mean "slack_secret"? expected one of: channels,'
            " execution_roles, instances, job_budget_usd, max_wait_minutes, monthly_budget_usd, queue_priority, share, slack_secret,"
            " sns_topic_arn, submitters",
        ),
    ],
)
def test_a_bad_routing_key_is_reported_at_its_path(text: str, problem: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "ssm:/governor/policy")

    assert caught.value.problems == (problem,)


@pytest.mark.parametrize(
    ("owner", "member"),
    [
        ("alice@example.com", "U012AB3CD"),
        (" Alice@Example.com ", "U012AB3CD"),  # tag values are typed by people: case and spaces ignored
        ("bob", "W0BOB1234"),
        ("U0CAROL12", "U0CAROL12"),  # the tag value is itself a member ID
        ("carol@example.com", None),  # unknown: named, never pinged
        ("<!channel>", None),
        ("", None),
        (None, None),
    ],
)
def test_slack_member_of_an_owner(owner: str | None, member: str | None) -> None:
    assert parse_policy(POLICY, "test").slack_member(owner) == member


# -- the routing decision -----------------------------------------------------------------------------
def test_a_team_report_goes_to_the_teams_slack_and_topic() -> None:
    channels = team_channels(_report("vision"), parse_policy(POLICY, "test"), GRANTS)

    assert channels == [
        TeamChannel("slack:team:vision", "slack", "vision", "tuning-governor/teams/vision"),
        TeamChannel("sns:team:vision", "sns", "vision", TOPIC),
    ]


@pytest.mark.parametrize("team", [None, "nlp", "unlisted"])
def test_reports_of_other_teams_go_to_the_default_channels_only(team: str | None) -> None:
    assert team_channels(_report(team), parse_policy(POLICY, "test"), GRANTS) == []


@pytest.mark.parametrize(
    ("grants", "kept"),
    [
        (ChannelGrants(), []),  # the stack grants no team channel at all
        (ChannelGrants(slack_secret_prefix="other/", topic_prefix="tg-team-", region="us-east-1"), ["sns"]),
        (ChannelGrants(slack_secret_prefix="tuning-governor/", topic_prefix="ml-", region="us-east-1"), ["slack"]),
        (ChannelGrants(slack_secret_prefix="tuning-governor/", topic_prefix="tg-", region="eu-west-1"), ["slack"]),
        (
            ChannelGrants(
                slack_secret_prefix="tuning-governor/", topic_prefix="tg-", region="us-east-1", account="1" * 12
            ),
            ["slack"],
        ),
        # an unknown account is not held against the topic (IAM still is)
        (
            ChannelGrants(slack_secret_prefix="tuning-governor/", topic_prefix="tg-", region="us-east-1"),
            ["slack", "sns"],
        ),
    ],
)
def test_a_team_channel_outside_the_stacks_grants_is_not_used(grants: ChannelGrants, kept: list[str]) -> None:
    channels = team_channels(_report("vision"), parse_policy(POLICY, "test"), grants)

    assert [c.kind for c in channels] == kept


@pytest.mark.parametrize(("secret_prefix", "topic_prefix"), [("t", "t"), ("tuning-governor/teams", "tg-team")])
def test_a_prefix_without_its_delimiter_grants_no_team_channel(secret_prefix: str, topic_prefix: str) -> None:
    # Given a stack deployed (before the template refused it) with prefixes that end mid-name
    grants = ChannelGrants(slack_secret_prefix=secret_prefix, topic_prefix=topic_prefix, region="us-east-1")
    policy = parse_policy(POLICY, "test")
    # When a vision report is routed
    channels = team_channels(_report("vision"), policy, grants)
    # Then no team channel is used, and the warnings say why
    assert channels == []
    problems = dict(routing_warnings(policy, grants))
    assert f'SlackSecretPrefix "{secret_prefix}" does not end in "/"' in problems["teams.vision.slack_secret"]
    assert f'TeamTopicPrefix "{topic_prefix}" does not end in "-" or "_"' in problems["teams.vision.sns_topic_arn"]


def test_routing_warnings_name_each_ungranted_channel_by_its_path() -> None:
    grants = ChannelGrants(slack_secret_prefix="other/", topic_prefix="tg-team-", region="eu-west-1")

    assert routing_warnings(parse_policy(POLICY, "test"), grants) == [
        (
            "teams.vision.slack_secret",
            'secret "tuning-governor/teams/vision" is not under the stack\'s SlackSecretPrefix "other/": not used:'
            " the team's reports go to the default channels only",
        ),
        (
            "teams.vision.sns_topic_arn",
            f"topic {TOPIC} is in us-east-1, not the stack's region eu-west-1: not used: the team's reports go to"
            " the default channels only",
        ),
    ]
    assert routing_warnings(parse_policy(POLICY, "test"), GRANTS) == []


def test_the_policy_loader_logs_ungranted_team_channels_once_per_policy_text(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a policy naming a team secret outside the stack's prefix
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    current = policy_loader(FilePolicySource(path, max_age_seconds=0), ChannelGrants(slack_secret_prefix="other/"))
    # When events load it three times, the text changing once
    with caplog.at_level(logging.WARNING):
        current()
        current()
        path.write_text(POLICY + "mode: enforce\n")
        current()
    # Then each text's ungranted channels are logged once, by path
    logged = [r for r in caplog.records if r.getMessage() == "policy names team channels the stack does not grant"]
    assert len(logged) == 2
    warnings = logged[0].__dict__["warnings"]
    assert [w.split(":", 1)[0] for w in warnings] == ["teams.vision.slack_secret", "teams.vision.sns_topic_arn"]


# -- owner: mentioned in Slack, escaped otherwise, an SNS attribute ------------------------------------
def test_a_known_owner_is_mentioned_in_slack_and_is_an_sns_attribute() -> None:
    report = _report(owner="alice@example.com", handles={"slack": "U012AB3CD"})

    assert "*Owner*\n<@U012AB3CD>" in _mrkdwn(report)
    assert report.attributes["owner"] == "alice@example.com"
    assert "Owner: alice@example.com" in report.text
    assert (report.team, report.owner) == ("vision", "alice@example.com")


def test_an_unmapped_owner_is_named_escaped_never_pinged() -> None:
    report = _report(owner="<!channel> & <https://evil.example|click>")

    texts = _mrkdwn(report)
    assert "*Owner*\n&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;" in texts
    assert "<@" not in texts and "<!channel>" not in json.dumps(render_blocks(report))
    # SNS and email show the value as given (they do not read mrkdwn)
    assert report.attributes["owner"] == "<!channel> & <https://evil.example|click>"


def test_only_a_member_id_is_ever_mentioned() -> None:
    report = _report(owner="mallory", handles={"slack": "<!here>"})

    assert "*Owner*\nmallory" in _mrkdwn(report)
    assert "<!here>" not in json.dumps(render_blocks(report))


def test_without_an_owner_there_is_no_owner_attribute() -> None:
    report = _report(owner="   ")

    assert "owner" not in report.attributes
    assert "*Owner*\n-" in _mrkdwn(report)
    assert report.owner is None


# -- Slack blocks through slack_sdk, imported only when a report is built -----------------------------
LAZY = """
import json, sys
from tuning_governor.domain import reports
from tuning_governor.adapters.channels import slack
report = reports.decision_report(rule="r", verdict="breach", job_key="j", job_name="j", team=None, message="m",
                                 numbers={}, at="t", mode="monitor", action="would-stop", detail="d")
before = sorted(m for m in sys.modules if m.startswith("slack_sdk"))
slack.render_blocks(report)
print(json.dumps({"before": before, "after": "slack_sdk.models.blocks" in sys.modules}))
"""


def test_slack_sdk_is_imported_only_when_a_report_is_drawn_for_slack() -> None:
    result = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
        [sys.executable, "-c", LAZY], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == {"before": [], "after": True}


def test_a_headline_longer_than_slack_allows_is_cut_to_150_characters() -> None:
    report = _report(job_name="j" * 200)

    assert len(render_blocks(report)[0]["text"]["text"]) == 150
