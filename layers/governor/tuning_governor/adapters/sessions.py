"""Every AWS client the governor uses, asked for with the place (account, region) it acts in.

``Clients.for_place(place).client("sagemaker")`` builds a client from the session the credentials
provider gives for that place, once per (account, region, service), and reuses it while the execution
environment lives. The home account uses the default session (no STS call); another account is reached
only through a ``CredentialsProvider`` (``ports/sessions.py``), for example one that assumes a role
there. Clients stay deferred (``adapters/clients.py``): nothing is built before its first call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from functools import cache
from typing import Any

import boto3
from botocore.config import Config

from tuning_governor.adapters.clients import deferred
from tuning_governor.models.place import Place
from tuning_governor.ports.sessions import CannotAssume, CredentialsProvider
from tuning_governor.settings import get_settings

RETRYING = Config(retries={"mode": "standard", "max_attempts": 5})


class HomeOnly:
    """The default session for the home account; any other account is refused, never guessed.

    ``home_account`` is "" while the stack's account is not known: then every place is refused and only
    ``Clients.home_clients()`` (the default session, the Lambda's own account) is usable.
    """

    def __init__(self, home_account: str, session: Callable[[], Any] = boto3.session.Session) -> None:
        self.home_account = home_account
        self._session = session
        self._made: Any = None

    def default_session(self) -> Any:
        if self._made is None:
            self._made = self._session()
        return self._made

    def session_for(self, place: Place) -> Any:
        if not self.home_account or place.account != self.home_account:
            raise CannotAssume(place, "no credentials provider for accounts other than the home account")
        return self.default_session()


class PlaceClients:
    """The clients of one place (``None``: the home account and region); each made on its first call."""

    def __init__(self, owner: Clients, place: Place | None) -> None:
        self._owner = owner
        self.place = place

    def client(self, service: str, *, config: Config = RETRYING, region: str = "") -> Any:
        return self._owner.client(self.place, service, config=config, region=region)

    @property
    def sagemaker(self) -> Any:
        return self.client("sagemaker")

    @property
    def service_quotas(self) -> Any:
        return self.client("service-quotas")


class Clients:
    """The one factory of AWS clients: cached per (account, region, service)."""

    def __init__(self, home_region: str, home_account: str = "", provider: CredentialsProvider | None = None) -> None:
        self.home_region = home_region
        self._home = HomeOnly(home_account)
        self._provider: CredentialsProvider = provider if provider is not None else self._home
        self._cache: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()

    def use(self, provider: CredentialsProvider) -> None:
        """Reach other places through ``provider`` from now on (clients made before are kept)."""
        self._provider = provider

    def default_session(self) -> Any:
        """The home account's default session (shared by every home client)."""
        return self._home.default_session()

    def for_place(self, place: Place) -> PlaceClients:
        return PlaceClients(self, place)

    def home_clients(self) -> PlaceClients:
        """The stack's own account and region, on the default session (no credentials provider)."""
        return PlaceClients(self, None)

    def client(self, place: Place | None, service: str, *, config: Config = RETRYING, region: str = "") -> Any:
        """``region`` overrides the place's for global services read in one region (the Price List)."""
        where = region or (place.region if place else self.home_region)
        key = (place.account if place else "", where, service)
        with self._lock:
            made = self._cache.get(key)
            if made is None:
                made = deferred(lambda: self._make(place, where, service, config))
                self._cache[key] = made
        return made

    def _make(self, place: Place | None, region: str, service: str, config: Config) -> Any:
        session = self._provider.session_for(place) if place else self._home.default_session()
        return session.client(service, region_name=region, config=config)


@cache
def default_clients() -> Clients:
    """The Lambda's factory: the stack's own region and account (from its settings), the default session;
    in organisation mode, the member accounts through their member role (``adapters.assumed_roles``)."""
    settings = get_settings()
    clients = Clients(settings.region, settings.account_id)
    if settings.organization_id and settings.member_role_name and settings.account_id:
        # Organisation mode only (built here, at the cold start): a single-account stack never loads it.
        from tuning_governor.adapters.assumed_roles import AssumedRoles, MemberSessions  # noqa: PLC0415

        sts = clients.home_clients().client("sts", region=settings.region)
        # Refreshed 20 min ahead: botocore refreshes from 15 min before expiry and must get fresh ones.
        roles = AssumedRoles(sts, settings.member_role_name, refresh_before=timedelta(minutes=20))
        clients.use(MemberSessions(settings.account_id, roles, clients.default_session))
    return clients


def home_clients() -> PlaceClients:
    """The stack's own account and region: where the table, topic, secrets and today's jobs live."""
    return default_clients().home_clients()
