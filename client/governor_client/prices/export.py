"""The prices the deployed governor uses, on the operator's machine.

    tuning-governor prices export --table TABLE [--region REGION] [--out prices.json]
    tuning-governor replay EVENTS --policy P --prices-from-table TABLE   (or --prices prices.json)

The deployed governor prices a trial with, first found wins: the catalogs its daily price refresh stored
in its table (``PRICES#<region>`` items), the catalogue bundled in the layer, then the policy's
``prices``. ``export`` writes the stored catalogs in the bundled catalogue's file format
(``tuning_governor/data/prices.json``, see PRICES.md), each entry with its Price List source, SKU and
dates. A replay given ``--prices-from-table`` (read with boto3 before the replay starts) or ``--prices``
lays those prices over the bundled catalogue, as the deployed governor does, so it judges at the same
prices. Types the table does not hold fall back to this client's bundled catalogue, which is the
deployed layer's when both come from the same release.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from governor_client.cli.aws import cli_client
from governor_client.cli.errors import CommandError, classify
from governor_client.prices.fetch import catalogue_file, client_catalog
from governor_client.prices.paths import user_catalogue_path
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.domain.pricing import PriceCatalog, RegionCatalog, bundled_catalog


class PricesInputError(ValueError):
    """A price source that cannot be read; the message is one line naming it and what to do."""


def stored_catalogs(table: str, region: str | None = None, client: Any = None) -> list[RegionCatalog]:
    """The catalogs stored in ``table``; ``CommandError`` (exit 3, AWS cannot be used) when it cannot be read."""
    try:
        dynamodb = client or cli_client("dynamodb", region)
        return GovernorStore(dynamodb, table).price_catalogs()
    except (ClientError, BotoCoreError) as exc:
        code, line = classify(exc)
        raise CommandError(f"cannot read the prices in table {table}: {line}", code) from exc


def catalogue_document(catalogs: list[RegionCatalog], table: str) -> dict[str, Any]:
    """The catalogs as the bundled catalogue's file (``CatalogFile``), every entry with its provenance."""
    exported = datetime.now(tz=UTC).isoformat(timespec="seconds")
    return catalogue_file(
        {catalog.region: catalog.entries() for catalog in catalogs},
        f"Exported from the governor's table {table} at {exported} (tuning-governor prices export).",
    )


def run_command(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """``prices export``: 0 with the file written; 3 (``CommandError``, one line) when the table cannot be read, 2 when the file cannot be written."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    catalogs = stored_catalogs(args.table, args.region)
    text = json.dumps(catalogue_document(catalogs, args.table), indent=2) + "\n"
    if args.out == "-":
        out.write(text)
    else:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"tuning-governor prices export: cannot write {args.out}: {exc.strerror}", file=err)
            return 2
    prices = sum(len(c.prices) for c in catalogs)
    print(f"Exported {len(catalogs)} region(s), {prices} price(s) from {args.table}", file=err)
    return 0


def replay_catalog(args: argparse.Namespace) -> PriceCatalog | None:
    """The catalog a replay prices with (over the bundled one): ``--prices*``'s, else the one ``prices fetch``
    wrote (``governor_client.prices.paths.user_catalogue_path``), else None (the bundled one)."""
    if getattr(args, "prices_from_table", None):
        catalogs = stored_catalogs(args.prices_from_table, getattr(args, "prices_region", None))
        if not catalogs:
            raise PricesInputError(f"table {args.prices_from_table} holds no refreshed prices yet")
        return PriceCatalog({c.region: c.entries() for c in catalogs}).over(bundled_catalog())
    if getattr(args, "prices", None):
        try:
            return PriceCatalog.from_json(Path(args.prices).read_text(encoding="utf-8")).over(bundled_catalog())
        except OSError as exc:
            raise PricesInputError(f"cannot read {args.prices}: {exc.strerror or type(exc).__name__}") from None
        except (ValueError, ValidationError) as exc:
            first = str(exc).splitlines()[0]
            raise PricesInputError(f"{args.prices} is not a price catalogue ({first})") from None
    return client_catalog() if user_catalogue_path().is_file() else None
