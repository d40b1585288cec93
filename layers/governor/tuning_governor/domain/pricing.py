"""The price catalog: USD per instance-hour for SageMaker training, per region, with provenance.

Where a price comes from, first found wins (the order the issue asked for, and why it is right:
AWS's published list is fresher and better sourced than anything typed by hand; the policy fills gaps):

1. the catalog the daily ``PriceRefreshFunction`` stored in DynamoDB from the AWS Price List Query API;
2. the catalog bundled in the layer (``data/prices.json``: third-party figures with their quality);
3. the policy's ``prices`` for that region, then its all-region ``prices``;
4. otherwise a *fallback*: the highest price of that type known in any region, marked ``approximate``
   (see ``PriceCatalog.quote``);
5. a type priced nowhere is *unpriced*: callers report it, never price it at $0.

``parse_price_list_row`` reads one ``GetProducts`` PriceList entry (a JSON string) into a priced row,
or says why it cannot: pure, so the refresh's rules are testable without AWS.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import ConfigDict, Field

from tuning_governor.model_base import GovernorModel

Quality = Literal["price-list", "secondary", "hosting-proxy", "policy"]
# Qualities whose figure is not AWS's own list price for training in that region.
APPROXIMATE_QUALITIES: frozenset[str] = frozenset({"secondary", "hosting-proxy"})
PRICE_LIST_SOURCE = "AWS Price List Query API"

# -- regions and their billing codes -------------------------------------------------------------------
# Commercial regions -> the billing code that prefixes their usage types (``<CODE>-Train:ml.<type>``).
# Verified against AWS's "AWS Region billing codes" page (docs.aws.amazon.com/global-infrastructure/
# latest/regions/aws-region-billing-codes.html): the North America, Africa and Asia Pacific tables, and
# "EU" as the first Europe row. The others are third-party (cost tools, billing exports) and marked in
# UNVERIFIED_BILLING_CODES; a wrong code only makes that region's rows rejected by the refresh, loudly.
BILLING_CODES: dict[str, str] = {
    "us-east-1": "USE1",
    "us-east-2": "USE2",
    "us-west-1": "USW1",
    "us-west-2": "USW2",
    "ca-central-1": "CAN1",
    "ca-west-1": "CAN2",
    "mx-central-1": "MXC1",
    "sa-east-1": "SAE1",
    "af-south-1": "AFS1",
    "ap-east-1": "APE1",
    "ap-east-2": "APE2",
    "ap-northeast-1": "APN1",
    "ap-northeast-2": "APN2",
    "ap-northeast-3": "APN3",
    "ap-southeast-1": "APS1",
    "ap-southeast-2": "APS2",
    "ap-south-1": "APS3",
    "ap-southeast-3": "APS4",
    "ap-south-2": "APS5",
    "ap-southeast-4": "APS6",
    "ap-southeast-5": "APS7",
    "ap-southeast-6": "APS8",
    "ap-southeast-7": "APS9",
    "eu-west-1": "EU",
    "eu-west-2": "EUW2",
    "eu-west-3": "EUW3",
    "eu-central-1": "EUC1",
    "eu-central-2": "EUC2",
    "eu-north-1": "EUN1",
    "eu-south-1": "EUS1",
    "eu-south-2": "EUS2",
    "il-central-1": "ILC1",
    "me-south-1": "MES1",
    "me-central-1": "MEC1",
}
UNVERIFIED_BILLING_CODES: frozenset[str] = frozenset({"sa-east-1", "eu-west-2", "eu-west-3", "eu-central-1",
    "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "il-central-1", "me-south-1", "me-central-1"})  # fmt: skip
# Also accepted: eu-west-1's "EUW1" of some third-party SageMaker listings (aws-facts.md 5.1, inferred).
BILLING_CODE_ALIASES: dict[str, frozenset[str]] = {"eu-west-1": frozenset({"EUW1"})}


def billing_codes(region: str) -> frozenset[str]:
    """Every usage-type prefix accepted for ``region`` (empty for a region this module does not know)."""
    primary = BILLING_CODES.get(region)
    return (frozenset({primary}) if primary else frozenset()) | BILLING_CODE_ALIASES.get(region, frozenset())


class PriceEntry(GovernorModel):
    model_config = ConfigDict(frozen=True)

    usd_per_hour: Decimal = Field(gt=0)
    usage_type: str | None = None
    source: str
    as_of: str | None = None
    """The price's own date: the Price List term's effectiveDate, or the bundled figure's date."""
    quality: Quality
    sku: str | None = None
    fetched_at: str | None = None
    """When the refresh read it from the Price List (None for bundled and policy prices)."""


