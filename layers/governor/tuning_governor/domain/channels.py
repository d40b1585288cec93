"""The report channels a deployment can send on, by kind: the one registration a new channel adds.

Each kind names what a team's policy gives for it (``teams.<team>.channels.<kind>``): a Secrets Manager
secret holding a webhook URL, or an SNS topic ARN, and the module under
``tuning_governor.adapters.channels`` that renders a report and sends it (imported on first use, so a
cold start pays only for the channels it sends on). Delivery rows are keyed by channel name
(``<kind>`` for the stack's own, ``<kind>:team:<team>`` for a team's), so each report goes out once
per channel whatever the kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ChannelKind:
    name: str
    target: Literal["secret", "topic"]
    """What names one of its channels: a secret (its webhook URL) or an SNS topic ARN."""
    adapter: str
    """Its module under ``tuning_governor.adapters.channels``."""


#: In the order a report's team channels are tried.
CHANNEL_KINDS: dict[str, ChannelKind] = {
    kind.name: kind
    for kind in (
        ChannelKind("slack", "secret", "slack"),
        ChannelKind("sns", "topic", "sns"),
        ChannelKind("msteams", "secret", "msteams"),
    )
}
