"""``tuning-governor replay``'s arguments: building the parser (and a usage error) loads nothing of the
replay; the command table runs ``governor_client.replay.cli.run_command``, imported once the arguments parse.
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta

from governor_client.cli.defaults import (
    DEFAULT_MAX_REJECTED_PERCENT,
    DEFAULT_SWEEP_EVERY,
    DEFAULT_SWEEP_SCHEDULE,
    STORE_KINDS,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``replay`` subcommand's arguments."""
    parser.add_argument(
        "events",
        metavar="EVENTS",
        help=(
            "captured EventBridge events: a JSONL file (- = stdin), a folder of capture objects or an"
            " s3://bucket/prefix as the template's CaptureEvents path writes them (gzip too)"
        ),
    )
    parser.add_argument(
        "--policy", required=True, metavar="POLICY.yaml", help="the governance policy to replay under (YAML or JSON)"
    )
    parser.add_argument(
        "--out",
        metavar="RESULT.json",
        help="write the result as JSON here (- = stdout; the summary then goes to stderr)",
    )
    parser.add_argument(
        "--mode",
        choices=("enforce", "monitor"),
        help="override the policy's mode, e.g. to see what a monitor-mode policy would save if it enforced",
    )
    parser.add_argument(
        "--sweep-every",
        type=_sweep_argument,
        default=DEFAULT_SWEEP_EVERY,
        metavar="INTERVAL",
        help=(
            f"run the scheduled sweep on the event timeline this often: 5 (minutes), 90s, 15m, 1h or"
            f" rate(5 minutes); 0 = no sweep (default: {DEFAULT_SWEEP_SCHEDULE}, as template.yaml deploys it)"
        ),
    )
    parser.add_argument(
        "--max-rejected",
        type=max_rejected,
        default=DEFAULT_MAX_REJECTED_PERCENT,
        metavar="PERCENT",
        help=(
            "exit 4 when more than this share of the lines are not events (default"
            f" {DEFAULT_MAX_REJECTED_PERCENT:g}%%); a replay whose every line is rejected always exits 4"
        ),
    )
    _add_place_arguments(parser)
    _add_output_arguments(parser)
    _add_prices_arguments(parser)


def _add_place_arguments(parser: argparse.ArgumentParser) -> None:
    """``--home-account``: where the replayed governor runs, for a replay of several accounts."""
    parser.add_argument(
        "--home-account",
        type=_account_id,
        metavar="ID",
        help=(
            "the governor's own account (12 digits) in a replay of several accounts: each job is then its own"
            " account's and region's, keyed <account>/<region>/<name> away from home (default, when the policy"
            " lists accounts: an offline account, 123456789012)"
        ),
    )


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """``--html``, ``--html-jobs``, ``--facts-from-table`` and ``--store``, after the others (their order is ``--help``'s)."""
    parser.add_argument(
        "--html",
        metavar="DIR",
        help=(
            "also write the what-if as a self-contained HTML page, DIR/index.html, with its PNGs: spend by team"
            " with the monthly budgets, each stop, the savings and the costliest jobs' plots (needs matplotlib)"
        ),
    )
    parser.add_argument(
        "--html-jobs",
        type=_job_count,
        default=10,
        metavar="N",
        help="with --html: draw the N costliest jobs' plots (default 10; 0 = none)",
    )
    parser.add_argument(
        "--facts-from-table",
        metavar="TABLE",
        help=(
            "the deployed governor's DynamoDB table (name or ARN): read, with your credentials, before the replay,"
            " for the configuration and tags the governor stored of each job, where the events lack them"
            " (AWS's documented tuning event has no HyperParameterTuningJobConfig)"
        ),
    )
    parser.add_argument(
        "--store",
        choices=STORE_KINDS,
        default=None,
        help=(
            "where the governor's table lives during the replay: memory (fast) or moto (the DynamoDB adapter on"
            " moto's DynamoDB, the full AWS path; slow on long histories); the result is the same"
            " (default: $TUNING_GOVERNOR_STORE, else memory)"
        ),
    )


def _job_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


def _sweep_argument(text: str) -> timedelta | None:
    from governor_client.replay.lines import ReplayInputError  # noqa: PLC0415 - only when the option is given
    from governor_client.replay.schedule import parse_sweep_every  # noqa: PLC0415

    try:
        return parse_sweep_every(text)
    except ReplayInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_prices_arguments(parser: argparse.ArgumentParser) -> None:
    """``replay --prices FILE`` / ``--prices-from-table TABLE`` [``--prices-region``]."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--prices",
        metavar="FILE",
        help="price the replay with this catalogue (`tuning-governor prices export`'s output) over the bundled one",
    )
    group.add_argument(
        "--prices-from-table",
        metavar="TABLE",
        help="price the replay with the catalogs the deployed governor refreshed into TABLE (read before it starts)",
    )
    parser.add_argument(
        "--table-region",
        "--prices-region",
        dest="prices_region",
        metavar="REGION",
        help="the region of the table --prices-from-table and --facts-from-table read (default: your AWS configuration's)",
    )


def max_rejected(text: str) -> float:
    """``--max-rejected``'s value: a percent from 0 to 100 (``5``, ``5%``, ``0.5``)."""
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percent (e.g. 5 or 5%)") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 100")
    return value


def _account_id(text: str) -> str:
    if not re.fullmatch(r"[0-9]{12}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an AWS account id (12 digits)")
    return text
