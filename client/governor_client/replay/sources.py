"""Where the replay's events come from: a JSONL file, standard input, a capture folder or an S3 prefix,
each readable twice (the first reading finds each job's last line); and the policy file."""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import boto3

from governor_client.replay.capture import CaptureError, download, folder_lines, is_s3_uri
from governor_client.replay.lines import ReplayInputError
from tuning_governor.policy import Policy, PolicyError, parse_policy


@dataclass(frozen=True)
class EventLines:
    """The lines of a source, and how to read them again from the start (the same lines)."""

    lines: Iterable[bytes | str]
    reread: Callable[[], Iterable[bytes | str]]


def _unreadable(source: str, exc: OSError) -> ReplayInputError:
    return ReplayInputError(f"cannot read events file {source}: {exc.strerror or type(exc).__name__}")


def _read(source: str, handle: BinaryIO) -> Iterator[bytes]:
    try:
        yield from handle
    except OSError as exc:
        raise _unreadable(source, exc) from None


@contextlib.contextmanager
def _stdin_copy() -> Iterator[Path]:
    """Standard input copied to a temporary file (so that it can be read twice), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="tuning-governor-stdin-") as folder:
        copy = Path(folder) / "events.jsonl"
        try:
            with copy.open("wb") as spool:
                shutil.copyfileobj(sys.stdin.buffer, spool)
        except OSError as exc:
            raise ReplayInputError(
                f"cannot copy standard input to a temporary file: {exc.strerror or type(exc).__name__}"
            ) from None
        yield copy


@contextlib.contextmanager
def open_file(path: str | Path) -> Iterator[EventLines]:
    """A JSONL file's lines (``-`` = standard input, first copied to a temporary file), open while inside.
    ``ReplayInputError`` with one line if it cannot be read, when opened or while read."""
    source = str(path)
    if source == "-":
        with _stdin_copy() as copy, open_file(copy) as lines:
            yield lines
        return

    def reread() -> Iterator[bytes]:
        try:
            with open(path, "rb") as again:
                yield from _read(source, again)
        except OSError as exc:
            raise _unreadable(source, exc) from None

    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; only opening errors are caught here
    except OSError as exc:
        raise _unreadable(source, exc) from None
    with handle:
        yield EventLines(_read(source, handle), reread)


@contextlib.contextmanager
def _capture_lines(folder: Path) -> Iterator[EventLines]:
    """A capture folder's lines (``governor_client.replay.capture``); a ``CaptureError`` while inside
    becomes ``ReplayInputError``."""
    try:
        yield EventLines(folder_lines(folder), lambda: folder_lines(folder))
    except CaptureError as exc:
        raise ReplayInputError(str(exc)) from None


@contextlib.contextmanager
def open_events(source: str | Path, s3: Any = None) -> Iterator[EventLines]:
    """The lines of a JSONL file (``-`` = stdin), a capture folder or an ``s3://bucket/prefix``.

    A folder or prefix is read as the template's capture path writes it (``governor_client.replay.capture``:
    objects in key order, gzip or not). An ``s3://`` prefix is downloaded first, with ``s3`` or a boto3
    S3 client of the caller's credentials, to a temporary folder removed afterwards. ``ReplayInputError``
    with one line when the source cannot be read.
    """
    text = str(source)
    try:
        if is_s3_uri(text):
            with tempfile.TemporaryDirectory(prefix="tuning-governor-capture-") as folder:
                download(text, Path(folder), s3 if s3 is not None else boto3.client("s3"))
                with _capture_lines(Path(folder)) as lines:
                    yield lines
            return
        if text != "-" and Path(text).is_dir():
            with _capture_lines(Path(text)) as lines:
                yield lines
            return
    except CaptureError as exc:
        raise ReplayInputError(str(exc)) from None
    with open_file(source) as lines:
        yield lines


def load_policy(path: str | Path) -> Policy:
    """Read and validate a policy file; ``ReplayInputError`` with a one-line message if it cannot be used."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReplayInputError(f"cannot read policy file {path}: {exc.strerror or type(exc).__name__}") from None
    except UnicodeDecodeError:
        raise ReplayInputError(f"cannot read policy file {path}: not UTF-8 text") from None
    try:
        return parse_policy(text, str(path))
    except PolicyError as exc:
        raise ReplayInputError(policy_error_line(exc)) from None


def policy_error_line(exc: PolicyError) -> str:
    """The first line of a ``PolicyError`` message, followed by its first problem, on one line."""
    line = str(exc).splitlines()[0] if str(exc) else "policy is invalid"
    if exc.problems:
        more = len(exc.problems) - 1
        line = f"{line.rstrip(':')}: {exc.problems[0]}" + (f" (and {more} more)" if more else "")
    return " ".join(line.split())
