"""Report channels: SNS (text body + filterable attributes) and Slack (Block Kit via an incoming webhook).

Each channel raises ``DeliveryFailed`` when it gives up; the caller still tries the other channels.
The Slack webhook URL is a secret: it is read lazily, never logged, never put in an error message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from tuning_governor.domain.reports import Report
from tuning_governor.errors import DeliveryFailed

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient
    from slack_sdk.webhook import WebhookClient


class Notifier(Protocol):
    channel: str

    def send(self, report: Report) -> None:
        """Deliver the report or raise DeliveryFailed."""


class SnsNotifier:
    channel = "sns"
    # The topic is KMS-encrypted: publishing needs the key through SNS.
    permissions: ClassVar[frozenset[str]] = frozenset({"sns:Publish", "kms:GenerateDataKey*", "kms:Decrypt"})

    def __init__(self, client: SNSClient, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn

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
            raise DeliveryFailed(f"sns publish failed: {type(exc).__name__}") from exc


def webhook_url_from_secret(secret: str) -> str:
    """The secret holds the URL itself or JSON ``{"webhook_url": ...}``."""
    text = secret.strip()
    if text.startswith("{"):
        value = json.loads(text).get("webhook_url", "")
        return str(value)
    return text


class SlackNotifier:
    channel = "slack"
    # The webhook URL lives in Secrets Manager (granted only when a secret is configured).
    permissions: ClassVar[frozenset[str]] = frozenset({"secretsmanager:GetSecretValue"})

    def __init__(
        self,
        webhook_url: Callable[[], str],
        *,
        max_retries: int = 2,
        timeout: int = 10,
    ) -> None:
        self._webhook_url = webhook_url
        self._max_retries = max_retries
        self._timeout = timeout

    def _client(self) -> WebhookClient:
        # Imported on first use: a cold start without Slack (or before its first report) skips slack_sdk.
        from slack_sdk.http_retry.builtin_handlers import (  # noqa: PLC0415
            ConnectionErrorRetryHandler,
            RateLimitErrorRetryHandler,
            ServerErrorRetryHandler,
        )
        from slack_sdk.webhook import WebhookClient  # noqa: PLC0415

        return WebhookClient(
            url=self._webhook_url(),
            timeout=self._timeout,
            retry_handlers=[
                ConnectionErrorRetryHandler(max_retry_count=self._max_retries),
                RateLimitErrorRetryHandler(max_retry_count=self._max_retries),
                ServerErrorRetryHandler(max_retry_count=self._max_retries),
            ],
        )

    def send(self, report: Report) -> None:
        try:
            response = self._client().send(text=report.subject, blocks=report.blocks)
        except Exception as exc:  # urllib errors after the retry handlers gave up
            # The exception text may contain the URL: report the type only.
            raise DeliveryFailed(f"slack webhook failed: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise DeliveryFailed(f"slack webhook answered HTTP {response.status_code}")
