"""Report channels: SNS (text body + filterable attributes) and Slack (Block Kit via an incoming webhook).

Each channel raises ``DeliveryFailed`` when it gives up; the caller still tries the other channels.
The same adapters serve the stack's own channels (``sns``, ``slack``) and the teams' own
(``sns:team:<team>``, ``slack:team:<team>``; see ``team_channels.py``): only the channel name differs.
A Slack webhook URL is a secret: it is read lazily, never logged, never put in an error message.
slack_sdk logs the URL it posts to (DEBUG, and INFO when it retries a connection error) and botocore
logs every response body at DEBUG (GetSecretValue's SecretString included), so a Slack notifier pins
slack_sdk to its own WARNING logger and filters both: see ``guard_secret_logging``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from http.client import HTTPException
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.error import URLError

from botocore.exceptions import BotoCoreError, ClientError

from tuning_governor.domain.reports import Report, slack_fallback
from tuning_governor.errors import DeliveryFailed, DeliveryUnconfirmed
from tuning_governor.observability import seconds_left

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider
    from mypy_boto3_sns import SNSClient
    from slack_sdk.http_retry.handler import RetryHandler
    from slack_sdk.http_retry.response import HttpResponse
    from slack_sdk.http_retry.state import RetryState
    from slack_sdk.webhook import WebhookClient


def _error_code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code") or type(exc).__name__)
    return type(exc).__name__


class SnsNotifier:
    # The topic is KMS-encrypted: publishing needs the key through SNS.
    permissions: ClassVar[frozenset[str]] = frozenset({"sns:Publish", "kms:GenerateDataKey*", "kms:Decrypt"})

    def __init__(self, client: SNSClient, topic_arn: str, *, channel: str = "sns") -> None:
        self._client = client
        self._topic_arn = topic_arn
        self.channel = channel

    def send(self, report: Report) -> None:
        try:
            self._client.publish(
                TopicArn=self._topic_arn,
                Subject=report.subject,
                Message=report.text,
                MessageAttributes={
                    name: {"DataType": "String", "StringValue": value} for name, value in report.attributes.items()
                },
            )
        except (ClientError, BotoCoreError) as exc:
            # The topic ARN is no secret: name it, so a missing or denied team topic is plain to see.
            raise DeliveryFailed(
                f"{self.channel}: sns publish to {self._topic_arn} failed: {_error_code(exc)}"
            ) from exc


# slack_sdk logs through this logger (WebhookClient(logger=...)), pinned at WARNING: below that it
# builds messages with the URL in them (it tests ``logger.level <= DEBUG``, and NOTSET is 0).
SLACK_SDK_LOGGER = "tuning_governor.slack_sdk"
# botocore loggers that write request parameters and response bodies at DEBUG.
_BOTOCORE_PAYLOAD_LOGGERS = ("botocore.parsers", "botocore.endpoint")
_SECRET_FIELDS = ("SecretString", "SecretBinary")
_REDACTED = "<redacted secret>"


class SecretRedactor(logging.Filter):
    """Rewrites a record that holds a known secret (or a Secrets Manager payload) before any handler sees it.

    Attached to the loggers that create such records (filters on a logger apply to the records it
    creates, whatever the handlers): the record's message becomes the formatted text with every known
    secret (and its URL path, which alone authorises posting) replaced, and a payload with a
    ``SecretString`` or ``SecretBinary`` is replaced whole.
    """

    def __init__(self) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, secret: str) -> None:
        """Redact ``secret`` from now on; for a URL also its path (``/services/T…/B…/token``)."""
        parts = {secret}
        path = secret.split("://", 1)[-1].partition("/")[2]
        if len(path) >= 8:
            parts.add("/" + path)
        with self._lock:
            self._secrets |= {part for part in parts if part}

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record: its arguments may hold anything
            text = str(record.msg)
        if any(field in text for field in _SECRET_FIELDS):
            text = text.split(":", 1)[0] + f": {_REDACTED} (a Secrets Manager payload)"
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        for secret in secrets:
            text = text.replace(secret, _REDACTED)
        record.msg, record.args = text, None
        if record.exc_info is not None or record.exc_text:
            # Tracebacks of HTTP errors quote the URL; keep the type only.
            kind = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else "exception"
            record.msg, record.exc_info, record.exc_text = f"{text} ({kind}; traceback withheld)", None, None
        return True


_redactor = SecretRedactor()
_guard_lock = threading.Lock()


def guard_secret_logging(*secrets: str) -> logging.Logger:
    """Keep ``secrets`` (and any Secrets Manager payload) out of every log line; return slack_sdk's logger.

    Idempotent: installs the redactor once on the botocore payload loggers and on ``SLACK_SDK_LOGGER``
    (pinned at WARNING, so slack_sdk's DEBUG request lines and INFO retry lines are never built), then
    adds ``secrets`` to it.
    """
    for secret in secrets:
        _redactor.add(secret)
    slack_logger = logging.getLogger(SLACK_SDK_LOGGER)
    with _guard_lock:
        for name in (*_BOTOCORE_PAYLOAD_LOGGERS, SLACK_SDK_LOGGER):
            target = logging.getLogger(name)
            if _redactor not in target.filters:
                target.addFilter(_redactor)
        slack_logger.setLevel(logging.WARNING)
    return slack_logger


def webhook_url_from_secret(secret: str) -> str:
    """The secret holds the URL itself or JSON ``{"webhook_url": ...}``."""
    text = secret.strip()
    if text.startswith("{"):
        value = json.loads(text).get("webhook_url", "")
        return str(value)
    return text


def webhook_from_secret(provider: SecretsProvider, secret_id: str, *, max_age: int = 300) -> Callable[[], str]:
    """Read a webhook URL from the secret ``secret_id`` (a name or an ARN) through Powertools Parameters,
    cached ``max_age`` seconds. A secret that cannot be read (missing, denied, throttled) or holds no
    URL raises ``DeliveryFailed`` naming the secret and the error code, never its value."""

    def webhook_url() -> str:
        # Imported on first use, like the provider's own boto3 client.
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError  # noqa: PLC0415

        try:
            value = provider.get(secret_id, max_age=max_age)
        except GetParameterError as exc:
            cause = exc.__cause__ or exc.__context__ or exc  # Powertools raises it inside its except
            raise DeliveryFailed(f"slack secret {secret_id} could not be read: {_error_code(cause)}") from None
        try:
            url = webhook_url_from_secret(value.decode() if isinstance(value, bytes) else str(value))
        except ValueError:  # JSON that is not an object with webhook_url; its text is the secret
            url = ""
        if not url:
            raise DeliveryFailed(f'slack secret {secret_id} holds no webhook URL (a URL, or {{"webhook_url": ...}})')
        return url

    return webhook_url


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


def retry_handlers(max_retries: int, *, deadline: float | None, request_s: float) -> list[RetryHandler]:
    """slack_sdk's retry handlers for a request that could not be sent (URLError), 429 and 500/503,
    each allowed a retry only when its wait and one more request fit before ``deadline`` (monotonic;
    None: no bound). A post whose answer is lost (read timeout, a connection reset or closed after the
    request went out) is never retried here: it may have landed (see ``SlackNotifier.send``)."""
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

        def _can_retry(self, *, state: Any, request: Any, response: Any = None, error: Any = None) -> bool:
            if not self.inner._can_retry(state=state, request=request, response=response, error=error):
                return False
            wait = _retry_wait(self.inner, state, response)
            return deadline is None or time.monotonic() + wait + request_s <= deadline

        def prepare_for_next_attempt(
            self, *, state: Any, request: Any, response: Any = None, error: Any = None
        ) -> None:
            self.inner.prepare_for_next_attempt(state=state, request=request, response=response, error=error)

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
    ) -> None:
        self.channel = channel
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
            retry_handlers=retry_handlers(self._max_retries, deadline=deadline, request_s=timeout),
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
            response = self._client(url, deadline).send(text=slack_fallback(report.subject), blocks=report.blocks)
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
