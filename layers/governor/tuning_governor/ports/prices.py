"""The price area of the store port: each region's refreshed price catalog."""

from __future__ import annotations

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
