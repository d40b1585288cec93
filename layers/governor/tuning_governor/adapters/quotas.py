"""SageMaker training quotas (applied values, else AWS defaults), resolved by quota name and cached."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from tuning_governor.domain.capacity import Quota
from tuning_governor.errors import TransientError
from tuning_governor.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_service_quotas import ServiceQuotasClient

SERVICE_CODE = "sagemaker"


def training_quota_name(instance_type: str) -> str:
    """The quota limiting concurrent on-demand training instances of a type (names are stable, codes vary)."""
    return f"{instance_type} for training job usage"


def spot_training_quota_name(instance_type: str) -> str:
    """The quota limiting concurrent managed-spot training instances of a type."""
    return f"{instance_type} for spot training job usage"


TOTAL_TRAINING = "Number of instances across all training jobs"
TOTAL_SPOT_TRAINING = "Number of instances across all spot training jobs"


class QuotaGateway:
    """Reads every applied SageMaker quota once per ``ttl`` (one paginated ListServiceQuotas), then
    answers from memory.

    ListServiceQuotas omits quotas that have no applied value; for those the AWS default value is
    used (one paginated ListAWSDefaultServiceQuotas, read only when a quota is missing, once per
    ``ttl``) and the answer says so (``Quota.applied`` is False). A failure to read the applied
    quotas keeps the values last read; with none read yet it raises ``TransientError`` (the event is
    retried), since AWS's defaults are no stand-in for applied values. A failure to read the defaults
    answers "unknown" (None): the policy's own quotas still apply.
    """

    permissions: ClassVar[dict[str, str]] = {
        "training_quota": "servicequotas:ListServiceQuotas",
        "default_quota": "servicequotas:ListAWSDefaultServiceQuotas",
    }

    def __init__(
        self, client: ServiceQuotasClient, clock: Callable[[], datetime], ttl: timedelta = timedelta(minutes=15)
    ) -> None:
        self._client = client
        self._clock = clock
        self._ttl = ttl
        self._by_name: dict[str, Quota] = {}
        self._loaded_at: datetime | None = None
        self._defaults: dict[str, Quota] = {}
        self._defaults_loaded_at: datetime | None = None

    def _read(self, operation: str, *, applied: bool) -> dict[str, Quota]:
        quotas: dict[str, Quota] = {}
        paginator: Any = self._client.get_paginator(operation)  # type: ignore[call-overload]
        for page in paginator.paginate(ServiceCode=SERVICE_CODE):
            for item in page.get("Quotas", []):
                name, code, value = item.get("QuotaName"), item.get("QuotaCode"), item.get("Value")
                if name and code and value is not None:
                    quotas[name] = Quota(code=code, name=name, value=int(value), applied=applied)
        return quotas

    def _load(self) -> None:
        self._by_name = self._read("list_service_quotas", applied=True)
        self._loaded_at = self._clock()

    def _stale(self, loaded_at: datetime | None, now: datetime) -> bool:
        return loaded_at is None or now - loaded_at >= self._ttl

    def quota(self, name: str) -> Quota | None:
        """The applied value of the quota named ``name``, else AWS's default value, else None."""
        now = self._clock()
        if self._stale(self._loaded_at, now):
            try:
                self._load()
            except (ClientError, BotoCoreError) as exc:
                logger.warning("service quotas unavailable", extra={"error": type(exc).__name__})
                if self._loaded_at is None:
                    # Never judge on AWS's defaults in place of applied values we could not read: they
                    # are often lower, and a job within the account's quota would be stopped. Retry.
                    raise TransientError(f"service quotas unavailable: {type(exc).__name__}") from exc
                # else keep the values last read (stale but real) and try again on the next call
        found = self._by_name.get(name)
        if found is not None:
            return found
        if self._stale(self._defaults_loaded_at, now):
            try:
                self._defaults = self._read("list_aws_default_service_quotas", applied=False)
            except (ClientError, BotoCoreError) as exc:
                logger.warning("default service quotas unavailable", extra={"error": type(exc).__name__})
            self._defaults_loaded_at = now
        return self._defaults.get(name)

    def training_quota(self, instance_type: str) -> Quota | None:
        return self.quota(training_quota_name(instance_type))

    def spot_training_quota(self, instance_type: str) -> Quota | None:
        return self.quota(spot_training_quota_name(instance_type))

    def total_training_quota(self) -> Quota | None:
        return self.quota(TOTAL_TRAINING)

    def total_spot_training_quota(self) -> Quota | None:
        return self.quota(TOTAL_SPOT_TRAINING)
