"""Progress bars for the commands that take more than a few seconds (``replay``, ``demo``, ``report``,
``validate --account``), drawn with rich on stderr when stderr is a terminal, and nothing otherwise
(a pipe, a CI log or a file stays clean). rich comes with the ``cli`` extra; without it, nothing is drawn.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO


class Bar:
    """One task's progress. Drawn only when the stream is a terminal; otherwise every call does nothing."""

    def __init__(self, progress: Any = None, task: Any = None) -> None:
        self._progress, self._task = progress, task

    @property
    def shown(self) -> bool:
        return self._progress is not None

    def advance(self, steps: float = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, steps)

    def update(self, *, completed: float | None = None, total: float | None = None, info: str | None = None) -> None:
        """Set how far it is (of ``total``, when known) and a short note shown after the bar."""
        if self._progress is None:
            return
        fields: dict[str, Any] = {}
        if info is not None:
            fields["info"] = info
        self._progress.update(self._task, completed=completed, total=total, **fields)


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@contextlib.contextmanager
def progress_bar(description: str, *, total: float | None = None, stream: TextIO | None = None) -> Iterator[Bar]:
    """A progress bar on ``stream`` (default stderr) while inside: a bar with a count and the time left
    when ``total`` is known, a spinner with the count when not. Nothing when ``stream`` is not a terminal."""
    target = stream or sys.stderr
    if not _is_terminal(target):
        yield Bar()
        return
    try:
        from rich.console import Console  # noqa: PLC0415 - optional (the cli extra)
        from rich.progress import (  # noqa: PLC0415
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
    except ImportError:
        yield Bar()
        return
    columns = (
        SpinnerColumn(finished_text="[green]done"),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
    )
    with Progress(*columns, console=Console(file=target), transient=False) as progress:
        task = progress.add_task(description, total=total, info="")
        yield Bar(progress, task)
