"""docs/reference/cli.md's table of every subcommand and option, generated from the command's argparse tree.

    python scripts/cli_docs.py           # print the tables
    python scripts/cli_docs.py --write   # put them between the markers of docs/reference/cli.md
    python scripts/cli_docs.py --check   # exit 1 when the page is not current

``governor_client.__main__.build_parser()`` without arguments builds every subcommand (each module's
``add_arguments``), which is what ``--help`` never does (it stays lazy: tests/unit/test_cli_lazy_imports.py).
One section per command (and per sub-subcommand, ``prices fetch``), one row per argument: how it is
written, what it takes, its default and its help. tests/unit/test_reference_docs.py keeps the page current.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docblocks import ROOT, Block, cell, main

sys.path.insert(0, str(ROOT / "client"))
sys.path.insert(0, str(ROOT / "layers" / "governor"))

BLOCK = Block("docs/reference/cli.md", "cli-options", "scripts/cli_docs.py")
#: Options every command has, shown once at the top rather than in each table.
COMMON = {"-h", "--debug"}


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand of ``parser``, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _written(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    metavar = ""
    if action.nargs != 0:
        shown = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
        metavar = " " + (" ".join(shown) if isinstance(shown, tuple) else str(shown))
        if action.nargs in {"*", "+"}:
            metavar += " ..."
    return ", ".join(f"`{flag}{metavar}`" for flag in action.option_strings)


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default is None or action.default == argparse.SUPPRESS or action.required:
        return "required" if action.required and action.option_strings else ""
    if isinstance(action.default, list | tuple):
        return ", ".join(f"`{v}`" for v in action.default) or "none"
    return f"`{action.default}`"


def _takes(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "flag"
    if action.choices:
        return " | ".join(f"`{c}`" for c in action.choices)
    kind = getattr(action.type, "__name__", "") if action.type is not None else ""
    return {"int": "integer", "float": "number", "Path": "path", "": "text"}.get(
        kind, kind.strip("_").replace("_", " ")
    )


def _rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | takes | default | what it does |", "|---|---|---|---|"]
    for action in parser._actions:
        hidden = action.help == argparse.SUPPRESS
        if hidden or isinstance(action, argparse._SubParsersAction) or COMMON & set(action.option_strings):
            continue
        help_text = (action.help or "") % {"default": action.default, "prog": parser.prog}
        rows.append(f"| {_written(action)} | {cell(_takes(action))} | {cell(_default(action))} | {cell(help_text)} |")
    return rows


def _section(name: str, summary: str, parser: argparse.ArgumentParser) -> Iterator[str]:
    yield f"### `tuning-governor {name}`"
    yield ""
    yield cell((parser.description or summary).replace(str(Path.home()), "~"))
    yield ""
    subcommands = list(_subparsers(parser))
    if len(parser._actions) > len(COMMON) + bool(subcommands):
        yield from _rows(parser)
        yield ""
    for sub_name, sub_help, sub in subcommands:
        yield from _section(f"{name} {sub_name}", sub_help, sub)


def tables() -> str:
    from governor_client.__main__ import build_parser  # noqa: PLC0415 - after the path is set

    parser = build_parser()
    lines = [
        "Every command also takes `-h, --help` (its options, then exit) and `--debug` (on failure, print the"
        " traceback too; or set `TUNING_GOVERNOR_DEBUG=1`); `tuning-governor --version` prints the version.",
        "",
    ]
    for name, summary, sub in _subparsers(parser):
        lines += list(_section(name, summary, sub))
    return "\n".join(lines).rstrip("\n")


if __name__ == "__main__":
    raise SystemExit(main([(BLOCK, tables)], __doc__.splitlines()[0]))
