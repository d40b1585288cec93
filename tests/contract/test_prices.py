"""Store contract, ``PriceStore``: each region's price catalog (every adapter)."""

from __future__ import annotations

from tests.contract.conftest import (
    catalog,
)
from tuning_governor.ports import Store


def test_price_catalogs(store: Store) -> None:
    assert store.price_catalogs() == []
    store.put_price_catalog(catalog("us-west-2"))
    store.put_price_catalog(catalog("eu-north-1"))
    store.put_price_catalog(catalog("eu-north-1"))
    assert [c.region for c in store.price_catalogs()] == ["eu-north-1", "us-west-2"]
    assert store.price_catalogs()[0] == catalog("eu-north-1")


def test_one_region_s_price_catalog(store: Store) -> None:
    assert store.price_catalog("eu-north-1") is None
    store.put_price_catalog(catalog("us-west-2"))
    store.put_price_catalog(catalog("eu-north-1"))
    assert store.price_catalog("eu-north-1") == catalog("eu-north-1")
    assert store.price_catalog("us-east-1") is None
