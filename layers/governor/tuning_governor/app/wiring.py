"""The composition root: the adapters a handler runs with (``default_services`` in Lambda; tests
and the simulator build ``Services`` with fakes or moto-backed adapters)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parameters import SSMProvider
from botocore.config import Config

from tuning_governor.adapters.channels import ChannelClients, ChannelNotifiers, default_notifiers
from tuning_governor.adapters.checks import SchedulerChecks
from tuning_governor.adapters.clients import deferred
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.adapters.quotas import QuotaGateway
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.sessions import default_clients, home_clients
from tuning_governor.adapters.submissions import SageMakerLauncher, SecretNameKey
from tuning_governor.app.stored_prices import StoredPrices
from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog
from tuning_governor.domain.reports import Report
from tuning_governor.models.place import Place, ledger_pk
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy, PolicySource, policy_source
from tuning_governor.policy.routing import ChannelGrants, routing_warnings, team_channels
from tuning_governor.ports import CheckScheduler, Notifier, SageMaker, Store
from tuning_governor.ports.sessions import CannotAssume
from tuning_governor.ports.submissions import StoppedJobs
from tuning_governor.settings import Settings, get_settings


def _utcnow() -> datetime:
    return datetime.now(tz=UTC)


def _default_policy() -> Policy:
    return Policy()


@dataclass
class Services:
    """Everything a handler needs, injected: tests pass moto-backed or fake adapters."""

    settings: Settings
    sagemaker: SageMaker
    store: Store
    """The governor's table (the port; DynamoDB in Lambda, in memory offline)."""
    notifiers: list[Notifier] = field(default_factory=list)
    catalog: PriceCatalog = field(default_factory=bundled_catalog)
    clock: Callable[[], datetime] = _utcnow
    policy: Callable[[], Policy] = _default_policy
    """The governance policy in force (cached by its loader; called once per event)."""
    quotas: QuotaGateway | None = None
    stored_prices: StoredPrices | None = None
    """The refreshed catalogs in DynamoDB (None: trials are priced from ``catalog`` and the policy only)."""
    checks: CheckScheduler | None = None
    """Where one-time budget checks are scheduled (None: budgets are judged on events and sweeps only)."""
    team_notifiers: ChannelNotifiers | None = None
    """The teams' own channels (None: every report goes to ``notifiers`` only)."""
    grants: ChannelGrants = field(default_factory=ChannelGrants)
    """Which team secrets and topics the stack may use (see ``tuning_governor.policy.routing``)."""
    stopped_jobs: StoppedJobs | None = None
    queue_name_key: Callable[[], str] = str
    """The stack's secret name key for the jobs it queues again (read on first use; "" offline)."""
    """Reads a job the governor stopped to make room, to queue it again when its Stopped event reached
    no queue consumer (``app.queue_requeue``; None: only the consumer requeues)."""
    sagemaker_at: Callable[[Place], SageMaker] | None = None
    """SageMaker in another account or region (None: only the home place's jobs can be acted on)."""
    quotas_at: Callable[[Place], QuotaGateway] | None = None
    """Service Quotas in another account or region (None: only the policy's quotas apply there)."""
    place: Place | None = None
    """Where ``sagemaker``, ``quotas`` and the store's capacity ledger act (None: the home place)."""

    @property
    def home(self) -> Place | None:
        """The stack's own account and region (None while its account is not known)."""
        return home_place(self.settings)

    def sagemaker_for(self, place: Place | None) -> SageMaker:
        """SageMaker where a job runs: ``sagemaker`` for the home place (None), else the place's own;
        a place the stack has no way into is refused (``CannotAssume``), never acted on at home."""
        wanted = None if place == self.home else place
        if wanted == self.place:
            return self.sagemaker
        if wanted is None:
            raise ValueError("a place's services do not act in the home place")
        if self.sagemaker_at is None:
            raise CannotAssume(wanted, "this deployment acts in its own account and region only")
        return self.sagemaker_at(wanted)

    def at(self, place: Place | None) -> Services:
        """These services for a job in ``place``: its SageMaker, its Service Quotas and its capacity
        ledger (``models.place.ledger_pk``); the same table, channels and policy. Home: these."""
        wanted = None if place == self.home else place
        if wanted == self.place:
            return self
        if self.place is not None:
            raise ValueError("a place's services are made from the home place's")
        assert wanted is not None
        return replace(
            self,
            place=wanted,
            sagemaker=self.sagemaker_for(wanted),
            quotas=self.quotas_at(wanted) if self.quotas_at is not None else None,
            store=self.store.ledger_at(ledger_pk(wanted, None)),
        )

    def notifiers_for(self, report: Report, policy: Policy) -> list[Notifier]:
        """Every channel ``report`` goes to: the default ones (always), then its team's own, if the
        policy names them and the stack grants them (``routing.team_channels``)."""
        if self.team_notifiers is None:
            return list(self.notifiers)
        channels = team_channels(report, policy, self.grants)
        team = [self.team_notifiers.notifier(c.kind, c.target, c.channel) for c in channels]
        return [*self.notifiers, *team]

    def price_catalog(self, policy: Policy) -> PriceCatalog:
        """The prices in force, first found wins: the refreshed catalog in DynamoDB, then ``catalog`` (the
        bundled one), then the policy's per-region and all-region ``prices``; see domain.pricing."""
        catalog = self.catalog
        stored = self.stored_prices.catalog() if self.stored_prices is not None else None
        if stored is not None:
            catalog = stored.over(catalog)
        return catalog.with_policy_prices(policy.price_overrides(), policy.regional_prices())


