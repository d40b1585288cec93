"""The bundled price catalog: provenance on every entry, unknown types unpriced."""

from __future__ import annotations

import json
from decimal import Decimal
from importlib import resources

import pytest
from pydantic import ValidationError

from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog


def test_every_entry_has_a_price_a_source_and_a_quality() -> None:
    raw = json.loads(resources.files("tuning_governor.data").joinpath("prices.json").read_text())
    entries = [(region, itype, e) for region, types in raw["regions"].items() for itype, e in types.items()]
    assert len(entries) >= 10
    for region, itype, entry in entries:
        assert itype.startswith("ml."), (region, itype)
        assert entry["source"].strip(), (region, itype)
        assert entry["quality"] in {"price-list", "secondary", "hosting-proxy"}
        assert entry["usage_type"].endswith(f"-Train:{itype}")


def test_seed_instance_price_matches_the_price_list_figure() -> None:
    entry = bundled_catalog().price("us-east-1", "ml.m5.xlarge")
    assert entry is not None
    assert entry.usd_per_hour == Decimal("0.230")
    assert entry.quality == "price-list"


def test_unknown_type_and_region_are_unpriced() -> None:
    catalog = bundled_catalog()
    assert catalog.price("us-east-1", "ml.x9.mega") is None
    assert catalog.price("eu-west-3", "ml.m5.xlarge") is None


def test_a_zero_or_negative_price_is_refused() -> None:
    bad = {"schema_version": 1, "currency": "USD", "unit": "instance-hour",
           "regions": {"us-east-1": {"ml.m5.xlarge": {"usd_per_hour": 0, "source": "x", "quality": "price-list"}}}}  # fmt: skip
    with pytest.raises(ValidationError, match="greater than 0"):
        PriceCatalog.from_json(json.dumps(bad))
