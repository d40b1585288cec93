"""SageMaker's prices from AWS's public offer files, on the user's machine (no AWS credentials).

    tuning-governor prices fetch [--region R ...] [--out FILE]

AWS publishes every service's prices as files anyone can read (the Price List Bulk API): the service's
region index, ``/offers/v1.0/aws/AmazonSageMaker/current/region_index.json`` on
``https://pricing.us-east-1.amazonaws.com``, names each region's offer file (``regions.<code>
.currentVersionUrl``, a path on the same host); an offer file holds ``products`` (by SKU, with
``attributes``) and ``terms.OnDemand.<SKU>.<term>.priceDimensions``. Each training product of the region
is read with the same parser as the deployed governor's daily Price List refresh
(``tuning_governor.domain.pricing.region_catalog``: ``<CODE>-Train:ml.<type>``, on-demand, hourly USD,
never $0, spot and other regions rejected), after joining it with its terms into the shape the Query
API returns.

The catalogue is written in the bundled catalogue's format (``prices.json``, see PRICES.md), each entry
naming the offer file, its publication date and the row's SKU. Without ``--out`` it goes to the user
catalogue (``user_catalogue_path``), merged with the regions already there, which ``check`` and
``replay`` read over the bundled catalogue.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from governor_client.cli.errors import CommandError, ExitCode
from governor_client.prices.paths import OFFERS_HOST, user_catalogue_path
from tuning_governor.domain.pricing import PriceCatalog, PriceEntry, RegionCatalog, bundled_catalog, region_catalog

REGION_INDEX = "/offers/v1.0/aws/AmazonSageMaker/current/region_index.json"
TIMEOUT_SECONDS = 60.0
# An offer file is large (tens of MB for us-east-1): read whole, but not without end.
MAX_BYTES = 512 * 1024 * 1024

Reader = Callable[[str], bytes]


def client_catalog() -> PriceCatalog:
    """The catalogue ``check`` and ``replay`` price with: the user catalogue (if fetched) over the bundled one.
    A user catalogue that cannot be read is an error, never silently the bundled prices."""
    path = user_catalogue_path()
    if not path.is_file():
        return bundled_catalog()
    try:
        return PriceCatalog.from_json(path.read_text(encoding="utf-8")).over(bundled_catalog())
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CommandError(
            f"cannot read the fetched prices {path} ({first}): run `tuning-governor prices fetch` again", ExitCode.USAGE
        ) from exc


def _http_reader(url: str) -> bytes:
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"not an http(s) URL: {url}")
    request = urllib.request.Request(url, headers={"User-Agent": "tuning-governor prices fetch"})  # noqa: S310 - scheme checked
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 - scheme checked
        data: bytes = response.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"{url} is larger than {MAX_BYTES} bytes")
    return data


def _json(read: Reader, url: str) -> dict[str, Any]:
    try:
        data = json.loads(read(url))
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise CommandError(f"cannot read {url}: {reason}", ExitCode.AWS) from exc
    except ValueError as exc:
        raise CommandError(f"{url} is not a price list file ({str(exc).splitlines()[0]})", ExitCode.AWS) from exc
    if not isinstance(data, dict):
        raise CommandError(f"{url} is not a price list file (not a JSON object)", ExitCode.AWS)
    return data


def offer_urls(read: Reader, host: str, regions: list[str]) -> dict[str, str]:
    """Each region's current offer file, from the service's region index (all its regions without ``regions``)."""
    index_url = host.rstrip("/") + REGION_INDEX
    listed = _json(read, index_url).get("regions")
    if not isinstance(listed, dict):
        raise CommandError(f"{index_url} is not a region index (no regions)", ExitCode.AWS)
    missing = sorted(set(regions) - set(listed))
    if missing:
        raise CommandError(
            f"AWS publishes no SageMaker offer file for {', '.join(missing)} ({index_url})", ExitCode.USAGE
        )
    chosen = regions or sorted(listed)
    return {region: host.rstrip("/") + str(listed[region]["currentVersionUrl"]) for region in chosen}


def training_rows(offer: dict[str, Any]) -> Iterator[str]:
    """The offer file's training products, each joined with its on-demand terms as one Query API PriceList
    entry (``{"product", "terms": {"OnDemand"}, "publicationDate"}``), for ``region_catalog``."""
    on_demand = (offer.get("terms") or {}).get("OnDemand") or {}
    for sku, product in (offer.get("products") or {}).items():
        usage = str(((product or {}).get("attributes") or {}).get("usagetype", ""))
        if "-Train:ml." not in usage:  # the rest of SageMaker (hosting, notebooks, ...): not judged
            continue
        yield json.dumps(
            {
                "product": product,
                "terms": {"OnDemand": on_demand.get(sku) or {}},
                "publicationDate": offer.get("publicationDate"),
            }
        )


def offer_catalog(offer: dict[str, Any], region: str, url: str, fetched_at: datetime) -> RegionCatalog:
    """One region's training prices from its offer file; rows the refresh would reject are left out, counted."""
    catalog = region_catalog(region, training_rows(offer), fetched_at)
    return catalog.model_copy(update={"source": f"AWS Price List Bulk API offer file {url}"})


