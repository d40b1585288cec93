"""The Microsoft Teams channel: a report drawn as an Adaptive Card and posted to a Teams webhook.

Teams takes a card through a channel's incoming webhook, or through the Workflows "when a Teams
webhook request is received" trigger that replaces Office 365 connectors; both accept a ``message``
whose one attachment has ``contentType`` ``application/vnd.microsoft.card.adaptive`` and the card as
``content``, and answer 2xx (200 from a connector, 202 from a workflow). The URL alone authorises
posting, so it is a secret: read from Secrets Manager, redacted from logs, never in an error.

Card text is Markdown: free text (tag values, messages quoting them) has Markdown's control characters
escaped, so a value can neither format nor link. Teams mentions need an explicit entity the card never
carries, so nobody is ever pinged.

Posting, and what a failed post is reported as, is every webhook channel's (``adapters.channels.webhook``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tuning_governor.adapters.channels.secrets import webhook_from_secret
from tuning_governor.adapters.channels.webhook import WebhookNotifier
from tuning_governor.domain.reports import Report

if TYPE_CHECKING:
    from tuning_governor.adapters.channels import ChannelClients

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_VERSION = "1.4"
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~])")
#: What a card shows of one text: well under Teams' 28 KB message size for the whole card.
_MAX_TEXT = 3000


def escape_markdown(text: str) -> str:
    """``text`` shown as written in a card's Markdown: every control character backslash-escaped."""
    return _MARKDOWN.sub(r"\\\1", text[:_MAX_TEXT])


def _text(text: str, **style: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text, "wrap": True, **style}


def render_card(report: Report) -> dict[str, Any]:
    """``report`` as an Adaptive Card: headline, lead, facts (a FactSet), paragraphs, then notes."""
    body: list[dict[str, Any]] = []
    if report.headline:
        body.append(_text(escape_markdown(report.headline), size="Medium", weight="Bolder"))
    if report.lead is not None:
        lead = report.lead
        body.append(
            _text(
                f"**{escape_markdown(lead.title)}** ({escape_markdown(lead.qualifier)}): {escape_markdown(lead.text)}"
            )
        )
    if report.facts:
        facts = [{"title": escape_markdown(f.label), "value": escape_markdown(f.value)} for f in report.facts]
        body.append({"type": "FactSet", "facts": facts})
    body += [_text(escape_markdown(paragraph)) for paragraph in report.paragraphs]
    for note in report.notes:
        prefix = "\u26a0 " if note.warning else ""
        body.append(_text(prefix + escape_markdown(note.text), isSubtle=True, size="Small"))
    return {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": CARD_VERSION,
        "body": body,
    }


def message(report: Report) -> dict[str, Any]:
    """The webhook's request body: a message with the card as its one attachment."""
    attachment = {"contentType": CARD_CONTENT_TYPE, "contentUrl": None, "content": render_card(report)}
    return {"type": "message", "summary": report.subject, "attachments": [attachment]}


class TeamsNotifier(WebhookNotifier):
    label = "teams"

    def __init__(self, webhook_url: Callable[[], str], *, channel: str = "msteams", **options: Any) -> None:
        super().__init__(webhook_url, channel=channel, **options)

    def body(self, report: Report) -> dict[str, Any]:
        return message(report)


PERMISSIONS = TeamsNotifier.permissions


def build(target: str, *, channel: str, clients: ChannelClients) -> TeamsNotifier:
    """The notifier posting to the Teams webhook whose URL the secret ``target`` holds."""
    url = webhook_from_secret(clients.secrets(), target, max_age=clients.secret_max_age, kind="teams")
    return TeamsNotifier(url, channel=channel)
