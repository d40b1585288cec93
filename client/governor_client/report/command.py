"""``tuning-governor report``'s arguments and run (the page itself: ``governor_client.report.page``). Building the
parser loads neither the pictures nor the governor's table adapter; without credentials the command says so
before it loads them (the AWS client is made, and its credentials found, first)."""

from __future__ import annotations

from argparse import ArgumentTypeError
from datetime import datetime
from pathlib import Path
from typing import Any


def add_arguments(parser: Any) -> None:
    """The ``report`` subcommand's arguments."""
    parser.add_argument("--table", required=True, help="the governor's DynamoDB table (the stack's TableName output)")
    parser.add_argument("--region", default=None, help="its region (default: the AWS SDK's)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--job", default=None, help="one tuning job")
    which.add_argument("--team", default=None, help="one team's jobs")
    parser.add_argument("--month", type=_month, default=None, help="only jobs created in this month (YYYY-MM)")
    parser.add_argument(
        "--account", type=_account_id, default=None, help="only this account's jobs (organisation mode; 12 digits)"
    )
    parser.add_argument(
        "--home-account",
        type=_account_id,
        default=None,
        help="the hub's account, whose jobs have plain keys (default: your credentials' account)",
    )
    parser.add_argument("--out", default="governor-report", help="folder for index.html and the PNGs")


def _month(text: str) -> str:
    try:
        datetime.strptime(text, "%Y-%m")
    except ValueError:
        raise ArgumentTypeError(f"{text!r} is not a month as YYYY-MM, e.g. 2026-11") from None
    return text


def _account_id(text: str) -> str:
    if len(text) != 12 or not text.isdigit():
        raise ArgumentTypeError(f"{text!r} is not an AWS account id (12 digits)")
    return text


def _scope(args: Any) -> str:
    scope = args.job or (f"team {args.team}" if args.team else "all jobs")
    return scope + (f" of account {args.account}" if args.account else "")


def _account(args: Any) -> Any:
    """The account filter (None: every account's jobs); the hub's account from STS unless given."""
    from governor_client.cli.aws import cli_client  # noqa: PLC0415
    from governor_client.report.page import Account  # noqa: PLC0415

    if args.account is None:
        return None
    home = args.home_account or cli_client("sts", args.region).get_caller_identity()["Account"]
    return Account(args.account, home)


def run_command(args: Any) -> int:
    """Read the live table through boto3 (the caller's credentials) and write the page."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - the SDK, once it runs

    from governor_client.cli.aws import cli_client  # noqa: PLC0415
    from governor_client.cli.errors import CommandError, ExitCode  # noqa: PLC0415
    from governor_client.cli.progress import progress_bar  # noqa: PLC0415

    title = f"Tuning Governor: {_scope(args)}" + (f", {args.month}" if args.month else "")
    try:
        dynamodb = cli_client("dynamodb", args.region, credentials_first=True)
        from governor_client.report.page import write_report  # noqa: PLC0415 - the pictures, once AWS answers
        from tuning_governor.adapters.dynamodb import GovernorStore  # noqa: PLC0415

        store, account = GovernorStore(dynamodb, args.table), _account(args)
        with progress_bar(f"reading {args.table} and drawing"):
            page = write_report(
                store, Path(args.out), title=title, job=args.job, team=args.team, month=args.month, account=account
            )
    except (ClientError, BotoCoreError) as exc:
        where = f" in {args.region}" if args.region else ""
        raise CommandError(f"cannot read table {args.table}{where}: {exc}", ExitCode.AWS) from exc
    print(page)
    return 0
