"""Price catalogs in DynamoDB: the daily refresh that writes them, and the cache handlers read them through.

``refresh_prices`` reads every commercial region's on-demand training prices from the AWS Price List
Query API and stores one catalog item per region (with SKU, usage type, effective and publication
dates, fetch time and source). A region whose answer is empty keeps its last stored catalog; a region
that fails is reported and the others are still stored; only when every region fails is the run
retried (and, past its retries, dead-lettered).

``StoredPrices`` gives handlers the stored catalogs, read with one Query and cached per execution
environment for ``ttl`` (prices change monthly at most; a refresh is daily).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config
from botocore.exceptions import ClientError

from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.adapters.pricing import PRICING_REGION, PriceListGateway
from tuning_governor.domain.cost import pricing_facts
from tuning_governor.domain.pricing import BILLING_CODES, PriceCatalog, region_catalog, stored_catalog
from tuning_governor.errors import TransientError
from tuning_governor.governance.facts import JobFacts
from tuning_governor.observability import logger, metrics
from tuning_governor.ports import PriceStore
from tuning_governor.settings import get_settings

DEFAULT_TTL = timedelta(hours=1)


def _utcnow() -> datetime:
    return datetime.now(tz=UTC)


@dataclass
class RefreshServices:
    """What the refresh needs, injected (tests pass a stubbed ``pricing`` client and a moto table)."""

    pricing: PriceListGateway
    store: PriceStore
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


@dataclass
class StoredPrices:
    """The refreshed catalogs, read from the store at most once per ``ttl``."""

    store: PriceStore
    clock: Callable[[], datetime] = _utcnow
    ttl: timedelta = DEFAULT_TTL
    _cached: PriceCatalog | None = field(default=None, init=False)
    _read_at: datetime | None = field(default=None, init=False)

    def catalog(self) -> PriceCatalog | None:
        """The stored catalog, or None before the first refresh has stored anything."""
        now = self.clock()
        if self._read_at is None or now - self._read_at >= self.ttl:
            catalogs = self.store.price_catalogs()
            self._cached = stored_catalog(catalogs) if catalogs else None
            self._read_at = now
        return self._cached


def with_pricing_facts(facts: JobFacts, meta: Mapping[str, Any], catalog: PriceCatalog) -> JobFacts:
    """``facts`` with how well the job is priced: its demand's types judged in its region against the
    catalog in force, plus the unpriced and approximate types its recorded trials found."""
    region = meta.get("region") or None
    found = pricing_facts(
        facts.demand,
        str(region) if region else None,
        catalog,
        recorded_unpriced=[str(t) for t in meta.get("unpriced_types") or ()],
        recorded_approximate=[str(t) for t in meta.get("approximate_types") or ()],
    )
    return facts.model_copy(
        update={
            "region": str(region) if region else None,
            "unpriced_types": list(found.unpriced_types),
            "approximate_types": list(found.approximate_types),
            "price_notes": dict(found.notes),
        }
    )
