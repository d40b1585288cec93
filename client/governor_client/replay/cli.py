"""``tuning-governor replay``: the subcommand's arguments and what it runs.

tuning-governor replay EVENTS.jsonl --policy POLICY.yaml --out RESULT.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from governor_client.cli.aws import cli_client
from governor_client.cli.defaults import DEFAULT_MAX_REJECTED_PERCENT
from governor_client.cli.errors import ExitCode, fail
from governor_client.cli.progress import progress_bar
from governor_client.offline.environment import store_kind
from governor_client.prices import export as prices_export
from governor_client.replay.arguments import add_arguments
from governor_client.replay.capture import is_s3_uri
from governor_client.replay.lines import ReplayInputError
from governor_client.replay.model import ReplayResult
from governor_client.replay.page import ReplayInputs, write_replay_page
from governor_client.replay.run import replay_events
from governor_client.replay.schedule import interval_text
from governor_client.replay.sources import load_policy
from governor_client.replay.summary import render_summary
from governor_client.replay.timeline import Timeline
from governor_client.replay.verdict import count_lines, rejection_problem
from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog
from tuning_governor.policy import Policy

__all__ = ["EVENTS_FIX", "add_arguments", "run_command"]
EVENTS_FIX = "EVENTS is a JSONL file (- = stdin), a capture folder or s3://bucket/prefix (docs/reference/replay.md)"


def _inputs(args: argparse.Namespace) -> tuple[Policy, str]:
    """The policy (with ``--mode``) and the store kind; ``ReplayInputError`` for the first unusable input."""
    try:
        policy = load_policy(args.policy)
    except ReplayInputError as exc:
        fix = (
            "check --policy"
            if not Path(args.policy).is_file()
            else f"`tuning-governor validate {args.policy}` lists every problem"
        )
        raise ReplayInputError(f"{exc}; {fix}") from exc
    if args.mode:
        policy = policy.model_copy(update={"mode": args.mode})
    try:
        store = store_kind(getattr(args, "store", None))
    except ValueError as exc:  # a bad $TUNING_GOVERNOR_STORE
        raise ReplayInputError(str(exc)) from None
    if args.out and args.out != "-" and not Path(args.out).resolve().parent.is_dir():
        raise ReplayInputError(f"cannot write {args.out}: its directory does not exist")
    html_dir = getattr(args, "html", None)
    if html_dir and not Path(html_dir).resolve().parent.is_dir():
        raise ReplayInputError(f"cannot write {html_dir}: its parent directory does not exist")
    return policy, store


def _replay(args: argparse.Namespace) -> tuple[ReplayResult, str, Path | None, PriceCatalog]:
    """Replay, write ``--out`` and ``--html``: the result, its JSON text, the page written (if any) and the
    prices it judged with (the catalogue, the policy's prices filling its gaps)."""
    policy, store = _inputs(args)
    try:  # read before the replay's own moto starts, as an s3:// capture is
        catalog = prices_export.replay_catalog(args)
    except prices_export.PricesInputError as exc:
        raise ReplayInputError(str(exc)) from None
    probe = Timeline(jobs_drawn=args.html_jobs) if getattr(args, "html", None) else None
    source = str(args.events)
    s3 = cli_client("s3") if is_s3_uri(source) else None
    total = count_lines(source)
    with progress_bar(f"replaying {Path(source).name or source}", total=total) as bar:
        try:
            result = replay_events(
                args.events,
                policy,
                policy_source=str(args.policy),
                sweep_every=args.sweep_every,
                probe=probe,
                store=store,
                s3=s3,
                facts_table=getattr(args, "facts_from_table", None),
                dynamodb=(
                    cli_client("dynamodb", getattr(args, "prices_region", None))
                    if getattr(args, "facts_from_table", None)
                    else None
                ),
                catalog=catalog,
                on_line=lambda number: bar.update(completed=number),
                home_account=getattr(args, "home_account", None),
            )
        except ReplayInputError as exc:
            raise ReplayInputError(f"{exc}; {EVENTS_FIX}") from exc
        bar.update(completed=result.events.lines if total is None else total, total=total or result.events.lines)
    text = result.model_dump_json(indent=2) + "\n"
    if args.out and args.out != "-":
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ReplayInputError(f"cannot write {args.out}: {exc.strerror or type(exc).__name__}") from None
    page = _write_html(args, result, policy, probe) if probe is not None else None
    prices = (catalog or bundled_catalog()).with_policy_prices(policy.price_overrides(), policy.regional_prices())
    return result, text, page, prices


def run_command(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``replay`` with parsed arguments. 0 on success; one line on stderr and 2 when an input is
    unusable, 3 when AWS is (an s3:// source), 4 when too many lines were rejected (``--max-rejected``)."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        result, text, page, prices = _replay(args)
    except ReplayInputError as exc:
        return fail("replay", exc, debug=bool(getattr(args, "debug", False)), stream=err, known=ExitCode.USAGE)
    summary_stream = out
    if args.out == "-":
        out.write(text)
        summary_stream = err
    summary_stream.write(render_summary(result, events_source=str(args.events), out=args.out, prices=prices))
    if page is not None:
        summary_stream.write(f"HTML report: {page}\n")
    problem = rejection_problem(result, str(args.events), getattr(args, "max_rejected", DEFAULT_MAX_REJECTED_PERCENT))
    if problem is not None:
        print(f"tuning-governor replay: {problem}", file=err)
        return int(ExitCode.REJECTED)
    return 0


def _write_html(args: argparse.Namespace, result: ReplayResult, policy: Policy, probe: Timeline) -> Path:
    """The ``--html`` page (matplotlib, a client-side extra, is imported only to draw it)."""
    every = args.sweep_every
    sweep = f"every {interval_text(int(every.total_seconds()))}" if every else "none (--sweep-every 0)"
    inputs = ReplayInputs(events=str(args.events), policy=str(args.policy), sweep_every=sweep)
    try:
        return write_replay_page(result, probe, policy, inputs, Path(args.html))
    except OSError as exc:
        raise ReplayInputError(f"cannot write {args.html}: {exc.strerror or type(exc).__name__}") from None
