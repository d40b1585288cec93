"""The Microsoft Teams channel: a report drawn as an Adaptive Card and posted to a Teams webhook.

Teams takes a card through a channel's incoming webhook, or through the Workflows "when a Teams
webhook request is received" trigger that replaces Office 365 connectors; both accept a ``message``
whose one attachment has ``contentType`` ``application/vnd.microsoft.card.adaptive`` and the card as
``content``, and answer 2xx (200 from a connector, 202 from a workflow). The URL alone authorises
posting, so it is a secret: read from Secrets Manager, redacted from logs, never in an error.

Card text is Markdown: free text (tag values, messages quoting them) has Markdown's control characters
escaped, so a value can neither format nor link. Teams mentions need an explicit entity the card never
carries, so nobody is ever pinged.

A post is never retried here: one that may have landed is reported ``unconfirmed`` (never posted
again), one that could not be sent or was refused (429 and 5xx included) ``failed``, so the delivery
row gives the claim back and the sweep's delivery step sends it once more.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from http.client import HTTPException
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.error import HTTPError, URLError

from tuning_governor.adapters.channels.secrets import guard_secret_logging, webhook_from_secret
from tuning_governor.domain.reports import Report
from tuning_governor.errors import DeliveryFailed, DeliveryUnconfirmed
from tuning_governor.observability import seconds_left

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


class TeamsNotifier:
    # The webhook URL lives in Secrets Manager.
    permissions: ClassVar[frozenset[str]] = frozenset({"secretsmanager:GetSecretValue"})

    def __init__(
        self, webhook_url: Callable[[], str], *, channel: str = "msteams", timeout: int = 10, reserve_s: float = 10.0
    ) -> None:
        self.channel = channel
        self._webhook_url = webhook_url
        self._timeout = timeout
        self._reserve = reserve_s
        guard_secret_logging()

    def _timeout_s(self) -> float:
        """The post's timeout: its own, or what the invocation leaves less the reserve."""
        left = seconds_left()
        if left is None:
            return float(self._timeout)
        if left - self._reserve < 1:
            raise DeliveryFailed(f"{self.channel}: no time left in this invocation for a teams post ({left:.1f} s)")
        return min(float(self._timeout), left - self._reserve)

    def send(self, report: Report) -> None:
        timeout = self._timeout_s()
        try:
            url = self._webhook_url()
        except DeliveryFailed as exc:
            raise DeliveryFailed(f"{self.channel}: {exc}") from None
        except Exception as exc:  # a reader of our own making (tests): its text may hold the URL
            raise DeliveryFailed(f"{self.channel}: teams webhook URL unavailable: {type(exc).__name__}") from None
        if not url.startswith(("https://", "http://")):  # urllib would also open file: and ftp: URLs
            raise DeliveryFailed(f"{self.channel}: the teams webhook URL is not an http(s) URL")
        body = json.dumps(message(report)).encode()
        request = urllib.request.Request(  # noqa: S310 - http(s) only, checked above
            url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                status = response.status
        except HTTPError as exc:  # answered, refused: not posted (429 and 5xx included: the sweep resends)
            raise DeliveryFailed(f"{self.channel}: teams webhook answered HTTP {exc.code}") from None
        except URLError as exc:  # urllib wraps what fails while connecting and sending: not posted
            raise DeliveryFailed(f"{self.channel}: teams webhook failed: {type(exc.reason).__name__}") from None
        except (OSError, HTTPException) as exc:  # sent, no (readable) answer: may have landed
            raise DeliveryUnconfirmed(
                f"{self.channel}: teams webhook sent, answer lost: {type(exc).__name__}; not posted again"
            ) from None
        if not 200 <= status < 300:
            raise DeliveryFailed(f"{self.channel}: teams webhook answered HTTP {status}")


PERMISSIONS = TeamsNotifier.permissions


def build(target: str, *, channel: str, clients: ChannelClients) -> TeamsNotifier:
    """The notifier posting to the Teams webhook whose URL the secret ``target`` holds."""
    url = webhook_from_secret(clients.secrets(), target, max_age=clients.secret_max_age, kind="teams")
    return TeamsNotifier(url, channel=channel)
