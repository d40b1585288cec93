"""Use case: the daily price refresh, which reads every commercial region's on-demand training prices
from the AWS Price List Query API and merges them, per instance type, into one catalog item per region
(see ``price_catalogs`` for how handlers read them back). Each region is attempted on its own; a
price outside its family's plausible band (``domain.price_updates``) is left out with a warning."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.price_updates import Implausible, merged
from tuning_governor.domain.pricing import BILLING_CODES, region_catalog
from tuning_governor.errors import TransientError
from tuning_governor.observability import logger, metrics

if TYPE_CHECKING:
    from tuning_governor.ports import PriceStore


def _utcnow() -> datetime:
    return datetime.now(tz=UTC)


class PriceList(Protocol):
    """Where the refresh reads a region's prices (``adapters.pricing.PriceListGateway`` in Lambda)."""

    def training_rows(self, region: str) -> Iterable[str]:
        """The region's on-demand training price rows, as the Price List Query API returns them."""
        ...


@dataclass
class RefreshServices:
    """What the refresh needs, injected (the composition root, ``app.wiring``, builds them for Lambda;
    tests pass a stubbed ``pricing`` client and a moto table)."""

    pricing: PriceList
    store: PriceStore
    clock: Callable[[], datetime] = _utcnow
    regions: tuple[str, ...] = tuple(BILLING_CODES)


# A region's worst case: 3 reads of 15 s with back-off, and its write; the function's timeout is 300 s.
REGION_MS = 60_000


@dataclass
class RegionOutcome:
    """What one region's refresh came to (a failure stays in its region)."""

    stored: int = 0
    kept: int = 0
    empty: bool = False
    failed: str | None = None
    rejected_rows: int = 0
    implausible: list[Implausible] = field(default_factory=list)


def refresh_region(services: RefreshServices, region: str, now: datetime) -> RegionOutcome:
    """Read ``region``'s prices and merge them into its stored catalog, per instance type."""
    fresh = region_catalog(region, services.pricing.training_rows(region), now)
    outcome = RegionOutcome(rejected_rows=fresh.rejected_rows)
    if fresh.rejected_rows:
        logger.warning("price rows rejected", extra={"region": region, "reasons": fresh.rejected})
    previous = services.store.price_catalog(region)
    catalog, outcome.implausible = merged(previous, fresh)
    for price in outcome.implausible:
        logger.warning(
            "price rejected: outside its family's plausible band",
            extra={
                "region": region,
                "instance_type": price.instance_type,
                "usd_per_hour": str(price.usd_per_hour),
                "band_usd_per_hour": price.band.describe(),
                "was": "stored" if price.stored else "new",
            },
        )
    if not fresh.prices:
        outcome.empty = True  # an empty answer is no evidence of free: the stored catalog stays as it was
    if not catalog.prices or (outcome.empty and not outcome.implausible):
        return outcome
    services.store.put_price_catalog(catalog)
    outcome.stored = len(catalog.prices)
    outcome.kept = len(set(catalog.prices) - set(fresh.prices))
    return outcome


def _attempt(services: RefreshServices, region: str, now: datetime) -> RegionOutcome:
    try:
        return refresh_region(services, region, now)
    except Exception as exc:  # each region in its own room: a read or a write failing fails that region only
        logger.warning(
            "price refresh failed for a region",
            extra={"region": region, "error": type(exc).__name__, "detail": str(exc)[:200]},
        )
        return RegionOutcome(failed=f"{type(exc).__name__}: {str(exc)[:200]}")


def _stalest_first(services: RefreshServices) -> list[str]:
    """The regions, those never refreshed first, then by the time of their last refresh (oldest first).

    So a run cut short leaves out the freshest regions, and every region is refreshed over a few runs.
    """

    def refreshed_at(region: str) -> datetime:
        try:
            stored = services.store.price_catalog(region)
        except Exception:  # unknown: first (its attempt will read again, and fail in its own room)
            stored = None
        return stored.fetched_at if stored is not None else datetime.min.replace(tzinfo=UTC)

    return sorted(services.regions, key=refreshed_at)


def refresh_prices(services: RefreshServices, remaining_ms: Callable[[], int] | None = None) -> dict[str, Any]:
    """Read every region's prices and merge them into its stored catalog; returns what happened where.

    Regions go stalest first; one is started only while ``remaining_ms`` leaves ``REGION_MS`` for it
    (the others are ``deferred`` to the next run). Raises TransientError (the schedule retries) only
    when every region attempted failed.
    """
    now = services.clock()
    results: dict[str, RegionOutcome] = {}
    deferred: list[str] = []
    for region in _stalest_first(services):
        if deferred or (remaining_ms is not None and remaining_ms() < REGION_MS):
            deferred.append(region)
            continue
        results[region] = _attempt(services, region, now)
    if deferred:
        logger.warning("price refresh out of time: regions deferred to the next run", extra={"deferred": deferred})
    stored = {r: o.stored for r, o in results.items() if o.stored}
    failed = {r: o.failed for r, o in results.items() if o.failed}
    out_of_band = {r: len(o.implausible) for r, o in results.items() if o.implausible}
    for name, value in (
        ("PriceRegionsStored", len(stored)),
        ("PriceRegionsFailed", len(failed)),
        ("PriceRowsRejected", sum(o.rejected_rows for o in results.values())),
        ("PricesOutOfBand", sum(out_of_band.values())),
        ("PriceTypesKept", sum(o.kept for o in results.values())),
        ("PriceRegionsDeferred", len(deferred)),
    ):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    if failed and not stored:
        raise TransientError(f"price refresh failed in every region ({len(failed)}): {next(iter(failed.values()))}")
    return {
        "outcome": "refreshed",
        "fetched_at": now.isoformat(),
        "stored": stored,
        "kept": {r: o.kept for r, o in results.items() if o.kept},
        "empty": [r for r, o in results.items() if o.empty],
        "deferred": deferred,
        "failed": failed,
        "rejected_rows": {r: o.rejected_rows for r, o in results.items() if o.rejected_rows},
        "out_of_band": out_of_band,
    }
