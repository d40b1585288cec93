"""The SNS channel: a report's plain-text body, its subject, and its attributes for filter policies."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from tuning_governor.adapters.channels.secrets import error_code
from tuning_governor.errors import DeliveryFailed

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

    from tuning_governor.adapters.channels import ChannelClients
    from tuning_governor.domain.reports import Report


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
            raise DeliveryFailed(f"{self.channel}: sns publish to {self._topic_arn} failed: {error_code(exc)}") from exc


PERMISSIONS = SnsNotifier.permissions


def build(target: str, *, channel: str, clients: ChannelClients) -> SnsNotifier:
    """The notifier publishing to the topic ``target`` under the delivery name ``channel``."""
    return SnsNotifier(clients.sns(), target, channel=channel)