class CatalogFile(GovernorModel):
    schema_version: Literal[1]
    currency: Literal["USD"]
    unit: Literal["instance-hour"]
    regions: dict[str, dict[str, PriceEntry]]


class PriceQuote(GovernorModel):
    """The price a cost is computed with, and how good it is.

    ``basis`` is ``exact`` when the catalog has the type in the job's region, ``highest-other-region``
    when it had to fall back to the highest price of the type in any region (``approximate`` is then
    True, and ``from_region`` names where the figure is from).
    """

    model_config = ConfigDict(frozen=True)

    entry: PriceEntry
    basis: Literal["exact", "highest-other-region"]
    from_region: str | None = None

    @property
    def usd_per_hour(self) -> Decimal:
        return self.entry.usd_per_hour

    @property
    def approximate(self) -> bool:
        return self.basis != "exact" or self.entry.quality in APPROXIMATE_QUALITIES

    def describe(self) -> str:
        if self.basis == "exact":
            return f"${self.usd_per_hour}/h ({self.entry.quality}: {self.entry.source})"
        return f"${self.usd_per_hour}/h, the highest known price of the type (in {self.from_region})"


class PriceCatalog:
    """Look up training prices in layers.

    ``regions`` are exact per-region prices; ``any_region`` prices apply where a region lists nothing for
    the type (the policy's all-region ``prices``); ``overrides`` win over everything (kept for callers
    that must force a figure, e.g. what-if replays).
    """

    def __init__(
        self,
        regions: Mapping[str, Mapping[str, PriceEntry]],
        overrides: Mapping[str, PriceEntry] | None = None,
        any_region: Mapping[str, PriceEntry] | None = None,
    ) -> None:
        self._regions = {region: dict(types) for region, types in regions.items()}
        self._overrides = dict(overrides or {})
        self._any_region = dict(any_region or {})
        self.rates: dict[tuple[Any, ...], Any] = {}  # by domain.cost.cluster_rate: a catalog never changes

    @classmethod
    def from_json(cls, text: str) -> PriceCatalog:
        data = CatalogFile.model_validate(json.loads(text, parse_float=Decimal))
        return cls(data.regions)

    def price(self, region: str, instance_type: str) -> PriceEntry | None:
        """The price of one instance-hour in ``region``, or None when the type is unpriced there."""
        if instance_type in self._overrides:
            return self._overrides[instance_type]
        found = self._regions.get(region, {}).get(instance_type)
        return found if found is not None else self._any_region.get(instance_type)

    def highest_price(self, instance_type: str) -> tuple[str, PriceEntry] | None:
        """The highest price of ``instance_type`` in any region (ties: the first region by name)."""
        best: tuple[str, PriceEntry] | None = None
        for region in sorted(self._regions):
            entry = self._regions[region].get(instance_type)
            if entry is not None and (best is None or entry.usd_per_hour > best[1].usd_per_hour):
                best = (region, entry)
        return best

    def quote(self, region: str, instance_type: str) -> PriceQuote | None:
        """The price to judge ``instance_type`` in ``region`` on: exact, else the stated fallback.

        The fallback is the highest price of the type known in any region, so a budget is never judged
        on less than the type could cost; None only when the type is priced nowhere (never $0).
        """
        entry = self.price(region, instance_type)
        if entry is not None:
            return PriceQuote(entry=entry, basis="exact")
        highest = self.highest_price(instance_type)
        if highest is None:
            return None
        return PriceQuote(entry=highest[1], basis="highest-other-region", from_region=highest[0])

    def with_overrides(self, prices: Mapping[str, Decimal], source: str) -> PriceCatalog:
        """A copy in which ``prices`` win over every other source, in every region."""
        extra = {
            itype: PriceEntry(usd_per_hour=Decimal(str(usd)), source=source, quality="policy")
            for itype, usd in prices.items()
        }
        return PriceCatalog(self._regions, {**self._overrides, **extra}, self._any_region)

    def over(self, lower: PriceCatalog) -> PriceCatalog:
        """A catalog in which this one's prices win and ``lower`` fills the gaps (region by type)."""
        regions = {region: dict(types) for region, types in lower._regions.items()}
        for region, types in self._regions.items():
            regions.setdefault(region, {}).update(types)
        return PriceCatalog(regions, {**lower._overrides, **self._overrides}, {**lower._any_region, **self._any_region})

    def with_policy_prices(
        self,
        all_regions: Mapping[str, Decimal],
        by_region: Mapping[str, Mapping[str, Decimal]],
        source: str = "policy prices",
    ) -> PriceCatalog:
        """A copy in which the policy's prices fill the gaps only: they never replace a catalog price."""
        if not all_regions and not by_region:
            return self

        def entry(usd: Decimal, where: str) -> PriceEntry:
            return PriceEntry(usd_per_hour=Decimal(str(usd)), source=f"{source} ({where})", quality="policy")

        policy = PriceCatalog(
            {region: {t: entry(usd, region) for t, usd in types.items()} for region, types in by_region.items()},
            any_region={t: entry(usd, "all regions") for t, usd in all_regions.items()},
        )
        return self.over(policy)

    def regions(self) -> list[str]:
        return sorted(self._regions)

    def types(self, region: str) -> dict[str, PriceEntry]:
        return dict(self._regions.get(region, {}))


