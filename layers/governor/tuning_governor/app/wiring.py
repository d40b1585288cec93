"""The composition root: the only module that wires adapters to ports. One builder per handler's
services, each made on first use and reused while the execution environment lives:

- ``default_services``: the tuning-events and training-events handlers, the sweep, the budget check,
  and the governance half of the queue consumer (``app.services.Services``);
- ``default_queue_services``: the queue consumer's submission path (``app.queue.admission.QueueServices``);
- ``default_refresh_services``: the daily price refresh (``app.prices.RefreshServices``).

Each builder imports the adapters it wires and its use case's bundle where it builds them, so a
handler loads only its own (the price refresh none of the event path's channels, policy or SageMaker)
and importing this root loads no use case. Tests and the simulator build the bundles with fakes or
moto-backed adapters instead."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config

from tuning_governor.adapters.clients import deferred
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.adapters.sessions import default_clients, home_clients
from tuning_governor.observability import logger, metrics
from tuning_governor.settings import Settings, get_settings

if TYPE_CHECKING:
    from tuning_governor.adapters.channels import ChannelClients, ChannelNotifiers
    from tuning_governor.adapters.checks import SchedulerChecks
    from tuning_governor.adapters.quotas import QuotaGateway
    from tuning_governor.app.prices import RefreshServices
    from tuning_governor.app.queue.admission import QueueServices
    from tuning_governor.app.services import Services
    from tuning_governor.models.place import Place
    from tuning_governor.policy import Policy, PolicySource
    from tuning_governor.policy.routing import ChannelGrants
    from tuning_governor.ports import Notifier, SageMaker

#: Standard retry mode backs off on throttling before an error reaches the governor.
RETRYING = Config(retries={"mode": "standard", "max_attempts": 5})


def _utcnow() -> datetime:
    return datetime.now(tz=UTC)


@cache
def place_sagemaker(place: Place) -> SageMaker:
    """SageMaker in ``place``, on the client factory's credentials for it (made once per place)."""
    from tuning_governor.adapters.sagemaker import SageMakerGateway  # noqa: PLC0415 - the event path's

    return SageMakerGateway(default_clients().for_place(place).sagemaker, place=place)


@cache
def place_quotas(place: Place) -> QuotaGateway:
    """Service Quotas in ``place`` (made once per place; read on first use, cached as at home)."""
    from tuning_governor.adapters.quotas import QuotaGateway  # noqa: PLC0415 - the event path's

    ttl = timedelta(seconds=get_settings().quota_cache_seconds)
    return QuotaGateway(deferred(lambda: default_clients().for_place(place).service_quotas), clock=_utcnow, ttl=ttl)


def policy_loader(source: PolicySource, grants: ChannelGrants | None = None) -> Callable[[], Policy]:
    """The policy in force for each event; a rejected policy update is counted once, never fatal.

    With ``grants``, each new policy text's team channels the stack does not grant are logged once as a
    warning (``routing_warnings``): those channels are not used, the team's reports go to the default ones.
    """
    from tuning_governor.policy.routing import routing_warnings  # noqa: PLC0415 - the event path's

    warned: set[str] = set()

    def current() -> Policy:
        loaded = source.load()
        if loaded.error is not None:
            metrics.add_metric(name="PolicyErrors", unit=MetricUnit.Count, value=1)
        if grants is not None and loaded.digest not in warned:
            warned.add(loaded.digest)
            problems = routing_warnings(loaded.policy, grants)
            if problems:
                logger.warning(
                    "policy names team channels the stack does not grant",
                    extra={
                        "policy_source": loaded.source,
                        "policy_digest": loaded.digest[:12],
                        "warnings": [f"{path}: {message}" for path, message in problems],
                    },
                )
        return loaded.policy

    return current


def channel_grants(settings: Settings) -> ChannelGrants:
    """The team channels the deployment grants (its prefixes), in its own account and region."""
    from tuning_governor.policy.routing import ChannelGrants  # noqa: PLC0415 - the event path's

    return ChannelGrants(
        slack_secret_prefix=settings.slack_secret_prefix,
        topic_prefix=settings.team_topic_prefix,
        region=settings.region,
        account=settings.account_id,
    )


def channel_clients(settings: Settings, sns: Any, retrying: Config) -> ChannelClients:
    """The clients every channel is built with, each made on first use (the SNS client shared with the
    default topic)."""
    from tuning_governor.adapters.channels import ChannelClients  # noqa: PLC0415 - the event path's

    return ChannelClients(
        sns_client=lambda: sns if sns is not None else home_clients().client("sns", config=retrying),
        # Made when a webhook is first posted to: a cold start does not pay for it.
        secrets_client=lambda: deferred(lambda: home_clients().client("secretsmanager", config=retrying)),
        secret_max_age=settings.secret_max_age_seconds,
    )


def _default_notifiers(settings: Settings, clients: ChannelClients) -> list[Notifier]:
    """The default channels: the SNS topic, the Slack webhook and any other webhook channel the stack
    configures (``CHANNEL_SECRETS``)."""
    from tuning_governor.adapters.channels import default_notifiers  # noqa: PLC0415 - the event path's

    targets = {**settings.channel_secrets, "sns": settings.topic_arn, "slack": settings.slack_secret_arn}
    # The webhooks' modules load with their first report, not at a cold start.
    return default_notifiers(targets, clients, on_first_send=True)


def _team_notifiers(grants: ChannelGrants, clients: ChannelClients) -> ChannelNotifiers | None:
    """The teams' own channels, when the stack grants any."""
    if not (grants.slack_secret_prefix or grants.topic_prefix):
        return None
    from tuning_governor.adapters.channels import ChannelNotifiers  # noqa: PLC0415 - the event path's

    return ChannelNotifiers(clients)


