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
from typing import Any

import boto3
from botocore.config import Config

from tuning_governor.adapters.clients import deferred
from tuning_governor.models.place import Place
from tuning_governor.ports.sessions import CannotAssume, CredentialsProvider

RETRYING = Config(retries={"mode": "standard", "max_attempts": 5})


class HomeOnly:
    """The default session for the home account; any other account is refused, never guessed."""

    def __init__(self, home: Place, session: Callable[[], Any] = boto3.session.Session) -> None:
        self.home = home
        self._session = session
        self._made: Any = None

    def session_for(self, place: Place) -> Any:
        if place.account != self.home.account:
            raise CannotAssume(place, "no credentials provider for accounts other than the home account")
        if self._made is None:
            self._made = self._session()
        return self._made


class PlaceClients:
    """The clients of one place; each service's client is made on its first call."""

    def __init__(self, owner: Clients, place: Place) -> None:
        self._owner = owner
        self.place = place

    def client(self, service: str, *, config: Config = RETRYING) -> Any:
        return self._owner.client(self.place, service, config=config)

    @property
    def sagemaker(self) -> Any:
        return self.client("sagemaker")

    @property
    def service_quotas(self) -> Any:
        return self.client("service-quotas")


class Clients:
    """The one factory of AWS clients: cached per (account, region, service)."""

    def __init__(self, home: Place, provider: CredentialsProvider | None = None) -> None:
        self.home = home
        self._provider: CredentialsProvider = provider if provider is not None else HomeOnly(home)
        self._cache: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()

    def for_place(self, place: Place) -> PlaceClients:
        return PlaceClients(self, place)

    def home_clients(self) -> PlaceClients:
        return PlaceClients(self, self.home)

    def client(self, place: Place, service: str, *, config: Config = RETRYING) -> Any:
        key = (place.account, place.region, service)
        with self._lock:
            made = self._cache.get(key)
            if made is None:
                made = deferred(lambda: self._make(place, service, config))
                self._cache[key] = made
        return made

    def _make(self, place: Place, service: str, config: Config) -> Any:
        session = self._provider.session_for(place)
        return session.client(service, region_name=place.region, config=config)
