"""The Slack channel: a report drawn as Block Kit and posted to an incoming webhook.

Blocks are built with ``slack_sdk.models.blocks`` (which checks Block Kit's limits) inside the renderer,
never at module level: ``import slack_sdk`` loads its web client and asyncio, so only a report that goes
to Slack pays for it. Free text is escaped by Slack's rules (``slack_text``); the owner is mentioned
only by a Slack member ID the policy maps (``Report.handles["slack"]``), else named as plain text.
The webhook URL is a secret: read lazily, never logged, never put in an error message.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from http.client import HTTPException
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.error import URLError

from tuning_governor.adapters.channels.secrets import guard_secret_logging, webhook_from_secret
from tuning_governor.adapters.channels.slack_text import (
    defuse_mentions,
    escape_mrkdwn,
    mrkdwn_field,
    slack_fallback,
    verbatim_mrkdwn,
)
from tuning_governor.domain.reports import Fact, Report
from tuning_governor.errors import DeliveryFailed, DeliveryUnconfirmed
from tuning_governor.observability import seconds_left

if TYPE_CHECKING:
    from slack_sdk.http_retry.handler import RetryHandler
    from slack_sdk.http_retry.response import HttpResponse
    from slack_sdk.http_retry.state import RetryState
    from slack_sdk.models.blocks import Block, MarkdownTextObject
    from slack_sdk.webhook import WebhookClient

    from tuning_governor.adapters.channels import ChannelClients

#: A Slack member ID (U..., or W... on Enterprise Grid): the only thing a report ever mentions.
SLACK_MEMBER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")
#: Block Kit's limits: 10 fields in a section, 10 elements in a context block.
_MAX_FIELDS = 10


def owner_mrkdwn(owner: str | None, member_id: str | None = None) -> str:
    """The owner as Slack mrkdwn: a mention ``<@ID>`` when ``member_id`` is a Slack member ID, else the
    name escaped as plain text (shown, never a ping or a link), or ``-`` when unknown."""
    if member_id and SLACK_MEMBER_ID.match(member_id):
        return f"<@{member_id}>"
    name = (owner or "").strip()
    return escape_mrkdwn(name) if name and name != "-" else "-"


def _header(text: str) -> Block:
    from slack_sdk.models.blocks import HeaderBlock, PlainTextObject  # noqa: PLC0415

    # plain_text cannot be verbatim: mentions are defused instead.
    return HeaderBlock(text=PlainTextObject(text=defuse_mentions(text)[:150]))


def _field(fact: Fact, report: Report) -> MarkdownTextObject:
    member = report.handles.get("slack")
    if fact.role == "team-owner":
        # The owner mentioned (or named, escaped); the team escaped like any free text.
        team = mrkdwn_field("*{label}*\n{team} / ", 1700, label=fact.label, team=fact.team or "-")
        return verbatim_mrkdwn(team + owner_mrkdwn(report.owner, member))
    if fact.role == "owner":
        return verbatim_mrkdwn(f"*{escape_mrkdwn(fact.label)}*\n{owner_mrkdwn(report.owner, member)}")
    return verbatim_mrkdwn(mrkdwn_field("*{label}*\n{value}", 2000, label=fact.label, value=fact.value))


def render_blocks(report: Report) -> list[dict[str, Any]]:
    """``report`` as Block Kit: its headline, lead, facts (10 as fields, the rest as one section), notes
    and paragraphs, every free value escaped."""
    from slack_sdk.models.blocks import ContextBlock, SectionBlock  # noqa: PLC0415

    blocks: list[Block] = [_header(report.headline)] if report.headline else []
    if report.lead is not None:
        lead = report.lead
        text = mrkdwn_field("*{rule}* ({verdict}): {why}", 3000, rule=lead.title, verdict=lead.qualifier, why=lead.text)
        blocks.append(SectionBlock(text=verbatim_mrkdwn(text)))
    if report.facts:
        blocks.append(SectionBlock(fields=[_field(fact, report) for fact in report.facts[:_MAX_FIELDS]]))
    extra = report.facts[_MAX_FIELDS:]
    if extra:
        rows = [mrkdwn_field("*{k}*: {v}", 2990 // len(extra), k=fact.label, v=fact.value) for fact in extra]
        blocks.append(SectionBlock(text=verbatim_mrkdwn("\n".join(rows))))
    if report.notes:
        elements = [
            verbatim_mrkdwn(mrkdwn_field(":warning: {w}" if note.warning else "{w}", 3000, w=note.text))
            for note in report.notes[:_MAX_FIELDS]
        ]
        blocks.append(ContextBlock(elements=elements))
    rendered = [block.to_dict() for block in blocks]
    # Plain paragraphs (the queue's reports): one mrkdwn section each, escaped and cut at Slack's 3,000.
    rendered += [
        {"type": "section", "text": {"type": "mrkdwn", "text": escape_mrkdwn(p)[:3000]}} for p in report.paragraphs
    ]
    return rendered


def _retry_wait(handler: RetryHandler, state: RetryState, response: HttpResponse | None) -> float:
    """How long ``handler`` would sleep before its next attempt: Retry-After (+ up to 1 s of jitter)
    for a 429, its back-off otherwise."""
    if response is not None and response.status_code == 429:
        values = {k.lower(): v for k, v in response.headers.items()}.get("retry-after") or ["1"]
        try:
            return float(values[0]) + 1
        except ValueError:
            return 2.0
    return float(handler.interval_calculator.calculate_sleep_duration(state.current_attempt))


def retry_handlers(
    max_retries: int, *, deadline: float | None, request_s: float, sleep: Callable[[float], None] | None = None
) -> list[RetryHandler]:
    """slack_sdk's retry handlers for a request that could not be sent (URLError), 429 and 500/503,
    each allowed a retry only when its wait and one more request fit before ``deadline`` (monotonic;
    None: no bound), then waiting that very wait through ``sleep`` (None: ``time.sleep``). A post whose answer is lost (read
    timeout, a connection reset or closed after the request went out) is never retried here: it may have
    landed (see ``SlackNotifier.send``)."""
    from slack_sdk.http_retry.builtin_handlers import (  # noqa: PLC0415
        ConnectionErrorRetryHandler,
        RateLimitErrorRetryHandler,
        ServerErrorRetryHandler,
    )
    from slack_sdk.http_retry.handler import RetryHandler  # noqa: PLC0415

    class WithinDeadline(RetryHandler):
        def __init__(self, inner: RetryHandler) -> None:
            super().__init__(inner.max_retry_count, inner.interval_calculator)
            self.inner = inner
            self.wait = 0.0

        def _can_retry(self, *, state: Any, request: Any, response: Any = None, error: Any = None) -> bool:
            if not self.inner._can_retry(state=state, request=request, response=response, error=error):
                return False
            self.wait = _retry_wait(self.inner, state, response)
            return deadline is None or time.monotonic() + self.wait + request_s <= deadline

        def prepare_for_next_attempt(
            self, *, state: Any, request: Any, response: Any = None, error: Any = None
        ) -> None:
            # The wait the deadline was checked with (slack_sdk's own would draw its jitter again).
            state.next_attempt_requested = True
            (sleep or time.sleep)(self.wait)
            state.increment_current_attempt()

    return [
        WithinDeadline(ConnectionErrorRetryHandler(max_retry_count=max_retries, error_types=[URLError])),
        WithinDeadline(RateLimitErrorRetryHandler(max_retry_count=max_retries)),
        WithinDeadline(ServerErrorRetryHandler(max_retry_count=max_retries)),
    ]


class SlackNotifier:
    # The webhook URL lives in Secrets Manager (granted only when a secret is configured).
    permissions: ClassVar[frozenset[str]] = frozenset({"secretsmanager:GetSecretValue"})

    def __init__(
        self,
        webhook_url: Callable[[], str],
        *,
        channel: str = "slack",
        max_retries: int = 2,
        timeout: int = 10,
        reserve_s: float = 10.0,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.channel = channel
        self._sleep = sleep
        # What a post leaves of the invocation for the rest of it: the delivery's own writes (at most
        # 1.55 s of in-place retries), the other channels, the rules still to judge.
        self._reserve = reserve_s
        self._webhook_url = webhook_url
        self._max_retries = max_retries
        self._timeout = timeout
        # Before the secret is first read: botocore logs GetSecretValue's response at DEBUG.
        guard_secret_logging()

    def _client(self, url: str, deadline: float | None) -> WebhookClient:
        # Imported on first use: a cold start without Slack (or before its first report) skips slack_sdk.
        from slack_sdk.webhook import WebhookClient  # noqa: PLC0415

        timeout = self._timeout if deadline is None else max(1, min(self._timeout, int(deadline - time.monotonic())))
        return WebhookClient(
            url=url,
            timeout=timeout,
            logger=guard_secret_logging(url),
            retry_handlers=retry_handlers(self._max_retries, deadline=deadline, request_s=timeout, sleep=self._sleep),
        )

    def _deadline(self) -> float | None:
        """When this post must be over (monotonic): the invocation's end less the reserve."""
        left = seconds_left()
        if left is None:
            return None
        if left - self._reserve < 1:
            raise DeliveryFailed(f"{self.channel}: no time left in this invocation for a slack post ({left:.1f} s)")
        return time.monotonic() + left - self._reserve

    def send(self, report: Report) -> None:
        deadline = self._deadline()
        try:
            url = self._webhook_url()
        except DeliveryFailed as exc:
            raise DeliveryFailed(f"{self.channel}: {exc}") from None
        except Exception as exc:  # a reader of our own making (tests, the demo): its text may hold the URL
            raise DeliveryFailed(f"{self.channel}: slack webhook URL unavailable: {type(exc).__name__}") from None
        try:
            response = self._client(url, deadline).send(
                text=slack_fallback(report.subject), blocks=render_blocks(report)
            )
        except URLError as exc:  # the request could not be sent (urllib wraps send-side errors): not posted
            # The exception text may contain the URL: report the type only.
            raise DeliveryFailed(f"{self.channel}: slack webhook failed: {type(exc).__name__}") from None
        except (OSError, HTTPException) as exc:  # sent, no (readable) answer: timeout, reset, closed; may have landed
            raise DeliveryUnconfirmed(
                f"{self.channel}: slack webhook sent, answer lost: {type(exc).__name__}; not posted again"
            ) from None
        except Exception as exc:  # refused before sending (slack_sdk's own checks): not posted
            raise DeliveryFailed(f"{self.channel}: slack webhook failed: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise DeliveryFailed(f"{self.channel}: slack webhook answered HTTP {response.status_code}")


PERMISSIONS = SlackNotifier.permissions


def build(target: str, *, channel: str, clients: ChannelClients) -> SlackNotifier:
    """The notifier posting to the webhook whose URL the secret ``target`` holds."""
    return SlackNotifier(
        webhook_from_secret(clients.secrets(), target, max_age=clients.secret_max_age),
        channel=channel,
        sleep=clients.sleep,
    )
