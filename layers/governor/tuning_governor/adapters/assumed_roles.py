"""Credentials in a member account: STS AssumeRole of the member role, per (account, region), cached.

The member stack names its role ``<name>-<region>`` (IAM roles are global; one stack per region), so
each (account, region) has a role of its own. Credentials are kept until ``refresh_before`` ahead of
their expiry. The sweep walks places in threads: one lock per (account, region) makes the threads that
ask for the same place at once share one AssumeRole. A denied or failed AssumeRole raises ``MemberUnreachable`` (retried, then dead-lettered
by the caller's event path), never another account's credentials.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import boto3
import botocore.session
from botocore.credentials import CredentialProvider, RefreshableCredentials
from botocore.exceptions import BotoCoreError, ClientError

from tuning_governor.errors import PlaceUnreachable
from tuning_governor.models.place import Place

ROLE_ARN = "arn:{partition}:iam::{account}:role/{name}-{region}"


class MemberUnreachable(PlaceUnreachable):
    """The member role of (account, region) cannot be assumed: the member is unmanaged for now."""


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str
    session_token: str
    expiration: datetime


class AssumedRoles:
    """``credentials(account, region)``: one AssumeRole per (account, region) until near expiry."""

    permissions: ClassVar[dict[str, str]] = {"credentials": "sts:AssumeRole"}

    def __init__(
        self,
        sts: Any,
        role_name: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        partition: str = "aws",
        refresh_before: timedelta = timedelta(minutes=5),
        session_name: str = "tuning-governor",
    ) -> None:
        self._sts = sts
        self._role_name = role_name
        self._clock = clock
        self._partition = partition
        self._refresh_before = refresh_before
        self._session_name = session_name
        self._cache: dict[tuple[str, str], Credentials] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self.fetched = 0
        """AssumeRole calls made (the benchmark's credentials fetched)."""

    def role_arn(self, account: str, region: str) -> str:
        return ROLE_ARN.format(partition=self._partition, account=account, name=self._role_name, region=region)

    def credentials(self, account: str, region: str) -> Credentials:
        key = (account, region)
        cached = self._fresh(key)
        if cached is not None:
            return cached
        with self._locks_lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # another thread may have fetched them while this one waited
            cached = self._fresh(key)
            return cached if cached is not None else self._assume(account, region)

    def _fresh(self, key: tuple[str, str]) -> Credentials | None:
        cached = self._cache.get(key)
        if cached is not None and cached.expiration - self._refresh_before > self._clock():
            return cached
        return None

    def _assume(self, account: str, region: str) -> Credentials:
        try:
            answer = self._sts.assume_role(
                RoleArn=self.role_arn(account, region), RoleSessionName=self._session_name, DurationSeconds=3600
            )
        except ClientError as exc:
            self._cache.pop((account, region), None)
            raise MemberUnreachable(account, region, exc.response.get("Error", {}).get("Code", "error")) from exc
        except BotoCoreError as exc:
            raise MemberUnreachable(account, region, type(exc).__name__) from exc
        self.fetched += 1
        got = answer["Credentials"]
        fresh = Credentials(got["AccessKeyId"], got["SecretAccessKey"], got["SessionToken"], got["Expiration"])
        self._cache[(account, region)] = fresh
        return fresh

    def session_kwargs(self, account: str, region: str) -> dict[str, str]:
        """Arguments for ``boto3.session.Session`` acting in (account, region)."""
        c = self.credentials(account, region)
        return {
            "aws_access_key_id": c.access_key_id,
            "aws_secret_access_key": c.secret_access_key,
            "aws_session_token": c.session_token,
            "region_name": region,
        }


class MemberSessions:
    """The organisation's credentials provider (``ports.sessions.CredentialsProvider``): the home
    account's places on the default session, any other account through its member role.

    A member's session holds refreshable credentials fed by ``roles``, so a client the factory caches
    never outlives them; a role that cannot be assumed raises ``MemberUnreachable`` when the session is
    made (and again at a refresh), never another account's credentials.

    Every member session shares one botocore data loader (the parsed service models): a session of its
    own would parse them again, about 20 MB per place for SageMaker and Service Quotas (measured,
    benchmarks/org_calls.py), 10 GB at 500 places, Lambda's most."""

    method = "tuning-governor-member-role"

    def __init__(self, home_account: str, roles: AssumedRoles, default_session: Callable[[], Any]) -> None:
        self._home_account = home_account
        self._roles = roles
        self._default_session = default_session
        self._loader: Any = None

    def session_for(self, place: Place) -> Any:
        if place.account == self._home_account:
            return self._default_session()

        def fetch() -> dict[str, str]:
            c = self._roles.credentials(place.account, place.region)
            return {
                "access_key": c.access_key_id,
                "secret_key": c.secret_access_key,
                "token": c.session_token,
                "expiry_time": c.expiration.astimezone(UTC).isoformat(),
            }

        credentials = RefreshableCredentials.create_from_metadata(fetch(), fetch, self.method)
        core = botocore.session.Session()
        if self._loader is None:
            self._loader = core.get_component("data_loader")
        core.register_component("data_loader", self._loader)
        core.get_component("credential_provider").insert_before("env", _Fixed(credentials))
        return boto3.session.Session(botocore_session=core, region_name=place.region)


class _Fixed(CredentialProvider):
    """A botocore credential provider that answers with the member's refreshable credentials."""

    METHOD = MemberSessions.method
    CANONICAL_NAME = "tuning-governor-member-role"

    def __init__(self, credentials: RefreshableCredentials) -> None:
        super().__init__()
        self._credentials = credentials

    def load(self) -> RefreshableCredentials:
        return self._credentials
