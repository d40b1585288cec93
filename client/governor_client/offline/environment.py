"""The governor's AWS resources on moto, and the handlers' adapters wired to them.

Used by the integration tests, the simulator, the demo and replays: the governor's table (in memory,
:class:`governor_client.memory.MemoryStore`, or on moto shaped as in template.yaml: ``store``), one
report topic with an SQS queue subscribed (so tests read what SNS delivered), a Slack webhook secret
pointing at a local server, and ``Services`` built from those. With ``slack_secret_prefix`` /
``team_topic_prefix`` the teams' own channels are wired too (secrets and topics the test creates;
``subscribe_queue`` reads a team topic). Call inside ``moto.mock_aws()``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import boto3

from governor_client.cli.defaults import STORE_KINDS, StoreKind
from governor_client.memory import MemoryStore
from governor_client.offline import moto_signing, moto_speed, shared_loader, sns_key, user_agent
from tuning_governor.adapters.channels import ChannelClients, ChannelNotifiers, default_notifiers
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.adapters.quotas import QuotaGateway
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.submissions import SageMakerLauncher
from tuning_governor.app.services import Services
from tuning_governor.app.wiring import channel_grants
from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog
from tuning_governor.policy import Policy
from tuning_governor.ports import Notifier
from tuning_governor.settings import Settings

TABLE_NAME = "tuning-governor-offline"
TOPIC_NAME = "tuning-governor-reports"
SECRET_NAME = "tuning-governor/slack-webhook"  # noqa: S105 - a secret name, not a secret
#: Environment variable choosing the store of the simulator and the demo when a caller does not.
STORE_VARIABLE = "TUNING_GOVERNOR_STORE"


def store_kind(value: str | None = None) -> StoreKind:
    """The offline store to use: ``value``, else ``$TUNING_GOVERNOR_STORE``, else ``memory``.

    ``memory`` is the in-memory adapter (fast, flat in memory); ``moto`` the DynamoDB adapter on moto's
    DynamoDB (the full AWS path). ValueError for anything else.
    """
    chosen = value or os.environ.get(STORE_VARIABLE) or "memory"
    if chosen not in STORE_KINDS:
        raise ValueError(f"store {chosen!r} is not one of: {', '.join(STORE_KINDS)}")
    return "moto" if chosen == "moto" else "memory"


def create_table(client: Any, name: str = TABLE_NAME) -> None:
    """The table as template.yaml declares it (keys, GSI, TTL). On moto, its two whole-table costs are
    made per request first (``governor_client.offline.moto_speed``)."""
    moto_speed.install()
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "gsi1pk", "AttributeType": "S"},
            {"AttributeName": "gsi1sk", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "gsi1",
                "KeySchema": [
                    {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                    {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    client.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"})


@dataclass
class OfflineEnvironment:
    """Handles on everything the demo and tests inspect."""

    region: str
    settings: Settings
    services: Services
    topic_arn: str
    queue_url: str
    slack_url: str | None
    sagemaker: Any
    dynamodb: Any
    """The DynamoDB client of the table on moto; None with the in-memory store."""
    sqs: Any
    sns_messages_seen: list[dict[str, Any]] = field(default_factory=list)
    secrets: Any = None
    """The Secrets Manager client the Slack notifier reads its webhook through (fault tests hook it)."""
    store_kind: StoreKind = "moto"

    def sns_messages(self) -> list[dict[str, Any]]:
        """Drain the queue subscribed to the report topic: SNS envelopes, oldest first."""
        while True:
            batch = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return self.sns_messages_seen
            for message in batch:
                self.sns_messages_seen.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


def subscribe_queue(sns_client: Any, sqs: Any, topic_arn: str, queue_name: str) -> str:
    """An SQS queue subscribed to ``topic_arn`` (raw delivery off: bodies are SNS envelopes); its URL."""
    queue_url = str(sqs.create_queue(QueueName=queue_name)["QueueUrl"])
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns_client.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    return queue_url


def build_environment(  # noqa: PLR0913 - which offline adapters to build, keyword-only with defaults
    *,
    region: str = "us-east-1",
    slack_url: str | None = None,
    catalog: PriceCatalog | None = None,
    clock: Any = None,
    sns: bool = True,
    policy: Policy | None = None,
    quotas: bool = True,
    slack_secret_prefix: str = "",
    team_topic_prefix: str = "",
    store: str = "moto",
) -> OfflineEnvironment:
    """Create the resources on moto and return adapters wired to them (Slack only when a URL is given;
    teams' own channels only under a prefix, as the template grants them).

    ``store``: ``moto`` (the default: the table on moto, :attr:`OfflineEnvironment.dynamodb` its client,
    as the integration tests inspect it) or ``memory`` (:class:`MemoryStore`, no table; what the
    simulator, the demo and replays use unless told otherwise, see :func:`store_kind`).
    """
    kind = store_kind(store)
    dynamodb, table = _store(kind, region)
    channels = _channels(region, slack_url)
    settings = _settings(
        channels, sns=sns, slack_secret_prefix=slack_secret_prefix, team_topic_prefix=team_topic_prefix, region=region
    )
    sagemaker = boto3.client("sagemaker", region_name=region)
    services = _services(settings, table, _notifiers(channels, sns), sagemaker, catalog or bundled_catalog())
    if slack_secret_prefix or team_topic_prefix:
        services.team_notifiers = _team_notifiers(channels)
    if clock is not None:
        services.clock = clock
    if policy is not None:
        services.policy = lambda: policy
    if quotas:
        # Service Quotas for sagemaker are answered by the AMT stand-in when it is installed.
        services.quotas = QuotaGateway(boto3.client("service-quotas", region_name=region), clock=services.clock)
    return OfflineEnvironment(
        region=region,
        settings=settings,
        services=services,
        topic_arn=channels.topic_arn,
        queue_url=channels.queue_url,
        slack_url=slack_url,
        sagemaker=sagemaker,
        dynamodb=dynamodb,
        sqs=channels.sqs,
        secrets=channels.secrets,
        store_kind=kind,
    )


def _store(kind: StoreKind, region: str) -> tuple[Any, GovernorStore | MemoryStore]:
    """The DynamoDB client (None in memory) and the governor's store of ``kind``."""
    shared_loader.install()
    user_agent.install()
    moto_signing.install()
    if kind == "moto":
        dynamodb = boto3.client("dynamodb", region_name=region)
        create_table(dynamodb)
        return dynamodb, GovernorStore(dynamodb, TABLE_NAME)
    return None, MemoryStore()


@dataclass(frozen=True)
class _Channels:
    """The report topic with its inbox queue, and the Slack webhook secret (``secret_arn`` "" without one)."""

    sns_client: Any
    sqs: Any
    secrets: Any
    topic_arn: str
    queue_url: str
    secret_arn: str


def _channels(region: str, slack_url: str | None) -> _Channels:
    sns_key.install()
    sns_client = boto3.client("sns", region_name=region)
    sqs = boto3.client("sqs", region_name=region)
    topic_arn = sns_client.create_topic(Name=TOPIC_NAME, Attributes={"KmsMasterKeyId": "alias/aws/sns"})["TopicArn"]
    queue_url = subscribe_queue(sns_client, sqs, topic_arn, "report-inbox")
    secret_arn = ""
    secrets = boto3.client("secretsmanager", region_name=region)
    if slack_url:
        secret_arn = secrets.create_secret(Name=SECRET_NAME, SecretString=json.dumps({"webhook_url": slack_url}))["ARN"]
    return _Channels(sns_client, sqs, secrets, topic_arn, queue_url, secret_arn)


def _clients(channels: _Channels) -> ChannelClients:
    # No real back-off offline (the webhooks are local servers): a refused post is retried at once.
    return ChannelClients(
        sns_client=lambda: channels.sns_client, secrets_client=lambda: channels.secrets, sleep=lambda _seconds: None
    )


def _notifiers(channels: _Channels, sns: bool) -> list[Notifier]:
    # The same path as in Lambda: Powertools Parameters reads (and caches) the webhook secret.
    targets = {"sns": channels.topic_arn if sns else "", "slack": channels.secret_arn}
    return default_notifiers(targets, _clients(channels))


def _settings(
    channels: _Channels, *, sns: bool, slack_secret_prefix: str, team_topic_prefix: str, region: str
) -> Settings:
    return Settings.model_validate(
        {
            "TABLE_NAME": TABLE_NAME,
            "TOPIC_ARN": channels.topic_arn if sns else "",
            "SLACK_SECRET_ARN": channels.secret_arn,
            "SLACK_SECRET_PREFIX": slack_secret_prefix,
            "TEAM_TOPIC_PREFIX": team_topic_prefix,
            "AWS_REGION": region,
        }
    )


def _services(
    settings: Settings,
    table: GovernorStore | MemoryStore,
    notifiers: list[Notifier],
    sagemaker: Any,
    catalog: PriceCatalog,
) -> Services:
    return Services(
        settings=settings,
        # No real back-off offline: a throttled stop is retried at once.
        sagemaker=SageMakerGateway(sagemaker, sleep=lambda _seconds: None),
        stopped_jobs=SageMakerLauncher(sagemaker),
        store=table,
        notifiers=notifiers,
        catalog=catalog,
        grants=channel_grants(settings),
    )


def _team_notifiers(channels: _Channels) -> ChannelNotifiers:
    """As in Lambda: the teams' secrets read through Powertools Parameters, their topics on the SNS client."""
    return ChannelNotifiers(_clients(channels))
