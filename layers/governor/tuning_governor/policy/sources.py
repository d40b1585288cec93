"""Where the policy text comes from: a file (default: the conservative policy bundled in the layer) or
an SSM parameter through Powertools Parameters; the last good policy stays in force when an update is
invalid or a read fails."""

from __future__ import annotations

import hashlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from tuning_governor.observability import logger
from tuning_governor.policy.document import parse_policy
from tuning_governor.policy.errors import PolicyError, PolicyUnavailable
from tuning_governor.policy.model import Policy

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SSMProvider

DEFAULT_MAX_AGE_SECONDS = 300.0
BUNDLED_POLICY = "default-policy.yaml"


@dataclass(frozen=True)
class LoadedPolicy:
    """The policy in force and where it came from.

    ``error`` is set on the one load that first met a problem (an invalid update, a failed read): the
    caller should log or count it; later loads return the same policy with ``error`` None. ``stale`` is
    True while the policy in force is the last good one because the source's latest text or read failed.
    """

    policy: Policy
    source: str
    digest: str
    """sha256 of the text the policy was parsed from."""
    error: PolicyError | PolicyUnavailable | None = None
    stale: bool = False

    @property
    def warnings(self) -> list[str]:
        """The policy's own warnings (deprecated keys); logged once when this text is first loaded."""
        return self.policy.warnings()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class PolicySource(ABC):
    """Where the policy text lives. ``load()`` re-reads it at most every ``max_age_seconds``.

    The text is parsed again only when its sha256 changed. When a new text is invalid (or a read fails),
    the last good policy stays in force, the problem is logged and returned once in
    ``LoadedPolicy.error``, and the same bad text is not re-parsed. With no good policy yet, ``load()``
    raises ``PolicyError`` or ``PolicyUnavailable`` instead. ``clock`` returns seconds (monotonic);
    tests pass their own to move time.
    """

    def __init__(
        self,
        name: str,
        *,
        max_age_seconds: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self._max_age = max_age_seconds
        self._clock = clock
        self._checked_at: float | None = None
        self._current: LoadedPolicy | None = None
        self._bad_digest: str | None = None
        self._bad_error: PolicyError | None = None

    @abstractmethod
    def read_text(self) -> str:
        """The current text of the policy; raises ``PolicyUnavailable`` when it cannot be read."""

    def _fresh(self, now: float) -> bool:
        if self._checked_at is None:
            return False
        return self._max_age is None or now - self._checked_at < self._max_age

    def load(self) -> LoadedPolicy:
        """The policy to apply now (see the class docstring for caching and the last-good rule)."""
        now = self._clock()
        current = self._current
        if current is not None and self._fresh(now):
            return current
        self._checked_at = now
        try:
            text = self.read_text()
        except PolicyUnavailable as exc:
            if current is None:
                raise
            return self._keep_on_unreadable(current, exc)
        digest = _digest(text)
        if current is not None and digest == current.digest:
            self._current = replace(current, error=None, stale=False)
            return self._current
        if digest == self._bad_digest and self._bad_error is not None:
            if current is None:
                raise self._bad_error
            return current  # already reported when this text first appeared
        try:
            policy = parse_policy(text, self.name)
        except PolicyError as exc:
            self._bad_digest, self._bad_error = digest, exc
            if current is None:
                raise
            return self._keep_on_rejected(current, exc)
        return self._adopt(policy, digest)

    def _keep_on_unreadable(self, current: LoadedPolicy, exc: PolicyUnavailable) -> LoadedPolicy:
        logger.warning(
            "policy source unreadable; keeping the last good policy",
            extra={"policy_source": self.name, "reason": str(exc), "policy_digest": current.digest[:12]},
        )
        self._current = replace(current, error=None, stale=True)
        return replace(current, error=exc, stale=True)

    def _keep_on_rejected(self, current: LoadedPolicy, exc: PolicyError) -> LoadedPolicy:
        logger.error(
            "policy update rejected; keeping the last good policy",
            extra={
                "policy_source": self.name,
                "problems": list(exc.problems),
                "policy_digest": current.digest[:12],
            },
        )
        self._current = replace(current, error=None, stale=True)
        return replace(current, error=exc, stale=True)

    def _adopt(self, policy: Policy, digest: str) -> LoadedPolicy:
        self._bad_digest, self._bad_error = None, None
        self._current = LoadedPolicy(policy=policy, source=self.name, digest=digest)
        logger.info(
            "policy loaded",
            extra={"policy_source": self.name, "policy_digest": digest[:12], "policy_mode": policy.mode},
        )
        if policy.warnings():
            logger.warning(
                "policy loaded with warnings",
                extra={"policy_source": self.name, "policy_digest": digest[:12], "warnings": policy.warnings()},
            )
        return self._current


class FilePolicySource(PolicySource):
    """A policy file: a path, or a resource inside a package. Read once unless ``max_age_seconds`` is set
    (files deployed with a function do not change while its execution environment lives)."""

    def __init__(
        self,
        path: str | Path | Traversable,
        *,
        name: str | None = None,
        max_age_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._path: Path | Traversable = Path(path) if isinstance(path, str) else path
        super().__init__(name or f"file:{path}", max_age_seconds=max_age_seconds, clock=clock)

    def read_text(self) -> str:
        try:
            return self._path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyUnavailable(self.name, f"{type(exc).__name__}: {exc}") from exc


class SsmPolicySource(PolicySource):
    """An SSM parameter (String or SecureString, decrypted), read through Powertools' ``SSMProvider``.

    This source's clock decides when to re-read and then asks Powertools to fetch (``force_fetch``):
    Powertools' own cache runs on the wall clock, which tests cannot move, and stacking two caches
    would let a change take up to twice ``max_age_seconds`` to apply. Powertools still caches the
    value for ``max_age_seconds`` for any other reader sharing the provider.
    """

    permissions: ClassVar[frozenset[str]] = frozenset({"ssm:GetParameter"})

    def __init__(
        self,
        parameter: str,
        provider: SSMProvider,
        *,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(f"ssm:{parameter}", max_age_seconds=max_age_seconds, clock=clock)
        self.parameter = parameter
        self._provider = provider

    def read_text(self) -> str:
        # Imported here: Powertools Parameters imports boto3, which the pure policy model must not pull in.
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError  # noqa: PLC0415

        try:
            value = self._provider.get(self.parameter, max_age=int(self._max_age or 0), decrypt=True, force_fetch=True)
        except GetParameterError as exc:
            # Powertools folds every SDK error into its message; it names the parameter, never its value.
            raise PolicyUnavailable(self.name, str(exc)) from exc
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if not isinstance(value, str):
            raise PolicyUnavailable(self.name, f"expected text, got {type(value).__name__}")
        return value


@cache
def bundled_policy_source() -> FilePolicySource:
    """The conservative policy shipped in the layer (monitor mode, no budgets, every stop guard off)."""
    resource = resources.files("tuning_governor.data").joinpath(BUNDLED_POLICY)
    return FilePolicySource(resource, name=f"bundled:{BUNDLED_POLICY}")


def policy_source(
    *,
    parameter: str = "",
    file: str = "",
    ssm: SSMProvider | None = None,
    max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> PolicySource:
    """The source named by the settings: an SSM parameter, else a file, else the bundled default.

    Takes plain values (the caller reads ``POLICY_PARAMETER`` / ``POLICY_FILE``); ``ssm`` is required
    with ``parameter`` and is used only then. Setting both ``parameter`` and ``file`` is a ValueError:
    which one governs would be a guess.
    """
    if parameter and file:
        raise ValueError("set a policy parameter or a policy file, not both")
    if parameter:
        if ssm is None:
            raise ValueError(f"reading the policy from SSM parameter {parameter} needs an SSMProvider")
        return SsmPolicySource(parameter, ssm, max_age_seconds=max_age_seconds, clock=clock)
    if file:
        return FilePolicySource(file)
    return bundled_policy_source()


def load_policy(source: PolicySource | None = None) -> LoadedPolicy:
    """The policy to apply to the current event, from ``source`` (default: the bundled policy).

    Returns the last good policy when the source's latest text is invalid or unreadable (``error`` is
    set on the first such load); raises ``PolicyError`` / ``PolicyUnavailable`` only when no good
    policy has been loaded yet.
    """
    return (source or bundled_policy_source()).load()
