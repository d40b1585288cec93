"""The price area of the DynamoDB adapter: each region's catalog (``PriceStore``)."""

from __future__ import annotations

from tuning_governor.adapters.dynamodb.capacity_items import catalogs_from, price_catalog_item
from tuning_governor.adapters.dynamodb.table import Table, marshal, unmarshal
from tuning_governor.domain.pricing import RegionCatalog
from tuning_governor.ports import PriceStore


class PriceTable(Table):
    """The ``PriceStore`` port on the table (written by the PriceRefreshFunction, read by every handler)."""

    def put_price_catalog(self, catalog: RegionCatalog) -> None:
        """Replace one region's refreshed price catalog (one item per region, well under 400 KB)."""
        item = price_catalog_item(catalog)
        self._client.put_item(TableName=self._table, Item=marshal(item))

    def price_catalogs(self) -> list[RegionCatalog]:
        """Every region's stored catalog; an item that no longer parses is skipped, not fatal."""
        return catalogs_from(self._by_gsi("PRICES"))

    def price_catalog(self, region: str) -> RegionCatalog | None:
        """One region's stored catalog, read consistently (the refresh merges into it)."""
        key = {"pk": f"PRICES#{region}", "sk": "CATALOG"}
        item = self._client.get_item(TableName=self._table, Key=marshal(key), ConsistentRead=True).get("Item")
        found = catalogs_from([unmarshal(item)]) if item else []
        return found[0] if found else None


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[PriceStore] = PriceTable
