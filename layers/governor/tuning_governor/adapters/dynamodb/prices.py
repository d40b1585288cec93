"""The price area of the DynamoDB adapter: each region's catalog (``PriceStore``)."""

from __future__ import annotations

from datetime import datetime

from tuning_governor.adapters.dynamodb.capacity_items import catalogs_from, price_catalog_item
from tuning_governor.adapters.dynamodb.table import Table, marshal, unmarshal
from tuning_governor.domain import stop_latency
from tuning_governor.domain.pricing import RegionCatalog
from tuning_governor.errors import TransientError
from tuning_governor.ports import PriceStore

#: Attempts at adding a stop latency while other writers move the family's item on.
STOP_LATENCY_ATTEMPTS = 3


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

    def record_stop_latency(self, family: str, job_key: str, seconds: float, at: datetime) -> bool:
        """Read the family's item, add the observation, write it back if nobody wrote it meanwhile
        (its ``version``); a few attempts, then TransientError (the caller's retry observes it again)."""
        key = stop_latency.item_key(family)
        for _ in range(STOP_LATENCY_ATTEMPTS):
            found = self._client.get_item(TableName=self._table, Key=marshal(key), ConsistentRead=True).get("Item")
            item = unmarshal(found) if found else {}
            observed = stop_latency.with_observation(list(item.get("observed") or []), job_key, seconds, at)
            if observed is None:
                return False
            version = int(item.get("version") or 0)
            written = self._conditional(
                self._client.put_item,
                TableName=self._table,
                Item=marshal({**key, "observed": observed, "version": version + 1}),
                ConditionExpression="attribute_not_exists(pk) OR version = :v",
                ExpressionAttributeValues=marshal({":v": version}),
            )
            if written:
                return True
        raise TransientError(f"stop latencies of {family}: written by others {STOP_LATENCY_ATTEMPTS} times")

    def stop_latencies(self, family: str) -> list[float]:
        key = stop_latency.item_key(family)
        found = self._client.get_item(TableName=self._table, Key=marshal(key)).get("Item")
        return stop_latency.latencies_of(unmarshal(found) if found else None)


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[PriceStore] = PriceTable
