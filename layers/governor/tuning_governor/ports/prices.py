"""The price area of the store port: each region's refreshed price catalog, and the stop latencies
observed per instance family (what a stop still bills)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tuning_governor.domain.pricing import RegionCatalog


class PriceStore(Protocol):
    """One catalog item per region (``PRICES#<region>`` / ``CATALOG``), written by the price refresh."""

    def put_price_catalog(self, catalog: RegionCatalog) -> None: ...

    def price_catalogs(self) -> list[RegionCatalog]: ...

    def price_catalog(self, region: str) -> RegionCatalog | None:
        """``region``'s stored catalog (None when none is stored or it no longer parses)."""
        ...

    def record_stop_latency(self, family: str, job_key: str, seconds: float, at: datetime) -> bool:
        """One stopped job's stop latency for ``family`` (``STOPLATENCY#<family>`` / ``RECENT``), kept
        among the family's ``domain.stop_latency.KEEP`` latest; False (nothing written) when that job's
        observation is already kept (exactly once)."""
        ...

    def stop_latencies(self, family: str) -> list[float]:
        """``family``'s kept stop latencies in seconds, oldest first (empty: none observed)."""
        ...
