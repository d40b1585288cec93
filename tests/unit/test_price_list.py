"""Reading the AWS Price List: GetProducts rows in AWS's format, paging, spot rows, bad rows, billing codes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tests.price_list import answer, product, row
from tuning_governor.adapters.pricing import PriceListGateway, PriceListUnavailable
from tuning_governor.domain.price_updates import family, merged, plausible_band, size_class, vcpus
from tuning_governor.domain.pricing import (
    BILLING_CODES,
    RowRejected,
    billing_codes,
    bundled_catalog,
    parse_price_list_row,
    region_catalog,
)

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


@pytest.fixture
def pricing() -> Any:
    # Fake keys: the Stubber answers every call, nothing reaches AWS.
    return boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def test_a_training_row_is_read_with_its_provenance() -> None:
    parsed = parse_price_list_row(row("EUN1-Train:ml.m5.xlarge", "0.2180000000", region="eu-north-1"), "eu-north-1")

    assert parsed.instance_type == "ml.m5.xlarge"
    assert parsed.usd_per_hour == Decimal("0.218")
    assert parsed.usage_type == "EUN1-Train:ml.m5.xlarge"
    assert parsed.sku.startswith("SKU")
    assert parsed.effective_date == "2026-11-01T00:00:00Z"
    assert parsed.publication_date == "2026-11-20T18:02:11Z"


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        # Managed spot: no on-demand list price.
        (row("EUN1-TrSpt:ml.m5.xlarge", "0.0700000000", region="eu-north-1"), "managed spot"),
        # Other components of SageMaker (hosting, processing).
        (row("EUN1-Host:ml.m5.xlarge", "0.2300000000", region="eu-north-1", component="Hosting"), "not <CODE>-Train"),
        # Another region's row, and a row whose billing code is not the region's.
        (row("USE1-Train:ml.m5.xlarge", "0.2300000000", region="us-east-1"), "region 'us-east-1'"),
        (row("EUW3-Train:ml.m5.xlarge", "0.2300000000", region="eu-north-1"), "billing code EUW3"),
        # A $0 price is never a price.
        (row("EUN1-Train:ml.m5.xlarge", "0.0000000000", region="eu-north-1"), "not positive"),
        (row("EUN1-Train:ml.m5.xlarge", "n/a", region="eu-north-1"), "not a number"),
        ("{not json", "not JSON"),
        (json.dumps(["a list"]), "not a JSON object"),
    ],
)
def test_rows_that_are_not_an_on_demand_training_price_of_the_region_are_rejected(entry: str, reason: str) -> None:
    with pytest.raises(RowRejected, match=reason):
        parse_price_list_row(entry, "eu-north-1")


def test_a_row_with_two_different_hourly_prices_is_rejected() -> None:
    data = product("EUN1-Train:ml.m5.xlarge", "0.218", region="eu-north-1")
    (term,) = data["terms"]["OnDemand"].values()
    (dimension,) = term["priceDimensions"].values()
    term["priceDimensions"]["second"] = dimension | {"pricePerUnit": {"USD": "0.3"}}

    with pytest.raises(RowRejected, match="several hourly prices"):
        parse_price_list_row(json.dumps(data), "eu-north-1")


def test_a_malformed_row_is_left_out_without_losing_the_others() -> None:
    # Given a page with a good row, a spot row, a row without terms and another good row
    broken = product("EUN1-Train:ml.g5.xlarge", "1.6", region="eu-north-1")
    del broken["terms"]
    rows = [
        row("EUN1-Train:ml.m5.xlarge", "0.218", region="eu-north-1"),
        row("EUN1-TrSpt:ml.m5.xlarge", "0.07", region="eu-north-1"),
        json.dumps(broken),
        row("EUN1-Train:ml.c5.xlarge", "0.194", region="eu-north-1"),
    ]

    catalog = region_catalog("eu-north-1", rows, NOW)

    # Then the good rows are kept and the others counted, with their reasons
    assert {t: r.usd_per_hour for t, r in catalog.prices.items()} == {
        "ml.c5.xlarge": Decimal("0.194"),
        "ml.m5.xlarge": Decimal("0.218"),
    }
    assert catalog.rejected_rows == 2
    assert any("managed spot" in reason for reason in catalog.rejected)
    assert any("no terms.OnDemand" in reason for reason in catalog.rejected)
    entry = catalog.entries()["ml.m5.xlarge"]
    assert entry.quality == "price-list"
    assert entry.fetched_at == NOW.isoformat()
    assert "AWS Price List Query API" in entry.source
    assert entry.sku and entry.sku in entry.source


def test_every_commercial_region_has_one_billing_code() -> None:
    assert len(BILLING_CODES) >= 30
    assert len(set(BILLING_CODES.values())) == len(BILLING_CODES), "two regions share a billing code"
    assert BILLING_CODES["us-east-1"] == "USE1"
    assert BILLING_CODES["ap-south-1"] == "APS3"  # not APS1, which is ap-southeast-1
    assert BILLING_CODES["eu-north-1"] == "EUN1"
    assert billing_codes("eu-west-1") == {"EU", "EUW1"}
    assert billing_codes("xx-nowhere-1") == frozenset()


def test_the_gateway_pages_with_next_token_and_filters_per_region(pricing: Any) -> None:
    stubber = Stubber(pricing)
    answer(
        stubber,
        "eu-north-1",
        [
            [row("EUN1-Train:ml.m5.xlarge", "0.218", region="eu-north-1")],
            [row("EUN1-Train:ml.c5.xlarge", "0.194", region="eu-north-1")],
            [row("EUN1-Train:ml.g5.xlarge", "1.6", region="eu-north-1")],
        ],
    )

    with stubber:
        rows = list(PriceListGateway(pricing).training_rows("eu-north-1"))

    # Three pages, each request carrying the previous page's NextToken (the Stubber checks the params)
    stubber.assert_no_pending_responses()
    assert [json.loads(r)["product"]["attributes"]["instanceName"] for r in rows] == [
        "ml.m5.xlarge",
        "ml.c5.xlarge",
        "ml.g5.xlarge",
    ]


def test_a_throttled_region_is_a_transient_error(pricing: Any) -> None:
    stubber = Stubber(pricing)
    stubber.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400)

    with stubber, pytest.raises(PriceListUnavailable):
        list(PriceListGateway(pricing).training_rows("eu-north-1"))


# -- plausible bands (issue 18, finding 11; docs/reference/policy.md "Prices") -------------------------------------------
def bundled_prices() -> list[tuple[str, str, Decimal]]:
    catalog = bundled_catalog()
    return [(r, t, e.usd_per_hour) for r in catalog.regions() for t, e in catalog.types(r).items()]


@pytest.mark.parametrize(("region", "instance_type", "usd"), bundled_prices())
def test_every_bundled_price_is_plausible_and_every_unit_slip_of_it_is_not(
    region: str, instance_type: str, usd: Decimal
) -> None:
    band = plausible_band(instance_type)

    assert band.holds(usd), f"{region} {instance_type} ${usd} outside {band.describe()}"
    # per second instead of per hour, cents instead of dollars, per month instead of per hour
    for slip in (usd / 3600, usd * 100, usd * 730):
        assert not band.holds(slip), f"{instance_type} ${slip} inside {band.describe()}"


@pytest.mark.parametrize(
    ("instance_type", "usd", "plausible"),
    [
        ("ml.m5.xlarge", "1E-10", False),
        ("ml.m5.24xlarge", "5.53", True),  # a size the bundled catalog does not list: scaled by vCPUs
        ("ml.p4de.24xlarge", "45.12", True),  # a family it does not list: its class's band
        ("ml.p4de.24xlarge", "45120", False),
        ("ml.c7i.48xlarge", "9.8", True),
        ("ml.trn1.32xlarge", "24.72", True),
        ("ml.g5.metal", "1E+200", False),  # a size the rule cannot read: the class band over 1-192 vCPUs
    ],
)
def test_a_price_is_judged_against_its_family_band(instance_type: str, usd: str, plausible: bool) -> None:
    assert plausible_band(instance_type).holds(Decimal(usd)) is plausible


def test_a_family_band_comes_from_the_family_and_an_unknown_family_from_its_class() -> None:
    assert (family("ml.p4de.24xlarge"), size_class("ml.p4de.24xlarge"), vcpus("ml.p4de.24xlarge")) == (
        "p4de",
        "accelerated",
        96,
    )
    assert plausible_band("ml.m5.xlarge").basis.startswith("m5 family")
    assert plausible_band("ml.p4de.24xlarge").basis.startswith("accelerated class")
    assert plausible_band("ml.c7i.large").basis.startswith("general-purpose class")


def test_the_merge_keeps_unlisted_types_and_drops_a_stored_implausible_price() -> None:
    later = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
    # Given a catalog stored before the bands existed, with a 1e-10 price among plausible ones
    previous = region_catalog(
        "us-east-1",
        [
            row("USE1-Train:ml.m5.xlarge", "0.0000000001", region="us-east-1"),
            row("USE1-Train:ml.p4de.24xlarge", "45.12", region="us-east-1"),
            row("USE1-Train:ml.g5.xlarge", "1.408", region="us-east-1"),
        ],
        NOW,
    )
    # When a later answer lists g5 only
    fresh = region_catalog("us-east-1", [row("USE1-Train:ml.g5.xlarge", "1.5", region="us-east-1")], later)

    catalog, implausible = merged(previous, fresh)

    # Then g5 moves, p4de is kept with the time it was read, and the stored 1e-10 is dropped, named
    assert {t: (r.usd_per_hour, r.fetched_at) for t, r in catalog.prices.items()} == {
        "ml.g5.xlarge": (Decimal("1.5"), later),
        "ml.p4de.24xlarge": (Decimal("45.12"), NOW),
    }
    assert [(i.instance_type, i.stored) for i in implausible] == [("ml.m5.xlarge", True)]