# -- the AWS Price List --------------------------------------------------------------------------------
_TRAINING_USAGE = re.compile(r"^(?P<code>[A-Z0-9]+)-Train:(?P<type>ml\.[a-z0-9.-]+)$")


class PriceListRow(GovernorModel):
    """One on-demand training price read from a GetProducts PriceList entry."""

    model_config = ConfigDict(frozen=True)

    region: str
    instance_type: str
    usd_per_hour: Decimal = Field(gt=0)
    usage_type: str
    sku: str
    effective_date: str | None = None
    publication_date: str | None = None
    fetched_at: datetime | None = None
    """When the refresh last read this row (None: when its catalog was, for items stored before the merge)."""


class RowRejected(ValueError):
    """A PriceList entry that is not an on-demand training price of the region asked for."""


def _on_demand_hourly_usd(terms: Any) -> tuple[Decimal, str | None]:
    on_demand = terms.get("OnDemand") if isinstance(terms, dict) else None
    if not isinstance(on_demand, dict) or not on_demand:
        raise RowRejected("no terms.OnDemand")
    found: set[Decimal] = set()
    effective: str | None = None
    for term in on_demand.values():
        for dimension in (term.get("priceDimensions") or {}).values():
            if str(dimension.get("unit", "")).lower() not in {"hrs", "hours", "hour"}:
                continue
            raw = (dimension.get("pricePerUnit") or {}).get("USD")
            try:
                found.add(Decimal(str(raw)))
            except (InvalidOperation, ValueError):
                raise RowRejected(f"pricePerUnit.USD {raw!r} is not a number") from None
            effective = term.get("effectiveDate") or effective
    if not found:
        raise RowRejected("no hourly USD price dimension")
    if len(found) > 1:
        raise RowRejected(f"several hourly prices {sorted(found)}")
    (usd,) = found
    if not usd.is_finite() or usd <= 0:
        # A $0 row (free tier, promotional) is not a price to judge budgets on: never $0.
        raise RowRejected(f"price {usd} is not positive")
    digits = "".join(map(str, usd.as_tuple().digits)).strip("0")  # significant digits, no context rounding
    if len(digits) > 38 or not -130 <= usd.adjusted() <= 125:
        # DynamoDB's number limits: storing it would fail the region's whole catalog, so only it is left out.
        raise RowRejected(f"price {usd} is not storable (DynamoDB: 38 digits, 1E-130 to 9.9E+125)")
    return usd, effective


