"""The price area: each region's catalog and each family's stop latencies (``PriceStore``), and their items."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ValidationError

from tuning_governor.adapters.store.area import Area
from tuning_governor.adapters.store.conditions import any_of, eq, missing
from tuning_governor.adapters.store.port import Put
from tuning_governor.domain import stop_latency
from tuning_governor.domain.pricing import RegionCatalog
from tuning_governor.errors import TransientError

#: Attempts at adding a stop latency while other writers move the family's item on.
STOP_LATENCY_ATTEMPTS = 3


class Prices(Area):
    """The ``PriceStore`` port over the item table (written by the PriceRefreshFunction, read by all)."""

    def put_price_catalog(self, catalog: RegionCatalog) -> None:
        self._items.write(Put(price_catalog_item(catalog)))

    def price_catalogs(self) -> list[RegionCatalog]:
        return catalogs_from(self._items.index("PRICES"))

    def price_catalog(self, region: str) -> RegionCatalog | None:
        item = self._items.get((f"PRICES#{region}", "CATALOG"))
        found = catalogs_from([item]) if item else []
        return found[0] if found else None

    def record_stop_latency(self, family: str, job_key: str, seconds: float, at: datetime) -> bool:
        """Read the family's item, add the observation, write it back if nobody wrote it meanwhile (its
        ``version``); a few attempts, then TransientError (the caller's retry observes it again)."""
        key = stop_latency.item_key(family)
        for _ in range(STOP_LATENCY_ATTEMPTS):
            item = self._items.get((key["pk"], key["sk"])) or {}
            observed = stop_latency.with_observation(list(item.get("observed") or []), job_key, seconds, at)
            if observed is None:
                return False
            version = int(item.get("version") or 0)
            new = {**key, "observed": observed, "version": version + 1}
            if self._items.write(Put(new, any_of(missing("pk"), eq("version", version)))).done:
                return True
        raise TransientError(f"stop latencies of {family}: written by others {STOP_LATENCY_ATTEMPTS} times")

    def stop_latencies(self, family: str) -> list[float]:
        key = stop_latency.item_key(family)
        return stop_latency.latencies_of(self._items.get((key["pk"], key["sk"])))


def price_catalog_item(catalog: RegionCatalog) -> dict[str, Any]:
    return {
        "pk": f"PRICES#{catalog.region}",
        "sk": "CATALOG",
        "gsi1pk": "PRICES",
        "gsi1sk": catalog.region,
        "type": "price-catalog",
    } | catalog.model_dump(mode="python")


def catalogs_from(items: list[dict[str, Any]]) -> list[RegionCatalog]:
    """The catalogs the ``PRICES`` items hold; an item that no longer parses is skipped, not fatal."""
    catalogs: list[RegionCatalog] = []
    for item in items:
        try:
            catalogs.append(RegionCatalog.model_validate(item))
        except ValidationError:
            continue
    return catalogs
