"""``tuning-governor prices``: its arguments, light on purpose (argparse and the standard library only), so
``prices --help`` answers before the price machinery loads; each action's module is imported when it runs.

    tuning-governor prices fetch [--region R ...] [--out FILE]     (governor_client.prices.fetch)
    tuning-governor prices export --table TABLE [--out FILE]       (governor_client.prices.export)
"""

from __future__ import annotations

import argparse
from typing import TextIO

from governor_client.prices.paths import OFFERS_HOST, user_catalogue_path


def _export(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    from governor_client.prices import export as prices_export  # noqa: PLC0415 - boto3 and the table adapter, when it runs

    return prices_export.run_command(args, stdout, stderr)


def _fetch(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    from governor_client.prices import fetch as prices_fetch  # noqa: PLC0415 - the governor's price model, when it runs

    return prices_fetch.run_command(args, stdout, stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``prices`` subcommand: ``prices export`` and ``prices fetch``."""
    actions = parser.add_subparsers(title="actions", dest="prices_action", required=True, metavar="ACTION")
    export = actions.add_parser(
        "export",
        help="write the prices the deployed governor refreshed into its table, in the bundled catalogue's format",
        description=(
            "Read the price catalogs the deployed governor's daily refresh stored in its DynamoDB table (your AWS"
            " credentials) and write them in the format of the catalogue bundled in the layer, for"
            " `tuning-governor replay --prices FILE`."
        ),
    )
    export.add_argument("--table", required=True, help="the governor's table (the stack's TableName output)")
    export.add_argument("--region", help="the table's region (default: your AWS configuration's)")
    export.add_argument("--out", default="-", metavar="FILE", help="where to write the catalogue (default - = stdout)")
    export.set_defaults(command=_export)
    fetch = actions.add_parser(
        "fetch",
        help="build the price catalogue from AWS's public SageMaker offer files (internet, no credentials)",
        description=(
            "Read AWS's public Price List offer files for SageMaker (no AWS credentials) and write the on-demand"
            " training prices of the asked regions in the bundled catalogue's format. Without --out they go to"
            f" the user catalogue ({user_catalogue_path()}), which check and replay use over the bundled one."
        ),
    )
    fetch.add_argument(
        "--region",
        action="append",
        default=[],
        metavar="R",
        help="a region to fetch (repeatable; default: every region)",
    )
    fetch.add_argument("--out", metavar="FILE", help="write here instead (- = stdout), e.g. for replay --prices")
    fetch.add_argument("--offers-host", default=OFFERS_HOST, help=argparse.SUPPRESS)  # a mirror, or tests
    fetch.set_defaults(command=_fetch)


def run_command(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the action ``args`` names (``prices fetch`` or ``prices export``)."""
    return (_fetch if args.prices_action == "fetch" else _export)(args, stdout, stderr)
