"""Price catalogs in DynamoDB as handlers read them: the refreshed catalogs (written daily by
``app.price_refresh``), read with one Query and cached per execution environment for ``ttl`` (prices
change monthly at most; a refresh is daily)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from tuning_governor.domain.pricing import PriceCatalog, stored_catalog
from tuning_governor.ports import PriceStore

DEFAULT_TTL = timedelta(hours=1)


def _utcnow() -> datetime:
    return datetime.now(tz=UTC)


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
