"""The ``tuning-governor`` command (client side; nothing here runs in Lambda).

    tuning-governor replay EVENTS.jsonl --policy POLICY.yaml --out RESULT.json
    python -m governor_sim.cli replay EVENTS.jsonl --policy POLICY.yaml --out RESULT.json

Subcommands (docs/cli.md):
  replay   what a policy would have done to captured SageMaker events, and what it would have saved,
           with the scheduled sweep run on the events' timeline (--sweep-every, default the
           template's rate(5 minutes); 0 = none); --html DIR also writes the what-if as an HTML page
           with plots (docs/replay.md). Offline, except an s3:// source (your AWS credentials)
  report   an HTML page with plots (and PNGs for chat) of a job, a team or a month, read from the
           governor's DynamoDB table (--table; your AWS credentials)
  validate check a policy before it goes live: the governor's schema checks plus semantic ones
           (budgets below an hour of a team's capacity, quotas above the account's with --account,
           guards that monitor mode will never enforce, deprecated keys); --format json for CI
  check    judge a tuning request before launch: valid against SageMaker's model, worst-case and typical
           cost, the governor's verdict on arrival, config lint; exit 0 ok, 1 warnings, 2 refused/invalid
  simulate write an event log (the input of replay) from a scenario file, offline
  submit   send a tuning-job request to the governor's submission queue (docs/queue.md; your AWS
           credentials): the governor creates it when it fits your team's share and the quota
  demo     the offline demo (as `make demo`)

Exit status (``governor_sim.cli_errors.ExitCode``, docs/cli.md): 0 done; 1 findings (validate's
warnings); 2 bad usage or input; 3 AWS unusable (credentials, access, endpoint, missing table);
4 replay rejected too many lines; 5 unexpected error (a bug); 130 interrupted. Each failure is one line
on stderr; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import NoReturn

from governor_sim import check, demo_cli, prices_export, replay, report, simulate, submit_cli, validate
from governor_sim.cli_errors import ExitCode, run_guarded

Command = Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line naming the fix (``--help``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _add_debug(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--debug",
        action="store_true",
        default=default,
        help="on failure, print the traceback too (default: one line; or set TUNING_GOVERNOR_DEBUG=1)",
    )


def _demo(args: argparse.Namespace) -> int:
    """Run the demo; 0, or 1 when a handler failed on the way."""
    from governor_sim import demo  # noqa: PLC0415 - sets fake credentials when imported: only when it runs

    with simulate.offline_environment():
        return demo.run_with_args(args)


#: Each subcommand: its name, its arguments, what runs it, its one-line help and its --help description.
SUBCOMMANDS: tuple[tuple[str, Callable[[argparse.ArgumentParser], None], Command, str, str], ...] = (
    (
        "replay",
        replay.add_arguments,
        replay.run_command,
        "replay captured SageMaker events under a policy: decisions, stops, summaries and savings",
        "Replay EventBridge events (one per line, as a rule target receives them) through the real"
        " handlers under POLICY and report what the policy would have decided, stopped and saved."
        " Offline for a file or folder; an s3:// source is read with your AWS credentials. See docs/replay.md.",
    ),
    (
        "validate",
        validate.add_arguments,
        validate.run_command,
        "check a policy before it goes live: exit 0 good, 1 warnings, 2 broken",
        "Check POLICY with the governor's own schema checks and semantic ones (budgets below an hour of"
        " a team's capacity, guards monitor mode never enforces, deprecated keys), offline; with --account"
        " also quotas against the account's Service Quotas (AWS credentials). Exit 0 good, 1 warnings, 2 broken.",
    ),
    (
        "report",
        report.add_arguments,
        report.run_command,
        "an HTML page (and PNGs) of a job, a team or a month, from the governor's table (AWS credentials)",
        "Read the governor's DynamoDB table (calls AWS with your AWS credentials) and write a self-contained"
        " HTML page: objective by trial with the best so far, cumulative cost with the budget and the stop,"
        " instances held per type against the limit. Needs matplotlib (the cli extra).",
    ),
    (
        "simulate",
        simulate.add_arguments,
        simulate.run_command,
        "write an event log (replay's input) from a scenario file, offline",
        simulate.DESCRIPTION,
    ),
    (
        "prices",
        prices_export.add_arguments,
        prices_export.run_command,
        "prices: fetch (AWS's public offer files, for check and replay) or export (the deployed governor's)",
        "prices fetch: read AWS's public SageMaker offer files (internet, no credentials) into the catalogue check and"
        " replay price with. prices export: read the price catalogs the deployed governor's daily refresh stored in"
        " its DynamoDB table (your AWS credentials), in the bundled catalogue's format, for replay --prices FILE.",
    ),
    (
        "check",
        check.add_arguments,
        check.run_command,
        "judge a tuning request before launch: validity, cost, verdict, lint; exit 0 ok, 1 warnings, 2 refused",
        "Judge a CreateHyperParameterTuningJob request (as --cli-input-json takes it) before launch: validated"
        " against botocore's SageMaker model, worst-case and typical cost, the governor's verdict on arrival"
        " (the policy's quotas, or --table's state) and config lint. Exit 0 ok, 1 warnings, 2 refused or invalid."
        " See docs/check.md.",
    ),
    (
        "submit",
        submit_cli.add_arguments,
        submit_cli.run_command,
        "send a tuning-job request to the governor's queue (AWS credentials): created when it fits",
        submit_cli.DESCRIPTION,
    ),
    ("demo", demo_cli.add_arguments, _demo, "the offline demo (make demo)", demo_cli.DESCRIPTION),
)


def build_parser() -> argparse.ArgumentParser:
    """The parser: one subparser per subcommand, each setting ``command`` to the function that runs it."""
    parser = Parser(
        prog="tuning-governor",
        description=(
            "Tuning Governor's client tools. replay (of a file), simulate, validate and demo run offline;"
            " report, validate --account and replay s3:// call AWS with your credentials. Exit codes: docs/cli.md."
        ),
    )
    _add_debug(parser, False)
    commands = parser.add_subparsers(title="commands", dest="name", required=True, metavar="COMMAND")
    for name, add_arguments, runner, help_text, description in SUBCOMMANDS:
        sub = commands.add_parser(name, help=help_text, description=description)
        add_arguments(sub)
        _add_debug(sub, argparse.SUPPRESS)
        sub.set_defaults(command=runner)
    return parser


@contextlib.contextmanager
def _layer_logs(debug: bool) -> Iterator[None]:
    """The governor's Powertools logger writes JSON lines for Lambda; at a terminal only errors matter
    (unless ``debug``). Its level is put back afterwards: ``main`` may run inside a longer process."""
    from tuning_governor.observability import logger  # noqa: PLC0415 - only once a command runs

    previous = logger.log_level
    if not debug:
        logger.setLevel("ERROR")
    try:
        yield
    finally:
        logger.setLevel(previous)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the process arguments) and run the subcommand; return its exit status
    (``ExitCode``). A failure is one line on stderr (with ``--debug``, after its traceback)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed in one line
        return int(exc.code or 0) if not isinstance(exc.code, str) else int(ExitCode.USAGE)
    debug = bool(args.debug) or os.environ.get("TUNING_GOVERNOR_DEBUG", "") not in ("", "0")
    command: Command = args.command
    with _layer_logs(debug):
        return run_guarded(args.name, lambda: command(args), debug=debug)


if __name__ == "__main__":
    sys.exit(main())