def parse_price_list_row(text: str, region: str) -> PriceListRow:
    """Read one PriceList entry (a JSON string) as ``region``'s on-demand training price.

    Raises ``RowRejected`` saying why for anything else: spot (``TrSpt``) or other components, another
    region, a usage type whose billing code is not the region's, no or several hourly USD prices, $0.
    """
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise RowRejected(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RowRejected("not a JSON object")
    product = data.get("product") or {}
    attributes = product.get("attributes") or {}
    usage = str(attributes.get("usagetype", ""))
    if "TrSpt" in usage:
        raise RowRejected(f"{usage} is managed spot training, not an on-demand price")
    match = _TRAINING_USAGE.match(usage)
    if match is None:
        raise RowRejected(f"usage type {usage or '<none>'} is not <CODE>-Train:ml.<type>")
    if attributes.get("regionCode") != region:
        raise RowRejected(f"{usage} is for region {attributes.get('regionCode')!r}, not {region}")
    if match["code"] not in billing_codes(region):
        raise RowRejected(f"{usage}: billing code {match['code']} is not {region}'s ({BILLING_CODES.get(region)})")
    instance = attributes.get("instanceName") or match["type"]
    if instance != match["type"]:
        raise RowRejected(f"{usage}: instanceName {instance!r} disagrees with the usage type")
    usd, effective = _on_demand_hourly_usd(data.get("terms"))
    sku = str(product.get("sku") or "")
    if not sku:
        raise RowRejected(f"{usage}: no product.sku")
    return PriceListRow(
        region=region,
        instance_type=match["type"],
        usd_per_hour=usd,
        usage_type=usage,
        sku=sku,
        effective_date=effective,
        publication_date=data.get("publicationDate"),
    )


class RegionCatalog(GovernorModel):
    """What the refresh stores for one region: its prices and their provenance."""

    model_config = ConfigDict(frozen=True)

    region: str
    billing_code: str | None
    source: str = PRICE_LIST_SOURCE
    fetched_at: datetime
    publication_date: str | None = None
    prices: dict[str, PriceListRow]
    rejected: list[str] = []
    """Why rows were left out (at most a few, for the operator)."""
    rejected_rows: int = 0

    def entries(self) -> dict[str, PriceEntry]:
        return {
            itype: PriceEntry(
                usd_per_hour=row.usd_per_hour,
                usage_type=row.usage_type,
                source=f"{self.source}, GetProducts AmazonSageMaker usagetype {row.usage_type} (SKU {row.sku})",
                as_of=row.effective_date or row.publication_date,
                quality="price-list",
                sku=row.sku,
                fetched_at=(row.fetched_at or self.fetched_at).isoformat(),
            )
            for itype, row in self.prices.items()
        }


def region_catalog(region: str, rows: Iterable[str], fetched_at: datetime, max_reasons: int = 5) -> RegionCatalog:
    """Parse one region's PriceList entries: bad rows are counted and left out, never fatal to the others.

    Two rows for the same type keep the higher price (a budget is judged on no less than it may cost).
    """
    prices: dict[str, PriceListRow] = {}
    rejected: list[str] = []
    for text in rows:
        try:
            row = parse_price_list_row(text, region)
        except RowRejected as exc:
            rejected.append(str(exc))
            continue
        known = prices.get(row.instance_type)
        if known is None or row.usd_per_hour > known.usd_per_hour:
            prices[row.instance_type] = row
    published = max((r.publication_date for r in prices.values() if r.publication_date), default=None)
    return RegionCatalog(
        region=region,
        billing_code=BILLING_CODES.get(region),
        fetched_at=fetched_at,
        publication_date=published,
        prices=dict(sorted(prices.items())),
        rejected_rows=len(rejected),
        rejected=rejected[:max_reasons]
        + ([f"... and {len(rejected) - max_reasons} more"] if len(rejected) > max_reasons else []),
    )


def stored_catalog(catalogs: Iterable[RegionCatalog]) -> PriceCatalog:
    """The refreshed catalogs as one PriceCatalog (the top layer)."""
    return PriceCatalog({c.region: c.entries() for c in catalogs})


@cache
def bundled_catalog() -> PriceCatalog:
    """The catalog shipped in the layer (read once per cold start)."""
    text = resources.files("tuning_governor.data").joinpath("prices.json").read_text()
    return PriceCatalog.from_json(text)
