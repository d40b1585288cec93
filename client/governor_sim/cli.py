"""The ``tuning-governor`` command (client side; nothing here runs in Lambda).

    tuning-governor replay EVENTS.jsonl --policy POLICY.yaml --out RESULT.json
    python -m governor_sim.cli replay EVENTS.jsonl --policy POLICY.yaml --out RESULT.json

Subcommands:
  replay   what a policy would have done to captured SageMaker events, and what it would have saved,
           with the scheduled sweep run on the events' timeline (--sweep-every, default the
           template's rate(5 minutes); 0 = none); --html DIR also writes the what-if as an HTML page
           with plots (docs/replay.md)
  report   an HTML page with plots (and PNGs for chat) of a job, a team or a month, read from the
           governor's DynamoDB table (--table; your AWS credentials)
  validate check a policy before it goes live: the governor's schema checks plus semantic ones
           (budgets below an hour of a team's capacity, quotas above the account's with --account,
           guards that monitor mode will never enforce, deprecated keys); --format json for CI

Exit status: 0 on success; 2 for a usage error or an unusable input (one line on stderr).
validate: 0 good, 1 warnings, 2 broken (like linters).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from governor_sim import prices_export, replay, report, validate

Command = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    """The parser: one subparser per subcommand, each setting ``command`` to the function that runs it."""
    parser = argparse.ArgumentParser(
        prog="tuning-governor",
        description="Tuning Governor's client tools (offline; nothing is sent to AWS).",
    )
    commands = parser.add_subparsers(title="commands", dest="name", required=True, metavar="COMMAND")
    replay_parser = commands.add_parser(
        "replay",
        help="replay captured SageMaker events under a policy: decisions, stops, summaries and savings",
        description=(
            "Replay EventBridge events (one per line, as a rule target receives them) through the real"
            " handlers under POLICY, offline, and report what the policy would have decided, stopped and"
            " saved. See docs/replay.md."
        ),
    )
    replay.add_arguments(replay_parser)
    replay_parser.set_defaults(command=replay.run_command)
    validate_parser = commands.add_parser(
        "validate",
        help="check a policy before it goes live: exit 0 good, 1 warnings, 2 broken",
        description=(
            "Check POLICY with the governor's own schema checks and semantic ones (budgets below an hour of"
            " a team's capacity, quotas above the account's with --account, guards monitor mode never"
            " enforces, deprecated keys). Exit 0 good, 1 warnings, 2 broken."
        ),
    )
    validate.add_arguments(validate_parser)
    validate_parser.set_defaults(command=validate.run_command)
    report_parser = commands.add_parser(
        "report",
        help="an HTML page (and PNGs) of a job, a team or a month, from the governor's table",
        description=(
            "Read the governor's DynamoDB table (your AWS credentials) and write a self-contained HTML page:"
            " objective by trial with the best so far, cumulative cost with the budget and the stop, instances"
            " held per type against the limit. Needs matplotlib (client side)."
        ),
    )
    report.add_arguments(report_parser)
    report_parser.set_defaults(command=report.run_command)
    prices_parser = commands.add_parser("prices", help="the prices the deployed governor uses (prices export)")
    prices_export.add_arguments(prices_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the process arguments) and run the subcommand; return its exit status."""
    args = build_parser().parse_args(argv)
    command: Command = args.command
    return command(args)


if __name__ == "__main__":
    raise SystemExit(main())
