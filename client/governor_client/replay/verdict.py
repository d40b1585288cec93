"""Whether a replay is worth reading: the share of its lines rejected against ``--max-rejected``, and the
count of lines a progress bar needs up front."""

from __future__ import annotations

from pathlib import Path

from governor_client.replay.model import ReplayResult


def rejection_problem(result: ReplayResult, source: str, max_percent: float) -> str | None:
    """One line saying too many lines were rejected (more than ``max_percent`` of them, or every one,
    or there was no line at all), with the first reason and what to do; None when the replay is usable."""
    counts = result.events
    if counts.lines == 0:
        return f"{source} holds no event line: nothing was replayed; check the path (docs/reference/replay.md)"
    share = 100.0 * counts.rejected / counts.lines
    if counts.rejected < counts.lines and share <= max_percent:
        return None
    first = result.rejected_events[0]
    return (
        f"{counts.rejected} of {counts.lines} lines rejected ({share:.0f}% > --max-rejected {max_percent:g}%);"
        f" first, line {first.line}: {first.reason}; check that {source} holds SageMaker's EventBridge events,"
        " one per line (docs/reference/replay.md)"
    )


def count_lines(source: str) -> int | None:
    """The number of lines of a JSONL file (for the progress bar's total); None for stdin, a folder or S3."""
    path = Path(source)
    if source == "-" or not path.is_file():
        return None
    count = 0
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                count += chunk.count(b"\n")
    except OSError:
        return None
    return count
