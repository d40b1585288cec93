"""Webhook URLs are secrets: read lazily from Secrets Manager, kept out of every log line and error.

slack_sdk logs the URL it posts to (DEBUG, and INFO when it retries a connection error) and botocore
logs every response body at DEBUG (GetSecretValue's SecretString included), so every webhook channel
registers its URL with one redactor installed on those loggers: see ``guard_secret_logging``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from tuning_governor.errors import DeliveryFailed

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

# slack_sdk logs through this logger (WebhookClient(logger=...)), pinned at WARNING: below that it
# builds messages with the URL in them (it tests ``logger.level <= DEBUG``, and NOTSET is 0).
SLACK_SDK_LOGGER = "tuning_governor.slack_sdk"
# botocore loggers that write request parameters and response bodies at DEBUG.
_BOTOCORE_PAYLOAD_LOGGERS = ("botocore.parsers", "botocore.endpoint")
_SECRET_FIELDS = ("SecretString", "SecretBinary")
_REDACTED = "<redacted secret>"


def error_code(exc: BaseException) -> str:
    """An AWS error's code, or the exception's type: what an error message may say of a failure."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code") or type(exc).__name__)
    return type(exc).__name__


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


def webhook_from_secret(
    provider: SecretsProvider, secret_id: str, *, max_age: int = 300, kind: str = "slack"
) -> Callable[[], str]:
    """Read a webhook URL from the secret ``secret_id`` (a name or an ARN) through Powertools Parameters,
    cached ``max_age`` seconds. A secret that cannot be read (missing, denied, throttled) or holds no
    URL raises ``DeliveryFailed`` naming the ``kind`` of channel, the secret and the error code, never
    its value."""

    def webhook_url() -> str:
        # Imported on first use, like the provider's own boto3 client.
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError  # noqa: PLC0415

        try:
            value = provider.get(secret_id, max_age=max_age)
        except GetParameterError as exc:
            cause = exc.__cause__ or exc.__context__ or exc  # Powertools raises it inside its except
            raise DeliveryFailed(f"{kind} secret {secret_id} could not be read: {error_code(cause)}") from None
        try:
            url = webhook_url_from_secret(value.decode() if isinstance(value, bytes) else str(value))
        except ValueError:  # JSON that is not an object with webhook_url; its text is the secret
            url = ""
        if not url:
            raise DeliveryFailed(f'{kind} secret {secret_id} holds no webhook URL (a URL, or {{"webhook_url": ...}})')
        guard_secret_logging(url)
        return url

    return webhook_url
