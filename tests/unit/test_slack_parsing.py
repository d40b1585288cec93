"""Issue 18, finding 14: what the governor posts to Slack, read by Slack's own parsing rules as documented,
mentions no one but the job's owner (when the policy names their member ID).

The rules, from Slack's "Formatting text for app surfaces" and the text object reference
(docs.slack.dev/reference/block-kit/composition-objects/text-object):
- ``&``, ``<`` and ``>`` are control characters; ``<!here>``, ``<!channel>``, ``<!everyone>``,
  ``<!subteam^ID>``, ``<@U…>``, ``<#C…>`` and ``<url|label>`` are acted on wherever they appear
  ("manual parsing strings"); only ``&amp;``, ``&lt;`` and ``&gt;`` are decoded for display.
- a ``mrkdwn`` text object with ``verbatim`` false (the default) is preprocessed: "URLs will be
  auto-converted into links, conversation names will be link-ified, and certain mentions will be
  automatically parsed"; with ``verbatim: true`` Slack "won't modify any plain-text content".
- ``verbatim`` exists only on ``mrkdwn`` objects: ``plain_text`` objects and a message's top-level
  ``text`` (mrkdwn by default) have no such switch, so this test treats them as preprocessed.
Automatic parsing of a bare mention is modelled as Slack's client did it: ``@here``, ``@channel``,
``@everyone``, ``@group`` or ``@name`` at the start or after a space, ``(``, ``>``, ``*`` or ``_``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from governor_client.offline.slack_server import SlackWebhookServer
from tuning_governor.adapters.channels.slack import SlackNotifier
from tuning_governor.domain.reports import Report, decision_report

MANUAL = re.compile(r"<([!@#][^>|]*)(?:\|[^>]*)?>|<(https?://[^>|]*)(?:\|[^>]*)?>")
AUTO_MENTION = re.compile(r"(?:^|(?<=[\s(>*_]))@([A-Za-z0-9._-]+)")
AUTO_LINK = re.compile(r"https?://\S+")
ENTITIES = {"&lt;": "<", "&gt;": ">", "&amp;": "&"}

HOSTILE_TEAM = "@here"
HOSTILE_OWNER = "@channel"
HOSTILE_MESSAGE = "over budget @everyone, see https://evil.example/x and <!channel> & <@U999EVIL>"


def acted_on(text: str, *, preprocessed: bool) -> set[str]:
    """What Slack would turn into a mention or a link in ``text``."""
    found = {m.group(1) or m.group(2) for m in MANUAL.finditer(text)}
    if preprocessed:
        found |= {f"@{m.group(1)}" for m in AUTO_MENTION.finditer(text)}
        found |= {m.group(0) for m in AUTO_LINK.finditer(text)}
    return found


def text_objects(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        own = [node] if node.get("type") in {"mrkdwn", "plain_text"} and "text" in node else []
        return own + [obj for value in node.values() for obj in text_objects(value)]
    if isinstance(node, list):
        return [obj for value in node for obj in text_objects(value)]
    return []


def displayed(text: str) -> str:
    """What a reader sees: the three entities decoded, the invisible word joiner gone."""
    return re.sub("&lt;|&gt;|&amp;", lambda m: ENTITIES[m.group(0)], text).replace("\u2060", "")


def hostile_report(owner_member: str | None = None) -> Report:
    return decision_report(
        rule="budget",
        verdict="warning",
        job_key="team-month",
        job_name=f"team {HOSTILE_TEAM}",
        team=HOSTILE_TEAM,
        message=HOSTILE_MESSAGE,
        numbers={"note": "@everyone"},
        at="2026-12-01T10:00:00+00:00",
        mode="enforce",
        action="warned",
        detail="reported only",
        owner=HOSTILE_OWNER,
        handles={"slack": owner_member} if owner_member else None,
    )


@pytest.fixture
def slack() -> Any:
    with SlackWebhookServer() as server:
        yield server


def posted(slack: SlackWebhookServer, report: Report) -> dict[str, Any]:
    SlackNotifier(lambda: slack.url, max_retries=0).send(report)
    [message] = slack.messages
    return message


@pytest.mark.parametrize("member", [None, "U012AB3CD"])
def test_slack_acts_on_nothing_in_a_report_but_the_owner_mention(slack: SlackWebhookServer, member: str | None) -> None:
    # Given a team named "@here", an owner tag "@channel" and a message quoting mentions and a URL
    message = posted(slack, hostile_report(member))
    # When Slack parses what was posted: every text object and the top-level text
    objects = text_objects(message.get("blocks"))
    found: set[str] = set()
    for obj in objects:
        preprocessed = obj["type"] == "plain_text" or not obj.get("verbatim", False)
        found |= acted_on(obj["text"], preprocessed=preprocessed)
    found |= acted_on(str(message["text"]), preprocessed=True)
    # Then nothing is a mention or a link but the owner's member ID, when the policy names it
    assert found == ({f"@{member}"} if member else set()), found
    # and every mrkdwn object is verbatim, and the hostile text is shown as given
    assert objects and all(obj.get("verbatim") is True for obj in objects if obj["type"] == "mrkdwn")
    shown = "\n".join(displayed(obj["text"]) for obj in objects)
    assert HOSTILE_MESSAGE in shown and f"team {HOSTILE_TEAM}" in displayed(str(message["text"]))
