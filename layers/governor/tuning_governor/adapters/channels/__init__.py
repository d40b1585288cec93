"""Report channels as plug-ins: one module per kind (``slack``, ``sns``, ``msteams``), registered in
``tuning_governor.domain.channels.CHANNEL_KINDS``.

A channel module renders a channel-neutral ``Report`` and sends it, and exposes ``PERMISSIONS`` (the
IAM actions it needs) and ``build(target, *, channel, clients) -> Notifier``. Modules are imported on
first use, so a cold start, or a deployment that never sends on a kind, does not pay for it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tuning_governor.domain.channels import CHANNEL_KINDS
from tuning_governor.ports import Notifier

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

    from tuning_governor.domain.reports import Report


def channel_module(kind: str) -> ModuleType:
    """The module that renders and sends on ``kind`` (KeyError: no such kind is registered)."""
    return importlib.import_module(f"{__name__}.{CHANNEL_KINDS[kind].adapter}")


def permissions() -> frozenset[str]:
    """Every IAM action some registered channel may need."""
    return frozenset().union(*(channel_module(kind).PERMISSIONS for kind in CHANNEL_KINDS))


@dataclass
class ChannelClients:
    """The AWS clients channels are built with, each made on first use: an SNS client, and the
    Powertools ``SecretsProvider`` webhook URLs are read (and cached ``secret_max_age`` seconds) through;
    ``sleep`` is how a webhook channel waits before a retry (None: ``time.sleep``; offline runs against a
    local server pass one that does not wait)."""

    sns_client: Callable[[], Any]
    secrets_client: Callable[[], Any]
    secret_max_age: int = 300
    sleep: Callable[[float], None] | None = None
    _provider: SecretsProvider | None = field(default=None, init=False, repr=False)

    def sns(self) -> Any:
        return self.sns_client()

    def secrets(self) -> SecretsProvider:
        if self._provider is None:
            from aws_lambda_powertools.utilities.parameters import SecretsProvider  # noqa: PLC0415

            self._provider = SecretsProvider(boto3_client=self.secrets_client())
        return self._provider


def build_notifier(kind: str, target: str, *, channel: str, clients: ChannelClients) -> Notifier:
    """The notifier of kind ``kind`` sending to ``target`` (a secret or a topic ARN) as ``channel``."""
    notifier: Notifier = channel_module(kind).build(target, channel=channel, clients=clients)
    return notifier


class ChannelNotifiers:
    """Notifiers for the teams' own channels, one per (channel, target), built on first use and kept
    while the execution environment lives: a policy that moves a team to another secret or topic gets a
    new notifier, the delivery row (keyed by channel) stays the same."""

    def __init__(self, clients: ChannelClients) -> None:
        self._clients = clients
        self._notifiers: dict[tuple[str, str], Notifier] = {}
        self._lock = threading.Lock()

    def notifier(self, kind: str, target: str, channel: str) -> Notifier:
        """The notifier sending on ``channel`` (built once, then reused)."""
        key = (channel, target)
        with self._lock:
            found = self._notifiers.get(key)
            if found is None:
                found = build_notifier(kind, target, channel=channel, clients=self._clients)
                self._notifiers[key] = found
            return found


class OnFirstSend:
    """A notifier built on its first report: its channel module (a webhook's renderer and client) is
    imported then, so a cold start, or an execution environment that never reports, does not load it.
    Building reads nothing (the webhook's secret is read when a report is posted), so nothing fails later
    than it would have."""

    def __init__(self, kind: str, target: str, *, channel: str, clients: ChannelClients) -> None:
        self.channel = channel
        self._kind, self._target, self._clients = kind, target, clients
        self._built: Notifier | None = None
        self._lock = threading.Lock()

    def send(self, report: Report) -> None:
        with self._lock:
            if self._built is None:
                self._built = build_notifier(self._kind, self._target, channel=self.channel, clients=self._clients)
        self._built.send(report)


def default_notifiers(
    targets: Mapping[str, str], clients: ChannelClients, *, on_first_send: bool = False
) -> list[Notifier]:
    """The stack's own channels: one per ``kind -> target`` given, each named by its kind: the topic
    first (as it always was), then the webhooks in registration order. ``on_first_send``: each webhook
    channel is built on its first report (:class:`OnFirstSend`; the topic is always built now)."""
    order = ["sns", *(kind for kind in CHANNEL_KINDS if kind != "sns")]
    return [
        OnFirstSend(kind, targets[kind], channel=kind, clients=clients)
        if on_first_send and kind != "sns"
        else build_notifier(kind, targets[kind], channel=kind, clients=clients)
        for kind in order
        if targets.get(kind)
    ]
