"""``tuning-governor demo`` (and ``python -m governor_client.demo.run``): the demo's arguments.

Kept apart from :mod:`governor_client.demo.run`, which sets fake AWS credentials when imported: the other
commands must not see them, so ``tuning-governor`` imports the demo only when it runs it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from governor_client.cli.defaults import STORE_KINDS

DESCRIPTION = (
    "The offline demo: a governed SageMaker account on the AMT stand-in and a virtual clock."
    " Nothing leaves the machine."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's arguments."""
    parser.add_argument("--seed", type=int, default=7, help="seed of the simulated trials (default 7)")
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=Path("demo-report"),
        help="where the HTML report of each act's account is written (default demo-report/)",
    )
    parser.add_argument(
        "--store",
        choices=STORE_KINDS,
        default=None,
        help="the governor's table: memory (default, or $TUNING_GOVERNOR_STORE) or moto (DynamoDB on moto)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the raw data (every decision row, the summaries, the SNS and Slack messages) as JSON to FILE",
    )
