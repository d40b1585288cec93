"""Every ``tuning-governor`` command fails cleanly: one line on stderr naming what failed and what to do,
an exit status from docs/reference/cli.md's table, no traceback (``--debug`` shows it), and no half-minute of
silent retries before saying that an endpoint is unreachable."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_matrix import CASES, UNREACHABLE, Case, closed_port, run_case, write_inputs
from tests.conftest import ROOT

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("cli_errors")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_inputs(tmp_path_factory.mktemp("cli-inputs"))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.command}|{c.condition}" for c in CASES])
def test_each_command_fails_with_one_line_and_its_exit_status(case: Case, inputs: Path) -> None:
    outcome = run_case(case, inputs)
    assert "Traceback" not in outcome.stderr + outcome.stdout
    assert outcome.code == case.code, outcome.stderr
    if case.says:
        [line] = _lines(outcome.stderr)
        assert case.says in line
        assert line.startswith("tuning-governor")
    if case.condition == UNREACHABLE:
        assert outcome.seconds < 10, f"{outcome.seconds:.1f} s before saying the endpoint is unreachable"


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and entry point
        [sys.executable, "-m", "governor_client", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_unreachable_endpoint_is_said_fast_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{closed_port()}",
        "AWS_CONFIG_FILE": "/nonexistent",
    }
    args = ["report", "--table", "t", "--region", "us-east-1", "--out", str(tmp_path / "r")]
    started = time.monotonic()
    plain = _cli(args, env)
    assert time.monotonic() - started < 15
    assert plain.returncode == 3
    [line] = _lines(plain.stderr)
    assert "cannot reach" in line and "AWS_ENDPOINT_URL" in line
    debug = _cli([*args, "--debug"], env)
    assert debug.returncode == 3
    assert "Traceback (most recent call last)" in debug.stderr
    assert "EndpointConnectionError" in debug.stderr


def test_help_says_offline_only_for_offline_commands() -> None:
    from governor_client.__main__ import build_parser

    parser = build_parser()
    top = parser.format_help()
    assert "nothing is sent to AWS" not in top.split("commands:")[0]
    helps = {name: sub.format_help() for name, sub in parser._subparsers._group_actions[0].choices.items()}  # type: ignore[union-attr]
    for name in ("report",):
        assert "offline" not in helps[name]
        assert "AWS credentials" in helps[name]
    assert "AWS credentials" in helps["validate"]  # --account


def test_docs_table_lists_every_case_with_its_exit_status() -> None:
    # docs/reference/cli.md's table is written by scripts/cli_error_table.py from these cases' runs
    text = (ROOT / "docs" / "reference" / "cli.md").read_text()
    rows = {
        (cells[0].strip("` "), cells[1].strip(), int(cells[2]))
        for line in text.splitlines()
        if line.startswith("| `") and len(cells := line.strip("|").split(" | ")) == 6
    }
    assert rows == {(case.command, case.condition, case.code) for case in CASES}
    assert "| yes |" not in text  # no traceback anywhere
