"""The Service Quotas port: the applied training-instance quotas (None: not known).

Adapter: ``tuning_governor.adapters.quotas.QuotaGateway`` (cached reads of Service Quotas).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tuning_governor.domain.capacity import Quota


class Quotas(Protocol):
    """The Service Quotas the concurrency rule judges against (None: not known)."""

    def training_quota(self, instance_type: str) -> Quota | None: ...
    def spot_training_quota(self, instance_type: str) -> Quota | None: ...
    def total_training_quota(self) -> Quota | None: ...
    def total_spot_training_quota(self) -> Quota | None: ...