def entries(catalog: RegionCatalog) -> dict[str, PriceEntry]:
    """The catalog's entries, their source naming the offer file, its publication date and the row."""
    published = catalog.publication_date or "undated"
    return {
        itype: entry.model_copy(
            update={
                "source": f"{catalog.source} (published {published}), usagetype {entry.usage_type} (SKU {entry.sku})"
            }
        )
        for itype, entry in catalog.entries().items()
    }


def fetch(regions: list[str], host: str = OFFERS_HOST, read: Reader = _http_reader) -> list[RegionCatalog]:
    """Every asked region's catalog (all regions AWS lists without ``regions``); ``CommandError`` if unreadable."""
    fetched_at = datetime.now(tz=UTC)
    catalogs = []
    for region, url in offer_urls(read, host, regions).items():
        catalogs.append(offer_catalog(_json(read, url), region, url, fetched_at))
    return catalogs


def document(catalogs: list[RegionCatalog], merge_into: dict[str, Any] | None = None) -> dict[str, Any]:
    """The catalogue file: ``merge_into``'s regions (a previous fetch) with the fetched regions replaced."""
    regions = dict((merge_into or {}).get("regions") or {})
    regions.update({c.region: entries(c) for c in catalogs if c.prices})
    notes = (
        "Fetched from the AWS Price List Bulk API offer files for AmazonSageMaker (tuning-governor prices fetch);"
        " on-demand training prices, USD per instance-hour. Regions: " + ", ".join(sorted(regions)) + "."
    )
    return catalogue_file(regions, notes)


def catalogue_file(regions: dict[str, dict[str, Any]], notes: str) -> dict[str, Any]:
    """The bundled catalogue's file format (``CatalogFile``) around ``regions`` (entries or their dicts)."""
    return {
        "schema_version": 1,
        "currency": "USD",
        "unit": "instance-hour",
        "component": "Training",
        "notes": notes,
        "regions": {
            region: {
                itype: _numbers(entry.model_dump(mode="python", exclude_none=True))
                if isinstance(entry, PriceEntry)
                else entry
                for itype, entry in sorted(types.items())
            }
            for region, types in sorted(regions.items())
        },
    }


def _numbers(entry: dict[str, Any]) -> dict[str, Any]:
    # Prices are JSON numbers in the bundled file; float's shortest repr keeps a Price List figure's digits.
    return {key: float(value) if isinstance(value, Decimal) else value for key, value in entry.items()}


def run_command(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """0 with the catalogue written; 3 (one line) when AWS's files cannot be read; 2 for a region AWS does
    not publish, a region without a training price, or a file that cannot be written."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    catalogs = fetch(list(dict.fromkeys(args.region)), args.offers_host)
    for catalog in catalogs:
        print(
            f"{catalog.region}: {len(catalog.prices)} training price(s), {catalog.rejected_rows} row(s) left out",
            file=err,
        )
    empty = [c.region for c in catalogs if not c.prices]
    target = None if args.out == "-" else Path(args.out) if args.out else user_catalogue_path()
    previous = _previous(target) if args.out is None else None  # only the user catalogue gathers regions
    text = json.dumps(document(catalogs, previous), indent=2) + "\n"
    if target is None:
        out.write(text)
    else:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"tuning-governor prices fetch: cannot write {target}: {exc.strerror}", file=err)
            return 2
        print(f"Wrote {target}", file=err)
    if empty:
        print(f"tuning-governor prices fetch: no training price in {', '.join(empty)}'s offer file", file=err)
        return 2
    return 0


def _previous(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # replaced whole: the fetched regions are written, the unreadable file is not kept
    return data if isinstance(data, dict) else None
