"""docs/reference/cli.md's exit table for what the integration matrix cannot provoke: a bug, Ctrl-C, refused or
denied credentials, and the traceback under --debug only."""

from __future__ import annotations

import io

import pytest
from botocore.exceptions import ClientError

from governor_client.cli.errors import CommandError, ExitCode, classify, fail


def _client_error(code: str, message: str = "m") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "Query")


@pytest.mark.parametrize(
    ("exc", "code", "says"),
    [
        (KeyError("x"), ExitCode.INTERNAL, "this is a bug: rerun with --debug"),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED, "interrupted"),
        (_client_error("ExpiredTokenException"), ExitCode.AWS, "refresh them"),
        (
            _client_error("AccessDeniedException", "no dynamodb:Query"),
            ExitCode.AWS,
            "access denied (no dynamodb:Query)",
        ),
        (_client_error("ThrottlingException"), ExitCode.AWS, "Query failed: ThrottlingException"),
        (FileNotFoundError(2, "No such file or directory", "p.yaml"), ExitCode.USAGE, "cannot use p.yaml"),
        (CommandError("bad scenario"), ExitCode.USAGE, "bad scenario"),
    ],
)
def test_each_failure_has_its_exit_status_and_what_to_do(exc: BaseException, code: ExitCode, says: str) -> None:
    got, line = classify(exc)
    assert got == code
    assert says in line


def test_an_aws_cause_under_a_command_error_is_an_aws_failure() -> None:
    try:
        try:
            raise _client_error("ResourceNotFoundException", "Requested resource not found")
        except ClientError as inner:
            raise CommandError("cannot read table t: detail") from inner
    except CommandError as exc:
        code, line = classify(exc)
    assert code == ExitCode.AWS
    assert line.startswith("cannot read table t: Query: not found")


def test_the_traceback_only_with_debug() -> None:
    with pytest.raises(RuntimeError) as raised:
        raise RuntimeError("boom")
    quiet, loud = io.StringIO(), io.StringIO()
    assert fail("report", raised.value, stream=quiet) == fail("report", raised.value, debug=True, stream=loud) == 5
    assert quiet.getvalue().count("\n") == 1 and "Traceback" not in quiet.getvalue()
    assert "Traceback (most recent call last)" in loud.getvalue()
    assert loud.getvalue().splitlines()[-1] == quiet.getvalue().strip()
