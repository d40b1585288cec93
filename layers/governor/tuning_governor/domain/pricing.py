"""The price catalog: USD per instance-hour for SageMaker training, per region, with provenance.

The bundled catalog (``data/prices.json``) records where every figure comes from and how good it is.
An instance type missing from the catalog is *unpriced*: callers report it, never price it at $0.
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Quality = Literal["price-list", "secondary", "hosting-proxy", "policy"]


class PriceEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    usd_per_hour: Decimal = Field(gt=0)
    usage_type: str | None = None
    source: str
    as_of: str | None = None
    quality: Quality


class CatalogFile(BaseModel):
    schema_version: Literal[1]
    currency: Literal["USD"]
    unit: Literal["instance-hour"]
    regions: dict[str, dict[str, PriceEntry]]


class PriceCatalog:
    """Look up training prices; overrides (e.g. a team policy's prices) win over the catalog."""

    def __init__(
        self, regions: dict[str, dict[str, PriceEntry]], overrides: dict[str, PriceEntry] | None = None
    ) -> None:
        self._regions = regions
        self._overrides = dict(overrides or {})

    @classmethod
    def from_json(cls, text: str) -> PriceCatalog:
        data = CatalogFile.model_validate(json.loads(text, parse_float=Decimal))
        return cls(data.regions)

    def price(self, region: str, instance_type: str) -> PriceEntry | None:
        """The price of one instance-hour, or None when the type is unpriced in that region."""
        if instance_type in self._overrides:
            return self._overrides[instance_type]
        return self._regions.get(region, {}).get(instance_type)

    def with_overrides(self, prices: dict[str, Decimal], source: str) -> PriceCatalog:
        extra = {
            itype: PriceEntry(usd_per_hour=Decimal(str(usd)), source=source, quality="policy")
            for itype, usd in prices.items()
        }
        return PriceCatalog(self._regions, {**self._overrides, **extra})

    def regions(self) -> list[str]:
        return sorted(self._regions)


@cache
def bundled_catalog() -> PriceCatalog:
    """The catalog shipped in the layer (read once per cold start)."""
    text = resources.files("tuning_governor.data").joinpath("prices.json").read_text()
    return PriceCatalog.from_json(text)
