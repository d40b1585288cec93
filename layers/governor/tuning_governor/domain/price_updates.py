"""How a price refresh updates a region's stored catalog: plausible bands, and the merge per type.

**Plausible bands** (docs/reference/policy.md "Prices"). A price is compared per vCPU-hour, the vCPUs read from
the size in the type's name (``medium`` 1, ``large`` 2, ``xlarge`` 4, ``<N>xlarge`` 4N: the EC2
naming SageMaker's ``ml.`` types share). A family's band is the lowest to the highest per-vCPU price
of that family in the bundled catalog (``data/prices.json``, sources in ``data/PRICES.md``), divided
and multiplied by ``MARGIN``; a family the bundled catalog does not price takes the band of its class
(accelerated: ``p``, ``g``, ``trn``, ``inf``, ``dl`` families; the others general-purpose). A size the
rule cannot read is held to the class band from 1 to ``MAX_VCPUS`` vCPUs. The margin is wider than
any spread within the bundled catalog's classes (4x) and narrower than any unit mistake (cents: 100x,
per second: 3600x, per month: 730x), so a real price change passes and a slip does not.

**The merge.** The Price List answers what it lists that day: a type missing from an answer keeps
its last refreshed price (with the time it was read), so a partial answer never sends a type back to
an estimate. Only a price the Price List lists again, and that is plausible, replaces it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from tuning_governor.domain.pricing import PriceCatalog, PriceListRow, RegionCatalog, bundled_catalog

MARGIN = Decimal(10)
MAX_VCPUS = 192  # the largest SageMaker training sizes (ml.p5.48xlarge, ml.g5.48xlarge)
_ACCELERATED = re.compile(r"^(p|g|trn|inf|dl)\d")
_SIZE = re.compile(r"^(?:(?P<n>\d+)x|(?P<x>x))?large$")


def family(instance_type: str) -> str:
    """``ml.p4de.24xlarge`` -> ``p4de``."""
    parts = instance_type.split(".")
    return parts[1] if len(parts) == 3 else instance_type


def size_class(instance_type: str) -> str:
    return "accelerated" if _ACCELERATED.match(family(instance_type)) else "general-purpose"


def vcpus(instance_type: str) -> int | None:
    """The vCPUs the size in the name implies, or None for a size this rule does not read."""
    size = instance_type.rsplit(".", 1)[-1]
    if size == "medium":
        return 1
    match = _SIZE.match(size)
    if match is None:
        return None
    if match["n"]:
        return 4 * int(match["n"])
    return 4 if match["x"] else 2


@dataclass(frozen=True)
class PriceBand:
    """The plausible USD per instance-hour of one type, and where the band comes from."""

    low: Decimal
    high: Decimal
    basis: str

    def holds(self, usd: Decimal) -> bool:
        return self.low <= usd <= self.high

    def describe(self) -> str:
        return f"${self.low:.6g}-${self.high:.6g}/h ({self.basis})"


@dataclass(frozen=True)
class PerVcpu:
    low: Decimal
    high: Decimal
    prices: int


def per_vcpu_ranges(catalog: PriceCatalog) -> dict[str, PerVcpu]:
    """Per family and per class: the lowest and highest price per vCPU-hour ``catalog`` lists."""
    ranges: dict[str, PerVcpu] = {}
    for region in catalog.regions():
        for itype, entry in catalog.types(region).items():
            cpus = vcpus(itype)
            if cpus is None:
                continue
            each = entry.usd_per_hour / cpus
            for key in (family(itype), size_class(itype)):
                seen = ranges.get(key)
                ranges[key] = (
                    PerVcpu(each, each, 1)
                    if seen is None
                    else PerVcpu(min(seen.low, each), max(seen.high, each), seen.prices + 1)
                )
    return ranges


@cache
def _bundled_ranges() -> dict[str, PerVcpu]:
    return per_vcpu_ranges(bundled_catalog())


def plausible_band(instance_type: str, ranges: dict[str, PerVcpu] | None = None) -> PriceBand:
    """The band a refreshed price of ``instance_type`` must fall in (derived from the bundled catalog)."""
    known = ranges if ranges is not None else _bundled_ranges()
    fam, cls = family(instance_type), size_class(instance_type)
    key = fam if fam in known else cls
    per = known[key]
    cpus = vcpus(instance_type)
    basis = f"{key} family" if key == fam else f"{cls} class"
    basis += f": bundled ${per.low:.4g}-${per.high:.4g} per vCPU-hour over {per.prices} prices, /{MARGIN} to x{MARGIN}"
    if cpus is None:
        return PriceBand(per.low / MARGIN, per.high * MARGIN * MAX_VCPUS, basis + f", 1-{MAX_VCPUS} vCPUs")
    return PriceBand(per.low / MARGIN * cpus, per.high * MARGIN * cpus, basis + f", {cpus} vCPUs")


@dataclass(frozen=True)
class Implausible:
    """A price left out because it falls outside its band (the refresh warns about each)."""

    instance_type: str
    usd_per_hour: Decimal
    band: PriceBand
    stored: bool
    """True when it was a previously stored price (kept by no merge), False when it is the new answer's."""


def _plausible(rows: dict[str, PriceListRow], stored: bool, found: list[Implausible]) -> dict[str, PriceListRow]:
    kept: dict[str, PriceListRow] = {}
    for itype, row in rows.items():
        band = plausible_band(itype)
        if band.holds(row.usd_per_hour):
            kept[itype] = row
        else:
            found.append(Implausible(itype, row.usd_per_hour, band, stored))
    return kept


def merged(previous: RegionCatalog | None, fresh: RegionCatalog) -> tuple[RegionCatalog, list[Implausible]]:
    """``fresh`` merged into ``previous`` per instance type, implausible prices of either left out.

    A type in ``fresh`` takes its new price (read at ``fresh.fetched_at``); a type only in ``previous``
    keeps its price and the time it was last read; a price outside its band is never kept.
    """
    implausible: list[Implausible] = []
    now = {t: row.model_copy(update={"fetched_at": fresh.fetched_at}) for t, row in fresh.prices.items()}
    prices = _plausible(now, stored=False, found=implausible)
    if previous is not None:
        before = {
            t: row if row.fetched_at else row.model_copy(update={"fetched_at": previous.fetched_at})
            for t, row in previous.prices.items()
        }
        for itype, row in _plausible(before, stored=True, found=implausible).items():
            prices.setdefault(itype, row)
    published = max((r.publication_date for r in prices.values() if r.publication_date), default=None)
    catalog = fresh.model_copy(update={"prices": dict(sorted(prices.items())), "publication_date": published})
    return catalog, implausible