def home_place(settings: Settings) -> Place | None:
    """The stack's own place: its account (from the reports topic's ARN) and its region."""
    return Place(settings.account_id, settings.region) if settings.account_id else None


@cache
def place_sagemaker(place: Place) -> SageMaker:
    """SageMaker in ``place``, on the client factory's credentials for it (made once per place)."""
    return SageMakerGateway(default_clients().for_place(place).sagemaker, place=place)


@cache
def place_quotas(place: Place) -> QuotaGateway:
    """Service Quotas in ``place`` (made once per place; read on first use, cached as at home)."""
    ttl = timedelta(seconds=get_settings().quota_cache_seconds)
    return QuotaGateway(deferred(lambda: default_clients().for_place(place).service_quotas), clock=_utcnow, ttl=ttl)


def policy_loader(source: PolicySource, grants: ChannelGrants | None = None) -> Callable[[], Policy]:
    """The policy in force for each event; a rejected policy update is counted once, never fatal.

    With ``grants``, each new policy text's team channels the stack does not grant are logged once as a
    warning (``routing_warnings``): those channels are not used, the team's reports go to the default ones.
    """
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
    return ChannelGrants(
        slack_secret_prefix=settings.slack_secret_prefix,
        topic_prefix=settings.team_topic_prefix,
        region=settings.region,
        account=settings.account_id,
    )


def channel_clients(settings: Settings, sns: Any, retrying: Config) -> ChannelClients:
    """The clients every channel is built with, each made on first use (the SNS client shared with the
    default topic)."""
    return ChannelClients(
        sns_client=lambda: sns if sns is not None else home_clients().client("sns", config=retrying),
        # Made when a webhook is first posted to: a cold start does not pay for it.
        secrets_client=lambda: deferred(lambda: home_clients().client("secretsmanager", config=retrying)),
        secret_max_age=settings.secret_max_age_seconds,
    )


def _default_notifiers(settings: Settings, clients: ChannelClients) -> list[Notifier]:
    """The default channels: the SNS topic, the Slack webhook and any other webhook channel the stack
    configures (``CHANNEL_SECRETS``)."""
    targets = {**settings.channel_secrets, "sns": settings.topic_arn, "slack": settings.slack_secret_arn}
    return default_notifiers(targets, clients)


def _team_notifiers(grants: ChannelGrants, clients: ChannelClients) -> ChannelNotifiers | None:
    """The teams' own channels, when the stack grants any."""
    if not (grants.slack_secret_prefix or grants.topic_prefix):
        return None
    return ChannelNotifiers(clients)


def _name_key(settings: Settings, retrying: Config) -> Callable[[], str]:
    """The queue's name key, read from its secret once, when a stopped job is first queued again."""
    secret = settings.queue_name_key_secret_arn
    if not secret:
        return str
    return cache(lambda: SecretNameKey(home_clients().client("secretsmanager", config=retrying), secret).read())


def _checks(settings: Settings, retrying: Config) -> SchedulerChecks | None:
    """One-time budget checks through EventBridge Scheduler, when the stack wires a target for them."""
    if not (settings.budget_check_target_arn and settings.budget_check_role_arn):
        return None
    return SchedulerChecks(
        lambda: home_clients().client("scheduler", config=retrying),
        group=settings.budget_check_group,
        target_arn=settings.budget_check_target_arn,
        role_arn=settings.budget_check_role_arn,
    )


@cache
def default_services() -> Services:
    """Adapters for Lambda, built on first use and reused while the execution environment lives."""
    settings = get_settings()
    # Standard retry mode backs off on throttling before an error reaches the governor.
    retrying = Config(retries={"mode": "standard", "max_attempts": 5})
    sns = deferred(lambda: home_clients().client("sns", config=retrying)) if settings.topic_arn else None
    clients = channel_clients(settings, sns, retrying)
    notifiers = _default_notifiers(settings, clients)
    ssm = SSMProvider(boto3_client=home_clients().client("ssm", config=retrying)) if settings.policy_parameter else None
    source = policy_source(
        parameter=settings.policy_parameter,
        file=settings.policy_file,
        ssm=ssm,
        max_age_seconds=settings.policy_max_age_seconds,
    )
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
        notifiers=notifiers,
        team_notifiers=_team_notifiers(grants, clients),
        grants=grants,
        policy=policy_loader(source, grants),
        quotas=QuotaGateway(
            deferred(lambda: home_clients().client("service-quotas", config=retrying)),
            clock=_utcnow,
            ttl=timedelta(seconds=settings.quota_cache_seconds),
        ),
        checks=_checks(settings, retrying),
        sagemaker_at=place_sagemaker,
        quotas_at=place_quotas,
    )
