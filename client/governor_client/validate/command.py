"""The ``validate`` subcommand: its arguments, and running it (read the policy, validate, print)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from governor_client.cli.defaults import DEFAULT_REGION
from governor_client.cli.progress import progress_bar
from governor_client.validate.member_options import account_id as _account_id
from governor_client.validate.member_options import add_member_arguments, member_check

if TYPE_CHECKING:
    from governor_client.validate.findings import AccountQuota


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``validate`` subcommand's arguments."""
    parser.add_argument("policy", metavar="POLICY", help="the policy file, YAML or JSON (- = stdin)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument(
        "--region",
        default=DEFAULT_REGION,
        help=f"region whose prices (and, with --account, quotas) the checks use (default: {DEFAULT_REGION})",
    )
    parser.add_argument(
        "--account",
        nargs="?",
        const=True,
        default=None,
        type=_account_id,
        metavar="ID",
        help=(
            "also compare quotas and team limits with the account's SageMaker Service Quotas (AWS credentials);"
            " with a member's ID: check that member's role and forwarding rule instead (see --members)"
        ),
    )
    add_member_arguments(parser)
    parser.add_argument(
        "--slack-secret-prefix",
        default=os.environ.get("SLACK_SECRET_PREFIX"),
        metavar="PREFIX",
        help="the stack's SlackSecretPrefix (default: $SLACK_SECRET_PREFIX): warn on team secrets outside it",
    )
    parser.add_argument(
        "--team-topic-prefix",
        default=os.environ.get("TEAM_TOPIC_PREFIX"),
        metavar="PREFIX",
        help="the stack's TeamTopicPrefix (default: $TEAM_TOPIC_PREFIX): warn on team topics outside it",
    )


def _live_account_quota(region: str) -> AccountQuota:
    from governor_client.validate.account import live_account_quota  # noqa: PLC0415 - only with --account

    return live_account_quota(region)


def run_command(args: argparse.Namespace) -> int:
    """Run ``validate``: print the findings and return 0 (good), 1 (warnings) or 2 (broken/unreadable)."""
    source: str = args.policy
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or f"{type(exc).__name__}: {exc}"
        print(f"tuning-governor validate: cannot read {source}: {reason}; check the path", file=sys.stderr)
        return 2
    from governor_client.validate.findings import render_text  # noqa: PLC0415 - once it runs (a usage error is argparse's)
    from governor_client.validate.validation import CheckOptions, validate_text  # noqa: PLC0415

    account_quota = _live_account_quota(args.region) if args.account is True else None
    options = CheckOptions(
        region=args.region,
        account_quota=account_quota,
        slack_secret_prefix=args.slack_secret_prefix,
        team_topic_prefix=args.team_topic_prefix,
        members=member_check(args),
    )
    with progress_bar(f"reading Service Quotas in {args.region}") if args.account is True else contextlib.nullcontext():
        result = validate_text(text, source, options)
    if args.format == "json":
        print(result.model_dump_json(indent=2))
    else:
        print(render_text(result))
    return result.exit_code
