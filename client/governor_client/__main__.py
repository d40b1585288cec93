"""The ``tuning-governor`` command (client side; nothing here runs in Lambda).

    tuning-governor replay EVENTS.jsonl --policy POLICY.yaml --out RESULT.json
    python -m governor_client replay EVENTS.jsonl --policy POLICY.yaml --out RESULT.json

Subcommands (docs/reference/cli.md):
  replay   what a policy would have done to captured SageMaker events, and what it would have saved,
           with the scheduled sweep run on the events' timeline (--sweep-every, default the
           template's rate(5 minutes); 0 = none); --html DIR also writes the what-if as an HTML page
           with plots (docs/reference/replay.md). Offline, except an s3:// source (your AWS credentials)
  report   an HTML page with plots (and PNGs for chat) of a job, a team or a month, read from the
           governor's DynamoDB table (--table; your AWS credentials)
  validate check a policy before it goes live: the governor's schema checks plus semantic ones
           (budgets below an hour of a team's capacity, quotas above the account's with --account,
           guards that monitor mode will never enforce, deprecated keys); --format json for CI
  check    judge a tuning request before launch: valid against SageMaker's model, worst-case and typical
           cost, the governor's verdict on arrival, config lint; exit 0 ok, 1 warnings, 2 refused/invalid
  simulate write an event log (the input of replay) from a scenario file, offline
  submit   send a tuning-job request to the governor's submission queue (docs/explanation/queue.md; your AWS
           credentials): the governor creates it when it fits your team's share and the quota
  demo     the offline demo (as `make demo`)

Exit status (``governor_client.cli.errors.ExitCode``, docs/reference/cli.md): 0 done; 1 findings (validate's
warnings); 2 bad usage or input; 3 AWS unusable (credentials, access, endpoint, missing table);
4 replay rejected too many lines; 5 unexpected error (a bug); 130 interrupted. Each failure is one line
on stderr; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, NoReturn, TextIO

from governor_client.cli.errors import ExitCode, run_guarded

Command = Callable[[argparse.Namespace], int]
DISTRIBUTION = "tuning-governor"


class Subcommand(NamedTuple):
    """One ``tuning-governor`` subcommand. ``module`` is imported only when the command is named on the
    command line (``--help`` and ``--version`` import none): it defines ``add_arguments(parser)`` and
    ``run_command(args) -> int`` (the exit status), and ``DESCRIPTION`` when ``description`` is None.
    A new subcommand is one more row in ``SUBCOMMANDS``; its module keeps its heavy imports (moto,
    pydantic, the governor's layer) where they are used, so its own ``--help`` stays fast too."""

    name: str
    module: str
    help: str
    description: str | None = None
    runner: Command | None = None
    """What runs it, when not the module's ``run_command``."""

    def load(self) -> Any:
        return importlib.import_module(self.module)


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


def version() -> str:
    """The command's version (the distribution's: pyproject.toml's ``version``)."""
    from governor_client import __version__  # noqa: PLC0415 - the package is already imported, this is a lookup

    return __version__


class _Version(argparse.Action):
    """``--version``: the version on stdout, exit 0 (read only when asked: it costs a metadata scan)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        sys.stdout.write(f"{DISTRIBUTION} {version()}\n")
        parser.exit(0)


def _replay(args: argparse.Namespace) -> int:
    """Run the replay (its machinery loads now: a usage error was argparse's, from its arguments module)."""
    from governor_client.replay.cli import run_command  # noqa: PLC0415

    return run_command(args)


def _demo(args: argparse.Namespace) -> int:
    """Run the demo; 0, or 1 when a handler failed on the way."""
    from governor_client.demo import run as demo  # noqa: PLC0415 - sets fake credentials when imported: only when it runs
    from governor_client.simulator.command import offline_environment  # noqa: PLC0415 - the simulator, when it runs

    with offline_environment():
        return demo.run_with_args(args)


#: Each subcommand: its name, the module that holds its arguments and its runner, its one-line help, and
#: its --help description (None: the module's ``DESCRIPTION``).
SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand(
        "replay",
        "governor_client.replay.arguments",
        "replay captured SageMaker events under a policy: decisions, stops, summaries and savings",
        "Replay EventBridge events (one per line, as a rule target receives them) through the real"
        " handlers under POLICY and report what the policy would have decided, stopped and saved."
        " Offline for a file or folder; an s3:// source is read with your AWS credentials. See docs/reference/replay.md.",
        runner=_replay,
    ),
    Subcommand(
        "validate",
        "governor_client.validate.command",
        "check a policy before it goes live: exit 0 good, 1 warnings, 2 broken",
        "Check POLICY with the governor's own schema checks and semantic ones (budgets below an hour of"
        " a team's capacity, guards monitor mode never enforces, deprecated keys), offline; with --account"
        " also quotas against the account's Service Quotas (AWS credentials). Exit 0 good, 1 warnings, 2 broken.",
    ),
    Subcommand(
        "report",
        "governor_client.report.command",
        "an HTML page (and PNGs) of a job, a team or a month, from the governor's table (AWS credentials)",
        "Read the governor's DynamoDB table (calls AWS with your AWS credentials) and write a self-contained"
        " HTML page: objective by trial with the best so far, cumulative cost with the budget and the stop,"
        " instances held per type against the limit. Needs matplotlib (the cli extra).",
    ),
    Subcommand(
        "simulate",
        "governor_client.simulator.command",
        "write an event log (replay's input) from a scenario file, offline",
    ),
    Subcommand(
        "prices",
        "governor_client.prices.command",
        "prices: fetch (AWS's public offer files, for check and replay) or export (the deployed governor's)",
        "prices fetch: read AWS's public SageMaker offer files (internet, no credentials) into the catalogue check and"
        " replay price with. prices export: read the price catalogs the deployed governor's daily refresh stored in"
        " its DynamoDB table (your AWS credentials), in the bundled catalogue's format, for replay --prices FILE.",
    ),
    Subcommand(
        "check",
        "governor_client.check.command",
        "judge a tuning request before launch: validity, cost, verdict, lint; exit 0 ok, 1 warnings, 2 refused",
        "Judge a CreateHyperParameterTuningJob request (as --cli-input-json takes it) before launch: validated"
        " against botocore's SageMaker model, worst-case and typical cost, the governor's verdict on arrival"
        " (the policy's quotas, or --table's state) and config lint. Exit 0 ok, 1 warnings, 2 refused or invalid."
        " See docs/reference/check.md.",
    ),
    Subcommand(
        "submit",
        "governor_client.submit.command",
        "send a tuning-job request to the governor's queue (AWS credentials): created when it fits",
    ),
    Subcommand("demo", "governor_client.demo.arguments", "the offline demo (make demo)", runner=_demo),
)


def _named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (the first word that is not an option), if it is one of ours."""
    word = next((w for w in argv if not w.startswith("-")), None)
    return word if word in {s.name for s in SUBCOMMANDS} else None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser: one subparser per subcommand, each setting ``command`` to the function that runs it.

    With ``argv``, only the subcommand it names gets its arguments (its module is imported); the others
    are listed by name and help. Without, every subcommand is built (for tests and docs)."""
    parser = Parser(
        prog="tuning-governor",
        description=(
            "Tuning Governor's client tools. replay (of a file), simulate, validate, check and demo run offline;"
            " report, submit, prices export, validate --account and replay s3:// call AWS with your credentials."
            " Exit codes: docs/reference/cli.md."
        ),
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    _add_debug(parser, False)
    commands = parser.add_subparsers(title="commands", dest="name", required=True, metavar="COMMAND")
    chosen = None if argv is None else _named(argv)
    for spec in SUBCOMMANDS:
        if argv is not None and spec.name != chosen:
            commands.add_parser(spec.name, help=spec.help)
            continue
        module = spec.load()
        sub = commands.add_parser(spec.name, help=spec.help, description=spec.description or module.DESCRIPTION)
        module.add_arguments(sub)
        _add_debug(sub, argparse.SUPPRESS)
        sub.set_defaults(command=spec.runner or module.run_command)
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


class _QuietPipe:
    """stdout that stops writing, without an error, once its reader has gone (``check ... | head -1``):
    a closed pipe is not bad input, so the command runs on and exits with its own status. Later writes
    go to the null device (the descriptor too, so the interpreter's last flush finds nothing to fail on)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _closed(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._closed()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._closed()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _pipe_guard() -> Iterator[None]:
    """Guard the process's own stdout (not a stream a caller redirected it to) for the command's run."""
    if sys.stdout is not sys.__stdout__ or sys.stdout is None:
        yield
        return
    original = sys.stdout
    sys.stdout = _QuietPipe(original)
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout = original


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the process arguments) and run the subcommand; return its exit status
    (``ExitCode``). A failure is one line on stderr (with ``--debug``, after its traceback)."""
    words = sys.argv[1:] if argv is None else argv
    # The commands never send traces: without this, importing the governor's layer loads the X-Ray SDK.
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    try:
        args = build_parser(words).parse_args(words)
    except SystemExit as exc:  # --help, --version, or a usage error already printed in one line
        return int(exc.code or 0) if not isinstance(exc.code, str) else int(ExitCode.USAGE)
    debug = bool(args.debug) or os.environ.get("TUNING_GOVERNOR_DEBUG", "") not in ("", "0")
    command: Command = args.command
    with _pipe_guard(), _layer_logs(debug):
        return run_guarded(args.name, lambda: command(args), debug=debug)


if __name__ == "__main__":
    sys.exit(main())
