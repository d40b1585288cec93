"""What every benchmark script shares: its section of RESULTS.md and the code it measured."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTES_MARKER = "<!-- notes: kept across runs -->"


def write_section(path: Path, section: str, *, start: str, end: str) -> None:
    """Replace the section between ``start`` and ``end`` in RESULTS.md (or append it below the notes
    marker): each benchmark rewrites only its own table, the hand-written notes stay."""
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        before, rest = text.split(start, 1)
        after = rest.split(end, 1)[1]
        text = before + section.rstrip("\n") + after
    else:
        if NOTES_MARKER not in text:
            text = text.rstrip("\n") + "\n\n" + NOTES_MARKER + "\n"
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def git_head() -> str:
    """The commit measured (short), marked when the work tree has uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],  # noqa: S607
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"],  # noqa: S607
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + uncommitted changes" if dirty else "")
