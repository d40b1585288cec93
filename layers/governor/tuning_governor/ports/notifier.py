"""The notifier port: one report channel (the stack's SNS topic or Slack webhook, or a team's own).

Adapters: ``tuning_governor.adapters.channels`` (one module per kind) and the offline recorders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tuning_governor.domain.reports import Report


class Notifier(Protocol):
    """A report channel; ``channel`` names it in delivery claims (``sns``, ``slack:team:<team>``...)."""

    channel: str

    def send(self, report: Report) -> None:
        """Deliver the report or raise DeliveryFailed."""
