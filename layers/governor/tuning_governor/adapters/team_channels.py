"""The teams' own report channels: a Slack webhook read from the team's secret, and the team's SNS topic.

Which channels a report goes to is decided by ``tuning_governor.policy.routing`` (pure); this adapter turns
each ``TeamChannel`` into a notifier, built on first use and kept while the execution environment
lives, so a team's webhook URL is read through one cached Powertools ``SecretsProvider`` (like the
default one), registered with the log redactor when read, and never logged. Clients are created on
first use: a cold start, or a deployment without team channels, creates none.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from tuning_governor.adapters.notifiers import SlackNotifier, SnsNotifier, webhook_from_secret
from tuning_governor.policy.routing import TeamChannel
from tuning_governor.ports import Notifier

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider


class TeamNotifiers:
    """Notifiers for teams' channels, one per (channel, target): a policy that moves a team to another
    secret or topic gets a new notifier, the delivery row (keyed by channel) stays the same."""

    # Reading a team's webhook secret, publishing to a team's topic (KMS through SNS as SnsNotifier).
    permissions: ClassVar[frozenset[str]] = SnsNotifier.permissions | SlackNotifier.permissions

    def __init__(
        self,
        *,
        sns_client: Callable[[], Any],
        secrets_client: Callable[[], Any],
        secret_max_age: int = 300,
    ) -> None:
        self._sns_client = sns_client
        self._secrets_client = secrets_client
        self._max_age = secret_max_age
        self._provider: SecretsProvider | None = None
        self._notifiers: dict[tuple[str, str], Notifier] = {}
        self._lock = threading.Lock()

    def _secrets(self) -> SecretsProvider:
        if self._provider is None:
            from aws_lambda_powertools.utilities.parameters import SecretsProvider  # noqa: PLC0415

            self._provider = SecretsProvider(boto3_client=self._secrets_client())
        return self._provider

    def notifier(self, channel: TeamChannel) -> Notifier:
        """The notifier sending on ``channel`` (built once, then reused)."""
        key = (channel.channel, channel.target)
        with self._lock:
            found = self._notifiers.get(key)
            if found is None:
                if channel.kind == "slack":
                    url = webhook_from_secret(self._secrets(), channel.target, max_age=self._max_age)
                    found = SlackNotifier(url, channel=channel.channel)
                else:
                    found = SnsNotifier(self._sns_client(), channel.target, channel=channel.channel)
                self._notifiers[key] = found
            return found
