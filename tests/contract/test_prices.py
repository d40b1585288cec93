"""Store contract, ``PriceStore``: each region's price catalog (every adapter)."""

from __future__ import annotations

from datetime import timedelta

from tests.contract.conftest import (
    T0,
    catalog,
)
from tuning_governor.domain.stop_latency import KEEP
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


def test_stop_latencies_are_kept_once_per_job_and_bounded(store: Store) -> None:
    assert store.stop_latencies("p3") == []
    assert store.record_stop_latency("p3", "job-a", 130.5, T0)
    # the same job's stop observed again (a second finalisation): kept once
    assert not store.record_stop_latency("p3", "job-a", 999.0, T0)
    assert store.record_stop_latency("m5", "job-a", 60.0, T0)
    assert store.stop_latencies("p3") == [130.5]
    assert store.stop_latencies("m5") == [60.0]
    # the family keeps its KEEP latest, oldest dropped first
    for i in range(KEEP + 5):
        assert store.record_stop_latency("p3", f"job-{i}", float(i), T0 + timedelta(minutes=i))
    assert store.stop_latencies("p3") == [float(i) for i in range(5, KEEP + 5)]
