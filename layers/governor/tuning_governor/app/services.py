"""What a use case runs with: ``Services``, the ports, settings and policy a handler's use case is given
(built with adapters only by the composition root, ``app.wiring``; tests and the simulator build it
with fakes or moto-backed adapters), and ``StoredPrices``, the refreshed price catalogs it prices with
(written daily by ``app.prices``, read with one Query and cached per execution environment for
``ttl``: prices change monthly at most, a refresh is daily)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog, stored_catalog
from tuning_governor.domain.reports import Report
from tuning_governor.models.place import Place, ledger_pk
from tuning_governor.policy import Policy
from tuning_governor.policy.accounts import under_account_terms
from tuning_governor.policy.routing import ChannelGrants, team_channels
from tuning_governor.ports import CheckScheduler, Notifier, PriceStore, SageMaker, Store
from tuning_governor.ports.sessions import CannotAssume
from tuning_governor.ports.submissions import StoppedJobs
from tuning_governor.settings import Settings

if TYPE_CHECKING:  # the adapters' types, named for typing only: app.wiring builds them
    from tuning_governor.adapters.channels import ChannelNotifiers
    from tuning_governor.adapters.quotas import QuotaGateway
    from tuning_governor.governance.ports import EngineServices

    class AppServices[S](EngineServices[S], Protocol):
        """What a use case runs with, its store narrowed to ``S`` (the join of the areas it uses,
        ``ports.uses``): the engine's services and the application's own. ``Services`` satisfies it
        for every ``S`` its ``Store`` joins (``store`` is read-only here); typing only."""

        @property
        def notifiers(self) -> list[Notifier]: ...
        @property
        def stopped_jobs(self) -> StoppedJobs | None: ...
        @property
        def queue_name_key(self) -> Callable[[], str]: ...

        def at(self, place: Place | None) -> AppServices[S]: ...
        def with_policy(self, policy: Callable[[], Policy]) -> AppServices[S]: ...


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
    no queue consumer (``app.queue.requeue``; None: only the consumer requeues)."""
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
        ledger (``models.place.ledger_pk``), the policy under its account's terms (a member in monitor
        mode is judged under the monitoring copy); the same table and channels. Home: these."""
        wanted = None if place == self.home else place
        if wanted == self.place:
            return self
        if self.place is not None:
            raise ValueError("a place's services are made from the home place's")
        assert wanted is not None
        hub_policy, account = self.policy, wanted.account
        return replace(
            self,
            place=wanted,
            policy=lambda: under_account_terms(hub_policy(), account),
            sagemaker=self.sagemaker_for(wanted),
            quotas=self.quotas_at(wanted) if self.quotas_at is not None else None,
            store=self.store.ledger_at(ledger_pk(wanted, None)),
        )

    def with_policy(self, policy: Callable[[], Policy]) -> Services:
        """These services judging under ``policy`` (the same ports, place and channels)."""
        return replace(self, policy=policy)

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


DEFAULT_TTL = timedelta(hours=1)


@dataclass
class StoredPrices:
    """The refreshed catalogs, read from the store at most once per ``ttl``."""

    store: PriceStore
    clock: Callable[[], datetime] = _utcnow
    ttl: timedelta = DEFAULT_TTL
    _cached: PriceCatalog | None = field(default=None, init=False)
    _read_at: datetime | None = field(default=None, init=False)

    def catalog(self) -> PriceCatalog | None:
        """The stored catalog, or None before the first refresh has stored anything."""
        now = self.clock()
        if self._read_at is None or now - self._read_at >= self.ttl:
            catalogs = self.store.price_catalogs()
            self._cached = stored_catalog(catalogs) if catalogs else None
            self._read_at = now
        return self._cached
