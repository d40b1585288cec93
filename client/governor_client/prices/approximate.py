"""Which prices a client command judged with are approximate, and the one command that fixes it.

A price is approximate when it is not an AWS Price List figure for the job's region: the type has no
price there and is judged at its highest price in another region (``PriceQuote.basis``), or the region's
figure is a third-party copy or a hosting price (``APPROXIMATE_QUALITIES``, see PRICES.md). A price the
policy sets is the policy's, not approximate. A type priced nowhere is *unpriced* (never $0): said
elsewhere, not here. ``tuning-governor prices fetch --region R`` writes AWS's own figures for R into the
catalogue ``check`` and ``replay`` read (``governor_client.prices.fetch``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tuning_governor.domain.pricing import APPROXIMATE_QUALITIES, PriceCatalog

_WHY = {"secondary": "a third-party copy of the pricing page", "hosting-proxy": "a hosting price, not training"}


@dataclass(frozen=True)
class ApproximatePrice:
    instance_type: str
    region: str
    note: str  # the price used and why it is approximate


def approximate_prices(catalog: PriceCatalog, region: str, instance_types: Iterable[str]) -> list[ApproximatePrice]:
    """The types of ``instance_types`` whose price in ``region`` is approximate, sorted by type."""
    found = []
    for itype in sorted(set(instance_types)):
        quote = catalog.quote(region, itype)
        if quote is None:
            continue
        if quote.basis != "exact":
            note = f"${quote.usd_per_hour}/h, the highest known price of the type (in {quote.from_region})"
        elif quote.entry.quality in APPROXIMATE_QUALITIES:
            note = f"${quote.usd_per_hour}/h, {_WHY[quote.entry.quality]}"
        else:
            continue
        found.append(ApproximatePrice(itype, region, note))
    return found


def from_decisions(decisions: Iterable[Mapping[str, Any]]) -> list[ApproximatePrice]:
    """The approximate prices the governor's ``pricing`` warnings name (``numbers``: region, approximate_types,
    prices), once per type and region."""
    found: dict[tuple[str, str], ApproximatePrice] = {}
    for numbers in decisions:
        region = str(numbers.get("region") or "its region")
        notes = numbers.get("prices") or {}
        for itype in numbers.get("approximate_types") or []:
            note = str(notes.get(itype) or "at its highest known price in another region")
            found.setdefault((itype, region), ApproximatePrice(itype, region, note))
    return [found[key] for key in sorted(found, key=lambda k: (k[1], k[0]))]


def fix_command(found: Iterable[ApproximatePrice]) -> str:
    regions = sorted({p.region for p in found if p.region != "its region"})
    return "tuning-governor prices fetch" + "".join(f" --region {r}" for r in regions)


def describe(found: list[ApproximatePrice]) -> str:
    """One line: each approximate price, and the command that replaces them with AWS's (empty when none)."""
    if not found:
        return ""
    prices = "; ".join(f"{p.instance_type} in {p.region}: {p.note}" for p in found)
    return f"{prices} (not AWS Price List prices for the region; fix: {fix_command(found)})"
