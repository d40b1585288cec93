"""Generated blocks of the docs: text a script renders from the code, between two markers of a page.

    <!-- policy-keys: start (scripts/policy_docs.py --write) -->
    ...what the script renders...
    <!-- policy-keys: end -->

Every generator of docs/ uses this one write/check loop: ``python scripts/X.py`` prints its blocks,
``--write`` puts them in their pages, ``--check`` exits 1 naming each page that is not current. A test
keeps each page current with ``Block.stale`` (tests/unit/test_reference_docs.py for the reference pages).
Hand-written text outside the markers is kept as it is.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Block:
    """One generated block: the page it lives in (from the repository root), its marker name, the script."""

    page: str
    name: str
    script: str

    @property
    def path(self) -> Path:
        return ROOT / self.page

    @property
    def start(self) -> str:
        return f"<!-- {self.name}: start ({self.script} --write) -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.name}: end -->"

    def spliced(self, text: str, generated: str) -> str:
        """``text`` with what lies between the markers replaced by ``generated`` (ValueError: no markers)."""
        head, found, rest = text.partition(self.start)
        _, closed, tail = rest.partition(self.end)
        if not (found and closed):
            raise ValueError(f"{self.page} has no {self.start} ... {self.end} markers")
        return f"{head}{self.start}\n{generated}\n{self.end}{tail}"

    def stale(self, generated: str) -> str | None:
        """None when the page holds ``generated``; else what to run."""
        text = self.path.read_text(encoding="utf-8")
        if self.spliced(text, generated) == text:
            return None
        return f"{self.page} is stale ({self.name}): run python {self.script} --write"

    def write(self, generated: str) -> bool:
        """Put ``generated`` in the page; True when that changed it."""
        text = self.path.read_text(encoding="utf-8")
        new = self.spliced(text, generated)
        if new != text:
            self.path.write_text(new, encoding="utf-8")
        return new != text


Generator = tuple[Block, Callable[[], str]]


def main(
    generators: Sequence[Generator],
    description: str,
    argv: Sequence[str] | None = None,
    *,
    prepare: Callable[[], None] | None = None,
) -> int:
    """The scripts' command line: print the blocks, ``--write`` them (after ``prepare``: the input files a
    block is rendered from), or ``--check`` them (exit 1 naming each stale page)."""
    parser = argparse.ArgumentParser(description=description)
    mode = parser.add_mutually_exclusive_group()
    pages = sorted({block.page for block, _ in generators})
    mode.add_argument("--write", action="store_true", help=f"write the blocks into {', '.join(pages)}")
    mode.add_argument("--check", action="store_true", help="exit 1 when a page does not hold what is generated")
    args = parser.parse_args(argv)
    stale = []
    if args.write and prepare is not None:
        prepare()
    for block, render in generators:
        generated = render()
        if args.write:
            print(f"{'wrote' if block.write(generated) else 'unchanged'} {block.page} ({block.name})")
        elif args.check:
            stale += [problem] if (problem := block.stale(generated)) else []
        else:
            sys.stdout.write(f"{block.start}\n{generated}\n{block.end}\n")
    for problem in stale:
        print(problem, file=sys.stderr)
    return 1 if stale else 0


def cell(text: object) -> str:
    """``text`` fit for one cell of a markdown table: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")
