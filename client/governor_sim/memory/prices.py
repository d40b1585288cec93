"""The price area of ``MemoryStore``: each region's catalog (``PriceStore``)."""

from __future__ import annotations

from datetime import datetime

from governor_sim.memory.table import MemoryTable
from tuning_governor.adapters.dynamodb.capacity_items import catalogs_from, price_catalog_item
from tuning_governor.domain import stop_latency
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

    def record_stop_latency(self, family: str, job_key: str, seconds: float, at: datetime) -> bool:
        key = stop_latency.item_key(family)
        with self._lock:
            item = self._get(key["pk"], key["sk"])
            kept = list(item.get("observed") or []) if item is not None else []
            observed = stop_latency.with_observation(kept, job_key, seconds, at)
            if observed is None:
                return False
            version = int(item.get("version") or 0) if item is not None else 0
            self._put({**key, "observed": observed, "version": version + 1})
            return True

    def stop_latencies(self, family: str) -> list[float]:
        key = stop_latency.item_key(family)
        return stop_latency.latencies_of(self._read(key["pk"], key["sk"]))


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[PriceStore] = PriceItems
