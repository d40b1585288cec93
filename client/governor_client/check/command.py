"""The ``check`` subcommand: its arguments, and running it (read the request and policy, judge, print)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from governor_client.cli.defaults import DEFAULT_REGION
from governor_client.cli.errors import CommandError, ExitCode

if TYPE_CHECKING:
    from tuning_governor.domain.capacity import Holder
    from tuning_governor.domain.pricing import PriceCatalog
    from tuning_governor.models.queue import QueuedRequest
    from tuning_governor.policy import Policy
    from tuning_governor.ports.quotas import Quotas


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``check`` subcommand's arguments."""
    parser.add_argument("request", metavar="REQUEST.json", help="the request as --cli-input-json takes it (- = stdin)")
    parser.add_argument(
        "--policy", default=None, help="the governor's policy (YAML or JSON; default: the empty policy)"
    )
    parser.add_argument(
        "--region", default=DEFAULT_REGION, help=f"the job's region, for prices (default {DEFAULT_REGION})"
    )
    parser.add_argument(
        "--table",
        default=None,
        help="the deployed governor's table: judge against its capacity ledger and holders (read-only; AWS credentials)",
    )
    parser.add_argument("--table-region", default=None, help="the table's region (default: --region's)")
    parser.add_argument(
        "--trial-minutes",
        type=float,
        default=None,
        help="how long a trial typically runs (at Hyperband's MaxResource): gives the typical cost",
    )
    parser.add_argument(
        "--submit",
        action="store_true",
        help="judge it as a submission to the governor's queue (tuning-governor submit): created now, queued or refused",
    )
    parser.add_argument(
        "--fit-to-share", action="store_true", help="with --submit: consent to a lower MaxParallel that fits now"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON (docs/check-result.schema.json)")


def _read(source: str) -> str:
    try:
        return sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise CommandError(f"cannot read {source}: {reason}; check the path") from exc


def _request(source: str) -> dict[str, Any]:
    try:
        document = json.loads(_read(source))
    except json.JSONDecodeError as exc:
        raise CommandError(f"{source} is not JSON ({exc}); give the request as --cli-input-json takes it") from exc
    if not isinstance(document, dict):
        raise CommandError(f"{source} holds a JSON {type(document).__name__}, not the request's object")
    return document


def _policy(source: str | None) -> Policy | None:
    """The policy file parsed; None without one (check_request's default, the empty policy)."""
    if source is None:
        return None
    from tuning_governor.policy import PolicyError, parse_policy  # noqa: PLC0415 - only with --policy

    try:
        return parse_policy(_read(source), source)
    except PolicyError as exc:
        raise CommandError(f"{source} is not a valid policy: {str(exc).splitlines()[0]}; run validate on it") from exc


def _table_state(table: str, region: str, *, waiting: bool) -> tuple[list[Holder], list[QueuedRequest]]:
    """What holds training instances per the deployed governor: its ledger's reservations plus standalone
    training jobs and warm pools (as admission reads them), or every holder when the ledger is empty;
    with ``waiting``, its queue's waiting requests too (whose own reservations are not counted)."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - only with --table

    from governor_client.cli.aws import cli_client  # noqa: PLC0415

    try:
        dynamodb = cli_client("dynamodb", region, credentials_first=True)
        from tuning_governor.adapters.dynamodb import GovernorStore  # noqa: PLC0415 - once there are credentials

        store = GovernorStore(dynamodb, table)
        queued = store.waiting_requests() if waiting else []
        names = {e.job_name.lower() for e in queued}
        ledger = store.read_ledger()
        if ledger.reservations:
            held = [h for h in ledger.holders() if h.key not in names]
            return held + store.holders(tuning_jobs=False), queued
        return store.holders(), queued
    except (ClientError, BotoCoreError) as exc:
        raise CommandError(f"cannot read table {table}: {exc}", ExitCode.AWS) from exc


def _account_quotas(region: str) -> Quotas:
    """The account's SageMaker Service Quotas, read as the governor reads them (read-only)."""
    from governor_client.cli.aws import cli_client  # noqa: PLC0415
    from tuning_governor.adapters.quotas import QuotaGateway  # noqa: PLC0415 - only with --table

    return QuotaGateway(cli_client("service-quotas", region), clock=lambda: datetime.now(UTC))


def _queue(
    policy: Policy | None, holders: list[Holder], waiting: list[QueuedRequest], quotas: Quotas | None, fit: bool
) -> Any:
    """``--submit``: the queue the request is judged as a submission to."""
    from governor_client.check.queue_view import SubmissionQueue  # noqa: PLC0415 - only with --submit
    from tuning_governor.policy import Policy  # noqa: PLC0415

    return SubmissionQueue(policy or Policy(), holders, waiting, quotas, fit)


def _client_catalog() -> PriceCatalog:
    """The catalogue check prices with (the user's fetched one over the bundled one), read once the
    request is valid."""
    from governor_client.prices.fetch import client_catalog  # noqa: PLC0415

    return client_catalog()


def run_command(args: argparse.Namespace) -> int:
    """Run ``check``: print the verdict, cost and findings; 0 ok, 1 warnings, 2 refused or invalid."""
    request = _request(args.request)
    policy = _policy(args.policy)
    region = args.table_region or args.region
    if args.fit_to_share and not args.submit:
        raise CommandError("--fit-to-share is the submission's consent: give it with --submit", ExitCode.USAGE)
    holders, waiting = _table_state(args.table, region, waiting=args.submit) if args.table else ([], [])
    quotas = _account_quotas(region) if args.table else None
    queue = _queue(policy, holders, waiting, quotas, args.fit_to_share) if args.submit else None
    from governor_client.check.core import check_request  # noqa: PLC0415 - botocore's model first, the rest if valid
    from tuning_governor.errors import TransientError  # noqa: PLC0415

    try:
        result = check_request(
            request,
            policy,
            region=args.region,
            catalog=_client_catalog,
            holders=holders,
            quotas=quotas,
            trial_minutes=args.trial_minutes,
            source=args.request,
            capacity_from=f"table {args.table} and the account's Service Quotas" if args.table else "policy quotas",
            queue=queue,
        )
    except TransientError as exc:
        raise CommandError(f"cannot read the account's Service Quotas in {region}: {exc}", ExitCode.AWS) from exc
    from governor_client.check.result import render_text  # noqa: PLC0415

    print(result.model_dump_json(indent=2) if args.json else render_text(result))
    return result.exit_code
