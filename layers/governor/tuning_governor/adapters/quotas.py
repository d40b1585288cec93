"""Applied Service Quotas for SageMaker training, resolved by quota name and cached."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from tuning_governor.governance.capacity import Quota
from tuning_governor.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_service_quotas import ServiceQuotasClient

SERVICE_CODE = "sagemaker"


def training_quota_name(instance_type: str) -> str:
    """The quota limiting concurrent on-demand training instances of a type (names are stable, codes vary)."""
    return f"{instance_type} for training job usage"


class QuotaGateway:
    """Reads every SageMaker quota once per ``ttl`` (one paginated ListServiceQuotas), then answers from memory.

    A failure to read quotas is logged and answered as "unknown" (None): the policy's own quotas still apply.
    """

    permissions: ClassVar[dict[str, str]] = {"training_quota": "servicequotas:ListServiceQuotas"}

    def __init__(
        self, client: ServiceQuotasClient, clock: Callable[[], datetime], ttl: timedelta = timedelta(minutes=15)
    ) -> None:
        self._client = client
        self._clock = clock
        self._ttl = ttl
        self._by_name: dict[str, Quota] = {}
        self._loaded_at: datetime | None = None

    def _load(self) -> None:
        quotas: dict[str, Quota] = {}
        for page in self._client.get_paginator("list_service_quotas").paginate(ServiceCode=SERVICE_CODE):
            for item in page.get("Quotas", []):
                name, code, value = item.get("QuotaName"), item.get("QuotaCode"), item.get("Value")
                if name and code and value is not None:
                    quotas[name] = Quota(code=code, name=name, value=int(value))
        self._by_name = quotas
        self._loaded_at = self._clock()

    def training_quota(self, instance_type: str) -> Quota | None:
        now = self._clock()
        if self._loaded_at is None or now - self._loaded_at >= self._ttl:
            try:
                self._load()
            except (ClientError, BotoCoreError) as exc:
                logger.warning("service quotas unavailable", extra={"error": type(exc).__name__})
                self._loaded_at = now  # do not hammer the API on every event; try again after the TTL
        return self._by_name.get(training_quota_name(instance_type))