def _name_key(settings: Settings, retrying: Config) -> Callable[[], str]:
    """The queue's name key, read from its secret once, when a stopped job is first queued again."""
    secret = settings.queue_name_key_secret_arn
    if not secret:
        return str
    from tuning_governor.adapters.submissions import SecretNameKey  # noqa: PLC0415 - the event path's

    return cache(lambda: SecretNameKey(home_clients().client("secretsmanager", config=retrying), secret).read())


def _checks(settings: Settings, retrying: Config) -> SchedulerChecks | None:
    """One-time budget checks through EventBridge Scheduler, when the stack wires a target for them."""
    if not (settings.budget_check_target_arn and settings.budget_check_role_arn):
        return None
    from tuning_governor.adapters.checks import SchedulerChecks  # noqa: PLC0415 - the event path's

    return SchedulerChecks(
        lambda: home_clients().client("scheduler", config=retrying),
        group=settings.budget_check_group,
        target_arn=settings.budget_check_target_arn,
        role_arn=settings.budget_check_role_arn,
    )


def _policy(settings: Settings, retrying: Config, grants: ChannelGrants) -> Callable[[], Policy]:
    """The policy in force: the stack's SSM parameter (or file), read through its loader."""
    from aws_lambda_powertools.utilities.parameters import SSMProvider  # noqa: PLC0415 - the event path's

    from tuning_governor.policy import policy_source  # noqa: PLC0415 - the event path's

    ssm = SSMProvider(boto3_client=home_clients().client("ssm", config=retrying)) if settings.policy_parameter else None
    source = policy_source(
        parameter=settings.policy_parameter,
        file=settings.policy_file,
        ssm=ssm,
        max_age_seconds=settings.policy_max_age_seconds,
    )
    return policy_loader(source, grants)


@cache
def default_services() -> Services:
    """The event path's adapters for Lambda: the tuning-events, training-events, sweep and budget-check
    handlers, and the queue consumer's governance half."""
    from tuning_governor.adapters.quotas import QuotaGateway  # noqa: PLC0415 - the event path's
    from tuning_governor.adapters.sagemaker import SageMakerGateway  # noqa: PLC0415 - the event path's
    from tuning_governor.adapters.submissions import SageMakerLauncher  # noqa: PLC0415 - the event path's
    from tuning_governor.app.services import Services, StoredPrices  # noqa: PLC0415 - the event path's

    settings = get_settings()
    retrying = RETRYING
    sns = deferred(lambda: home_clients().client("sns", config=retrying)) if settings.topic_arn else None
    clients = channel_clients(settings, sns, retrying)
    grants = channel_grants(settings)
    store = GovernorStore(
        home_clients().client("dynamodb", config=retrying),
        settings.table_name,
        trial_retention_days=settings.trial_retention_days,
    )
    sagemaker = home_clients().client("sagemaker", config=retrying)
    return Services(
        settings=settings,
        sagemaker=SageMakerGateway(sagemaker),
        stopped_jobs=SageMakerLauncher(sagemaker),
        queue_name_key=_name_key(settings, retrying),
        store=store,
        stored_prices=StoredPrices(store, clock=_utcnow, ttl=timedelta(seconds=settings.price_cache_seconds)),
        notifiers=_default_notifiers(settings, clients),
        team_notifiers=_team_notifiers(grants, clients),
        grants=grants,
        policy=_policy(settings, retrying, grants),
        quotas=QuotaGateway(
            deferred(lambda: home_clients().client("service-quotas", config=retrying)),
            clock=_utcnow,
            ttl=timedelta(seconds=settings.quota_cache_seconds),
        ),
        checks=_checks(settings, retrying),
        sagemaker_at=place_sagemaker,
        quotas_at=place_quotas,
    )


@cache
def default_queue_services() -> QueueServices:
    """The submission path's adapters for Lambda, made on first use (IAM only when a sender is resolved),
    with the stack's name key (its secret read once; the template always sets it)."""
    from tuning_governor.adapters.submissions import (  # noqa: PLC0415 - the queue's
        IamPrincipals,
        SageMakerLauncher,
        SecretNameKey,
    )
    from tuning_governor.app.queue.admission import QueueServices  # noqa: PLC0415 - the queue's

    sagemaker = SageMakerLauncher(home_clients().client("sagemaker", config=RETRYING))
    secret = get_settings().queue_name_key_secret_arn
    key = SecretNameKey(home_clients().client("secretsmanager", config=RETRYING), secret).read() if secret else ""
    return QueueServices(
        launcher=sagemaker,
        principals=IamPrincipals(deferred(lambda: home_clients().client("iam", config=RETRYING))),
        stopped_jobs=sagemaker,
        name_key=key,
    )


@cache
def default_refresh_services() -> RefreshServices:
    """The price refresh's adapters for Lambda: the Price List Query API and the table."""
    from tuning_governor.adapters.pricing import PRICING_REGION, PriceListGateway  # noqa: PLC0415 - the refresh's
    from tuning_governor.app.prices import RefreshServices  # noqa: PLC0415 - the refresh's

    settings = get_settings()
    # A read that hangs costs its region at most 3 x 15 s, not the function's 300 s for every region.
    bounded = Config(connect_timeout=5, read_timeout=15, retries={"mode": "standard", "max_attempts": 3})
    return RefreshServices(
        # The Query API has no endpoint in most regions: always ask us-east-1.
        pricing=PriceListGateway(home_clients().client("pricing", config=bounded, region=PRICING_REGION)),
        store=GovernorStore(home_clients().client("dynamodb", config=RETRYING), settings.table_name),
    )
