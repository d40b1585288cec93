"""How ``tuning-governor`` commands fail: one line on stderr naming what failed and what to do, and an
exit status from one table (docs/reference/cli.md). ``--debug`` prints the traceback too.

=====  ==========================================================================================
code   meaning
=====  ==========================================================================================
0      done
1      done, with findings: ``validate``'s warnings; ``demo``: a handler failed
2      bad usage or an unusable input (a missing file, an invalid policy or scenario, bad argument)
3      AWS cannot be used from here: no credentials, credentials refused, access denied, no region,
       endpoint unreachable, a table/bucket that does not exist
4      ``replay``: more of the events' lines were rejected than ``--max-rejected`` allows
5      an unexpected error (a bug): rerun with ``--debug`` and report the traceback
130    interrupted (Ctrl-C)
=====  ==========================================================================================
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterator
from enum import IntEnum
from typing import TYPE_CHECKING, TextIO
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from botocore.exceptions import ClientError


class ExitCode(IntEnum):
    """The exit statuses of every ``tuning-governor`` command (the module docstring's table)."""

    OK = 0
    FINDINGS = 1
    USAGE = 2
    AWS = 3
    REJECTED = 4
    INTERNAL = 5
    INTERRUPTED = 130


class CommandError(Exception):
    """A failure a command reports as one line (what failed; what to do) with its exit status."""

    def __init__(self, message: str, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.code = code


CREDENTIALS_HINT = "set AWS_PROFILE (or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY), or run `aws sso login`"
NOT_FOUND = {
    "ResourceNotFoundException",
    "NoSuchBucket",
    "NoSuchKey",
    "NotFound",
    "NoSuchEntity",
    # SQS (a wrong --queue-url): the query protocol's code, and the JSON protocol's.
    "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist",
}
REFUSED = {
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
}
DENIED = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError"}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what caused it (``raise ... from`` and the exception being handled), outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _client_error(exc: ClientError) -> str:
    error = exc.response.get("Error", {})
    code, message = str(error.get("Code", "")), str(error.get("Message", "")).rstrip(".")
    operation = exc.operation_name
    if code in NOT_FOUND:
        return f"{operation}: not found ({code}: {message}); check the name and --region (the stack's outputs)"
    if code in REFUSED:
        return f"{operation}: AWS refused the credentials ({code}); refresh them: {CREDENTIALS_HINT}"
    if code in DENIED:
        return (
            f"{operation}: access denied ({message}); the caller needs this permission (docs/explanation/security.md)"
        )
    return f"{operation} failed: {code}: {message}"


def aws_problem(exc: BaseException) -> str | None:
    """What went wrong with AWS and what to do, if an AWS SDK error is in ``exc``'s chain; else None."""
    # Nothing has loaded the SDK: no SDK error can be in the chain (and a usage error stays fast).
    return _sdk_problem(exc) if "botocore" in sys.modules else None


def _sdk_problem(exc: BaseException) -> str | None:
    from botocore.exceptions import (  # noqa: PLC0415 - loaded only once a command has called AWS
        BotoCoreError,
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        MetadataRetrievalError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ProfileNotFound,
        ReadTimeoutError,
        TokenRetrievalError,
    )

    for link in _chain(exc):
        credentials = (NoCredentialsError, PartialCredentialsError, ProfileNotFound, TokenRetrievalError)
        if isinstance(link, (*credentials, MetadataRetrievalError)):
            # MetadataRetrievalError: the chain's last resort, the instance metadata service, did not answer.
            said = (
                f"{NoCredentialsError()}; no instance metadata service answered"
                if isinstance(link, MetadataRetrievalError)
                else link
            )
            return f"no AWS credentials usable ({said}); {CREDENTIALS_HINT}"
        if isinstance(link, NoRegionError):
            return "no AWS region; pass --region or set AWS_REGION"
        if isinstance(link, (EndpointConnectionError, ConnectTimeoutError, ConnectionClosedError, ReadTimeoutError)):
            url = urlsplit(str(getattr(link, "kwargs", {}).get("endpoint_url", "")))
            endpoint = f"{url.scheme}://{url.netloc}" if url.netloc else "the AWS endpoint"
            return (
                f"cannot reach {endpoint}; check the network (VPN, proxy), --region, and AWS_ENDPOINT_URL if it is set"
            )
        if isinstance(link, ClientError):
            return _client_error(link)
        if isinstance(link, BotoCoreError):
            return f"the AWS SDK failed: {link}"
    return None


def classify(exc: BaseException, known: ExitCode | None = None) -> tuple[ExitCode, str]:
    """The exit status and the one line to print for ``exc`` raised by a command. ``known``: the status
    of an error the caller knows (e.g. ``USAGE`` for an unusable input), unless AWS caused it."""
    problem = aws_problem(exc)
    if isinstance(exc, CommandError) or known is not None:
        code = exc.code if isinstance(exc, CommandError) else known
        assert code is not None
        # The command's own words say what it was doing (before the SDK's detail); the problem, what to do.
        return (ExitCode.AWS, f"{str(exc).split(': ')[0]}: {problem}") if problem else (code, str(exc))
    if problem is not None:
        return ExitCode.AWS, problem
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED, "interrupted"
    if isinstance(exc, OSError):
        name = getattr(exc, "filename", None)
        return ExitCode.USAGE, f"cannot use {name or 'a file'}: {exc.strerror or type(exc).__name__}"
    detail = " ".join(str(exc).split())[:200]
    return ExitCode.INTERNAL, (
        f"unexpected error: {type(exc).__name__}: {detail}; this is a bug: rerun with --debug and report the traceback"
    )


def fail(
    name: str,
    exc: BaseException,
    *,
    debug: bool = False,
    stream: TextIO | None = None,
    known: ExitCode | None = None,
) -> int:
    """Print ``exc`` as the command's one line (after its traceback with ``debug``); its exit status
    (``classify``; ``known`` for an error the caller expects, such as an unusable input)."""
    err = stream or sys.stderr
    code, line = classify(exc, known)
    if debug:
        traceback.print_exception(exc, file=err)
    print(f"tuning-governor {name}: {' '.join(line.split())}", file=err)
    return int(code)


def run_guarded(name: str, command: Callable[[], int], *, debug: bool) -> int:
    """Run ``command``; whatever it raises becomes one line on stderr and an exit status (``fail``)."""
    try:
        return command()
    except (Exception, KeyboardInterrupt) as exc:
        return fail(name, exc, debug=debug)
