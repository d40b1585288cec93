"""The price area of ``MemoryStore``: each region's catalog (``PriceStore``)."""

from __future__ import annotations

from governor_sim.memory.table import MemoryTable
from tuning_governor.adapters.dynamodb.capacity_items import catalogs_from, price_catalog_item
from tuning_governor.domain.pricing import RegionCatalog
from tuning_governor.ports import PriceStore


class PriceItems(MemoryTable):
    """The ``PriceStore`` port in memory."""

    def put_price_catalog(self, catalog: RegionCatalog) -> None:
        with self._lock:
            self._put(price_catalog_item(catalog))

    def price_catalogs(self) -> list[RegionCatalog]:
        return catalogs_from(self._by_gsi("PRICES"))

    def price_catalog(self, region: str) -> RegionCatalog | None:
        item = self._read(f"PRICES#{region}", "CATALOG")
        found = catalogs_from([item]) if item is not None else []
        return found[0] if found else None


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[PriceStore] = PriceItems
