"""Use case: the daily price refresh, which reads every commercial region's on-demand training prices
from the AWS Price List Query API and stores one catalog item per region (see ``price_catalogs`` for
how handlers read them back)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config
from botocore.exceptions import ClientError

from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.adapters.pricing import PRICING_REGION, PriceListGateway
from tuning_governor.domain.pricing import BILLING_CODES, region_catalog
from tuning_governor.errors import TransientError
from tuning_governor.observability import logger, metrics
from tuning_governor.ports import Store
from tuning_governor.settings import get_settings


def _utcnow() -> datetime:
    return datetime.now(tz=UTC)


@dataclass
class RefreshServices:
    """What the refresh needs, injected (tests pass a stubbed ``pricing`` client and a moto table)."""

    pricing: PriceListGateway
    store: Store
    clock: Callable[[], datetime] = _utcnow
    regions: tuple[str, ...] = tuple(BILLING_CODES)


@cache
def default_refresh_services() -> RefreshServices:
    settings = get_settings()
    retrying = Config(retries={"mode": "standard", "max_attempts": 5})
    return RefreshServices(
        # The Query API has no endpoint in most regions: always ask us-east-1.
        pricing=PriceListGateway(boto3.client("pricing", region_name=PRICING_REGION, config=retrying)),
        store=GovernorStore(boto3.client("dynamodb", config=retrying), settings.table_name),
    )


def refresh_prices(services: RefreshServices) -> dict[str, Any]:
    """Read and store every region's catalog; returns what was stored, skipped and why."""
    now = services.clock()
    stored: dict[str, int] = {}
    empty: list[str] = []
    failed: dict[str, str] = {}
    rejected: dict[str, int] = {}
    for region in services.regions:
        try:
            catalog = region_catalog(region, services.pricing.training_rows(region), now)
        except (TransientError, ClientError) as exc:
            failed[region] = str(exc)[:200]
            continue
        if catalog.rejected_rows:
            rejected[region] = catalog.rejected_rows
            logger.warning("price rows rejected", extra={"region": region, "reasons": catalog.rejected})
        if not catalog.prices:
            empty.append(region)  # keep the last stored catalog: an empty answer is no evidence of free
            continue
        services.store.put_price_catalog(catalog)
        stored[region] = len(catalog.prices)
    metrics.add_metric(name="PriceRegionsStored", unit=MetricUnit.Count, value=len(stored))
    metrics.add_metric(name="PriceRegionsFailed", unit=MetricUnit.Count, value=len(failed))
    if failed:
        logger.warning("price refresh failed for some regions", extra={"failed": failed})
    if failed and not stored:
        raise TransientError(f"price refresh failed in every region ({len(failed)}): {next(iter(failed.values()))}")
    return {
        "outcome": "refreshed",
        "fetched_at": now.isoformat(),
        "stored": stored,
        "empty": empty,
        "failed": failed,
        "rejected_rows": rejected,
    }
