"""The bundled price catalog: provenance on every entry, unknown types unpriced."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from importlib import resources

import pytest
from pydantic import ValidationError

from tuning_governor.domain.pricing import PriceCatalog, PriceEntry, billing_codes, bundled_catalog


def test_every_entry_has_a_price_a_source_and_a_quality() -> None:
    raw = json.loads(resources.files("tuning_governor.data").joinpath("prices.json").read_text())
    entries = [(region, itype, e) for region, types in raw["regions"].items() for itype, e in types.items()]
    assert len(entries) >= 10
    for region, itype, entry in entries:
        assert itype.startswith("ml."), (region, itype)
        assert entry["source"].strip(), (region, itype)
        assert entry["quality"] in {"price-list", "secondary", "hosting-proxy"}
        assert entry["usage_type"].endswith(f"-Train:{itype}")
        # the prefix is the region's own billing code (ap-south-1 is APS3, never a prefix built from its name)
        assert entry["usage_type"].split("-Train:")[0] in billing_codes(region), (region, itype)
        # a real calendar date, never in the future
        assert date.fromisoformat(entry["as_of"]) <= date.today(), (region, itype)


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


# -- layers: refreshed catalog, bundled catalog, policy prices, fallback -----------------------------------
def _entry(usd: str, quality: str = "price-list", source: str = "test") -> PriceEntry:
    return PriceEntry.model_validate({"usd_per_hour": Decimal(usd), "source": source, "quality": quality})


STORED = PriceCatalog({"eu-north-1": {"ml.m5.xlarge": _entry("0.218", source="refreshed")}})
BUNDLED = PriceCatalog(
    {
        "us-east-1": {"ml.m5.xlarge": _entry("0.23"), "ml.p3.2xlarge": _entry("3.825", "secondary")},
        "ap-south-1": {"ml.m5.xlarge": _entry("0.242")},
        "eu-north-1": {"ml.m5.xlarge": _entry("0.2", source="bundled")},
    }
)


def test_the_refreshed_catalog_wins_over_the_bundled_one_which_fills_its_gaps() -> None:
    catalog = STORED.over(BUNDLED)

    assert catalog.price("eu-north-1", "ml.m5.xlarge").source == "refreshed"  # type: ignore[union-attr]
    assert catalog.price("us-east-1", "ml.p3.2xlarge").usd_per_hour == Decimal("3.825")  # type: ignore[union-attr]


def test_policy_prices_fill_gaps_only_regional_before_all_region() -> None:
    catalog = STORED.over(BUNDLED).with_policy_prices(
        {"ml.m5.xlarge": Decimal("9"), "ml.g5.xlarge": Decimal("1.5")},
        {"eu-west-1": {"ml.g5.xlarge": Decimal("1.7")}},
    )

    # A catalog price is never replaced by a policy price
    assert catalog.price("us-east-1", "ml.m5.xlarge").usd_per_hour == Decimal("0.23")  # type: ignore[union-attr]
    # The region's own policy price, else the all-region one
    eu_west = catalog.price("eu-west-1", "ml.g5.xlarge")
    elsewhere = catalog.price("sa-east-1", "ml.g5.xlarge")
    assert eu_west is not None and eu_west.usd_per_hour == Decimal("1.7") and eu_west.quality == "policy"
    assert elsewhere is not None and elsewhere.usd_per_hour == Decimal("1.5")
    assert "all regions" in elsewhere.source


def test_a_type_missing_in_the_region_is_quoted_at_its_highest_price_anywhere_as_approximate() -> None:
    quote = BUNDLED.quote("eu-west-3", "ml.m5.xlarge")

    assert quote is not None
    assert quote.basis == "highest-other-region"
    assert quote.approximate
    assert (quote.usd_per_hour, quote.from_region) == (Decimal("0.242"), "ap-south-1")
    exact = BUNDLED.quote("us-east-1", "ml.m5.xlarge")
    assert exact is not None and exact.basis == "exact" and not exact.approximate
    assert BUNDLED.quote("us-east-1", "ml.x9.mega") is None  # priced nowhere: unpriced, never $0
