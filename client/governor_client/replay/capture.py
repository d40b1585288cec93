"""Reading what the template's capture path wrote: a folder or an ``s3://bucket/prefix`` of Firehose objects.

With ``CaptureEvents=true`` the stack sends every SageMaker tuning and training job state change to
Kinesis Data Firehose, which writes gzip objects under ``s3://<CaptureBucket>/events/YYYY/MM/DD/HH/``
named ``<stream>-<version>-YYYY-MM-DD-HH-MM-SS-<id>.gz``, each holding one event per line (the
stream's ``AppendDelimiterToRecord`` processor ends each record with a newline).

What a replay may rely on:

* objects are read in key order (a folder: relative path order), which for Firehose's names is
  delivery order; the events of one object in their order in it;
* gzip is recognised by its magic bytes, not by the name (``.gz`` objects someone unpacked still read);
* a line holding several JSON objects back to back (records delivered without the newline delimiter,
  as a stream without the processor writes them) is split into its objects; any other line is passed
  on untouched, for the replay to reject with its reason;
* hidden files (``.``-prefixed, e.g. ``.DS_Store``) and empty objects are skipped.

``s3://`` sources are downloaded before the replay starts: the replay runs inside ``moto.mock_aws``,
which would intercept any S3 call made while it runs.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

GZIP_MAGIC = b"\x1f\x8b"
S3_SCHEME = "s3://"


class CaptureError(Exception):
    """A capture that cannot be read: the message is one line, for the command's stderr."""


def is_s3_uri(source: str) -> bool:
    return source.startswith(S3_SCHEME)


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` -> ("bucket", "some/prefix"); CaptureError without a bucket."""
    bucket, _, prefix = uri.removeprefix(S3_SCHEME).partition("/")
    if not bucket:
        raise CaptureError(f"{uri} names no bucket (expected s3://bucket/prefix)")
    return bucket, prefix


def decode_object(data: bytes, name: str) -> bytes:
    """The object's bytes, gunzipped when they are gzip (possibly several members, as ``cat a.gz b.gz``)."""
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise CaptureError(f"cannot read {name}: not a valid gzip file ({exc})") from None


def _split_concatenated(line: str) -> list[str] | None:
    """``{..}{..}`` -> each object's text; None unless the whole line is JSON objects back to back."""
    decoder = json.JSONDecoder()
    pieces: list[str] = []
    index = 0
    while index < len(line):
        try:
            value, end = decoder.raw_decode(line, index)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        pieces.append(line[index:end])
        index = end
        while index < len(line) and line[index] in " \t\r":
            index += 1
    return pieces


def records(data: bytes) -> Iterator[bytes]:
    """One object's events, one item per event (see the module docstring for the splitting rules)."""
    for raw in data.split(b"\n"):
        line = raw.strip()
        if not line:
            continue
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                yield line
                continue
            pieces = _split_concatenated(text)
            if pieces and len(pieces) > 1:
                yield from (piece.encode("utf-8") for piece in pieces)
                continue
        yield line


def folder_files(folder: Path) -> list[Path]:
    """The capture's files under ``folder``, recursively, in relative-path order; hidden ones left out."""
    files = [
        path
        for path in folder.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(folder).parts)
    ]
    return sorted(files, key=lambda path: path.relative_to(folder).as_posix())


def folder_lines(folder: Path) -> Iterator[bytes]:
    """Every event in a capture folder, object by object (CaptureError if it holds no file)."""
    files = folder_files(folder)
    if not files:
        raise CaptureError(f"no capture files in folder {folder}")
    for path in files:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CaptureError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
        yield from records(decode_object(data, str(path)))


def download(uri: str, folder: Path, s3: Any) -> int:
    """Copy every object under ``uri`` into ``folder`` (keys as relative paths); the number copied.

    ``s3`` is a boto3 S3 client. CaptureError with one line when the prefix is empty or S3 refuses.
    """
    bucket, prefix = split_s3_uri(uri)
    copied = 0
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                key = str(item["Key"])
                relative = key[len(prefix) :].lstrip("/") if prefix.endswith("/") or not prefix else key
                if key.endswith("/") or not relative:
                    continue  # a console "folder" marker
                target = folder / relative
                if folder.resolve() not in target.resolve().parents:
                    raise CaptureError(f"object key {key!r} would be written outside the download folder")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
                copied += 1
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise CaptureError(
            f"cannot read {uri}: {error.get('Code', 'error')} {error.get('Message', '')}".strip()
        ) from None
    except BotoCoreError as exc:
        raise CaptureError(f"cannot read {uri}: {exc}") from None
    if copied == 0:
        raise CaptureError(f"no objects under {uri}")
    return copied
