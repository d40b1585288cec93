"""Where a report goes: the default channels always, and its team's own channels too when the policy
names them and the stack grants them. Pure: the report, the policy and the stack's grants in, channels out.

Channel names key the delivery rows (``DELIVERY#<kind>#<channel>``), so each is sent at most once and
a retry resumes where it stopped: the kind (``sns``, ``slack``, ``msteams``...) for the stack's own,
``<kind>:team:<team>`` for a team's (``teams.<team>.channels.<kind>``, or the older keys
``teams.<team>.slack_secret`` / ``teams.<team>.sns_topic_arn``). The kinds, and whether each is named
by a secret or a topic, are registered in ``tuning_governor.domain.channels``.

The stack grants ``secretsmanager:GetSecretValue`` only on secrets named under ``SlackSecretPrefix``
(every webhook channel's team secrets live there)
and ``sns:Publish`` only on topics of its own account and region named under ``TeamTopicPrefix`` (an
empty prefix grants nothing). A prefix must end in its delimiter (``/`` for secrets, ``-`` or ``_`` for
topics; the template refuses any other): a prefix that ends mid-name (``t``) would cover every name
that merely starts alike, so one deployed before the template said so grants no team channel here. A team channel outside those grants is not used (its call would be
denied): ``routing_warnings`` says so, and the policy loader logs it once per policy text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuning_governor.domain.channels import CHANNEL_KINDS
from tuning_governor.domain.reports import Report
from tuning_governor.policy.errors import render_path
from tuning_governor.policy.fields import TOPIC_ARN
from tuning_governor.policy.model import Policy, TeamPolicy

DEFAULT_CHANNELS = ("sns", "slack")
# The template's AllowedPatterns for SlackSecretPrefix and TeamTopicPrefix (tests/template holds them equal).
SECRET_PREFIX = re.compile(r"^[A-Za-z0-9/_+=.@-]{0,254}[A-Za-z0-9_+=.@-]/$")
TOPIC_PREFIX = re.compile(r"^[A-Za-z0-9_-]{0,198}[A-Za-z0-9][_-]$")
_NOT_USED = "not used: the team's reports go to the default channels only"


@dataclass(frozen=True)
class ChannelGrants:
    """What the stack lets its functions reach for teams' own channels (template parameters
    ``SlackSecretPrefix`` and ``TeamTopicPrefix``; empty = none), and where it runs. An empty
    ``account`` is not checked (unknown)."""

    slack_secret_prefix: str = ""
    topic_prefix: str = ""
    region: str = ""
    account: str = ""


@dataclass(frozen=True)
class TeamChannel:
    """One of a team's own channels: its delivery channel name and what it sends to."""

    channel: str
    kind: str
    """A kind registered in ``tuning_governor.domain.channels``."""
    team: str
    target: str
    """The Secrets Manager secret name (webhook channels) or the topic ARN (SNS)."""


def secret_problem(name: str, grants: ChannelGrants) -> str | None:
    """Why the stack may not read the team Slack secret ``name`` (None: it may)."""
    prefix = grants.slack_secret_prefix
    if not prefix:
        return f'secret "{name}" is {_NOT_USED} (the stack grants no team Slack secrets: SlackSecretPrefix is empty)'
    if not SECRET_PREFIX.match(prefix):
        return f'secret "{name}" is {_NOT_USED} (SlackSecretPrefix "{prefix}" does not end in "/" after a name)'
    if not name.startswith(prefix):
        return f'secret "{name}" is not under the stack\'s SlackSecretPrefix "{prefix}": {_NOT_USED}'
    return None


def topic_problem(arn: str, grants: ChannelGrants) -> str | None:
    """Why the stack may not publish to the team topic ``arn`` (None: it may)."""
    prefix = grants.topic_prefix
    if not prefix:
        return f"topic {arn} is {_NOT_USED} (the stack grants no team topics: TeamTopicPrefix is empty)"
    if not TOPIC_PREFIX.match(prefix):
        return f'topic {arn} is {_NOT_USED} (TeamTopicPrefix "{prefix}" does not end in "-" or "_" after a name)'
    match = TOPIC_ARN.match(arn)
    assert match is not None  # the policy validates the ARN
    if grants.region and match["region"] != grants.region:
        return f"topic {arn} is in {match['region']}, not the stack's region {grants.region}: {_NOT_USED}"
    if grants.account and match["account"] != grants.account:
        return f"topic {arn} is in account {match['account']}, not the stack's {grants.account}: {_NOT_USED}"
    if not match["name"].startswith(prefix):
        return f'topic {arn} is not named under the stack\'s TeamTopicPrefix "{prefix}": {_NOT_USED}'
    return None


def _targets(settings: TeamPolicy) -> list[tuple[str, str, tuple[str, ...]]]:
    """(kind, target, policy path) of each channel a team names, in registration order."""
    named: dict[str, tuple[str, tuple[str, ...]]] = {
        kind: (target, ("channels", kind)) for kind, target in settings.channels.items()
    }
    if settings.slack_secret:
        named.setdefault("slack", (settings.slack_secret, ("slack_secret",)))
    if settings.sns_topic_arn:
        named.setdefault("sns", (settings.sns_topic_arn, ("sns_topic_arn",)))
    return [(kind, *named[kind]) for kind in CHANNEL_KINDS if kind in named]


def _problem(kind: str, target: str, grants: ChannelGrants) -> str | None:
    if CHANNEL_KINDS[kind].target == "topic":
        return topic_problem(target, grants)
    return secret_problem(target, grants)


def team_channels(report: Report, policy: Policy, grants: ChannelGrants) -> list[TeamChannel]:
    """The team's own channels ``report`` also goes to (in registration order: Slack, SNS, Teams...):
    none for a report without a team, a team the policy does not list, or a channel outside the
    stack's grants."""
    team = report.team
    settings = policy.teams.get(team) if team else None
    if team is None or settings is None:
        return []
    return [
        TeamChannel(f"{kind}:team:{team}", kind, team, target)
        for kind, target, _ in _targets(settings)
        if _problem(kind, target, grants) is None
    ]


def routing_warnings(policy: Policy, grants: ChannelGrants) -> list[tuple[str, str]]:
    """(path, message) for every team channel the stack does not grant, in team order."""
    found: list[tuple[str, str]] = []
    for name, team in sorted(policy.teams.items()):
        for kind, target, path in _targets(team):
            if problem := _problem(kind, target, grants):
                found.append((render_path(("teams", name, *path)), problem))
    return found


def owner_handles(policy: Policy, owner: str | None) -> dict[str, str]:
    """The owner's handle per channel kind, for channels that mention people: a Slack member ID
    (``Policy.slack_member``) when the policy maps or the tag holds one; empty otherwise."""
    member = policy.slack_member(owner)
    return {"slack": member} if member else {}
