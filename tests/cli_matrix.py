"""Every ``tuning-governor`` command under every way it can fail: the cases, and running one.

Shared by ``tests/integration/test_cli_errors.py`` (each case's exit status and message, no traceback)
and ``scripts/cli_error_table.py`` (the table in docs/reference/cli.md, generated from the same runs).

Each case runs ``governor_client.__main__.main(argv)`` in-process with stdout/stderr captured and the AWS
environment set for its condition:

* ``no credentials``: no keys, no profile, no config file, no instance metadata;
* ``missing table``: fake keys against moto (``mock_aws``) holding no table, bucket or object;
* ``unreachable endpoint``: fake keys, ``AWS_ENDPOINT_URL`` a closed port on 127.0.0.1;
* ``bad input``: a file or argument the command cannot use;
* ``all lines rejected``: an events file none of whose lines is an event.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from moto import mock_aws

from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import ROOT

NO_CREDENTIALS = "no credentials"
MISSING = "missing table"
UNREACHABLE = "unreachable endpoint"
BAD_INPUT = "bad input"
ALL_REJECTED = "all lines rejected"
CONDITIONS = (NO_CREDENTIALS, MISSING, UNREACHABLE, BAD_INPUT, ALL_REJECTED)

POLICY = "mode: enforce\nquotas: {ml.p3.2xlarge: 8}\n"
SCENARIO = """\
seed: 3
jobs:
  - name: tiny-hpo
    at: 0
    team: vision
    instance_type: ml.m5.xlarge
    instance_count: 1
    max_parallel: 2
    max_jobs: 2
"""


@dataclass(frozen=True)
class Case:
    command: str
    """The command as the table's row names it."""
    condition: str
    argv: Callable[[Path], list[str]]
    """The arguments, given the folder holding the inputs (``write_inputs``)."""
    code: int
    """The exit status the case must give."""
    says: str
    """A fragment the one line on stderr must hold (empty: nothing on stderr is required)."""


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str
    seconds: float


def write_inputs(folder: Path) -> Path:
    """The files the cases read: a policy, a broken policy, events, rejected lines, scenarios."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "policy.yaml").write_text(POLICY, encoding="utf-8")
    (folder / "broken.yaml").write_text("mode: enforse\n", encoding="utf-8")
    events = [json.loads((ROOT / "events" / name).read_text()) for name in ("tuning-inprogress.json",)]
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    (folder / "rejected.jsonl").write_text('not json\n{"source": "aws.ec2"}\n[1, 2]\n', encoding="utf-8")
    (folder / "scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    (folder / "request.json").write_text(json.dumps(seed_tuning_request()), encoding="utf-8")
    (folder / "bad-request.json").write_text("{not json", encoding="utf-8")
    invalid = seed_tuning_request()
    invalid["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = "two"
    (folder / "invalid-request.json").write_text(json.dumps(invalid), encoding="utf-8")
    (folder / "bad-scenario.yaml").write_text("jobs:\n  - name: x\n    instance_count: many\n", encoding="utf-8")
    return folder


def _replay(events: str) -> Callable[[Path], list[str]]:
    return lambda d: ["replay", events.format(d=d), "--policy", str(d / "policy.yaml"), "--out", str(d / "r.json")]


def _prices(table: str = "tuning-governor") -> Callable[[Path], list[str]]:
    return lambda d: ["prices", "export", "--table", table, "--region", "us-east-1", "--out", str(d / "prices.json")]


def _replay_with(flag: str, table: str = "tuning-governor") -> Callable[[Path], list[str]]:
    return lambda d: [
        "replay",
        str(d / "events.jsonl"),
        "--policy",
        str(d / "policy.yaml"),
        flag,
        table,
        "--table-region",
        "us-east-1",
    ]


def _check(*extra: str, request: str = "request.json") -> Callable[[Path], list[str]]:
    return lambda d: ["check", str(d / request), "--policy", str(d / "policy.yaml"), *extra]


SUBMIT = "submit REQUEST.json"
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/000000000000/tuning-governor-submissions"


def _submit(request: str = "request.json", *, url: str | None = QUEUE_URL) -> Callable[[Path], list[str]]:
    queue = ["--queue-url", url] if url else []
    return lambda d: ["submit", str(d / request), *queue, "--client-token", "churn-1", "--region", "us-east-1"]


def _report(table: str = "tuning-governor") -> Callable[[Path], list[str]]:
    return lambda d: ["report", "--table", table, "--region", "us-east-1", "--out", str(d / "report")]


VALIDATE_ACCOUNT = "validate POLICY --account"
CASES: tuple[Case, ...] = (
    Case(
        "validate POLICY",
        NO_CREDENTIALS + " (offline: none needed)",
        lambda d: ["validate", str(d / "policy.yaml")],
        0,
        "",
    ),
    Case("validate POLICY", BAD_INPUT, lambda d: ["validate", str(d / "broken.yaml")], 2, ""),
    Case("validate POLICY", BAD_INPUT + " (no file)", lambda d: ["validate", str(d / "none.yaml")], 2, "cannot read"),
    Case(
        VALIDATE_ACCOUNT,
        NO_CREDENTIALS,
        lambda d: ["validate", str(d / "policy.yaml"), "--account"],
        3,
        "no AWS credentials",
    ),
    Case(VALIDATE_ACCOUNT, UNREACHABLE, lambda d: ["validate", str(d / "policy.yaml"), "--account"], 3, "cannot reach"),
    Case("report --table", NO_CREDENTIALS, _report(), 3, "no AWS credentials"),
    Case("report --table", MISSING, _report("no-such-table"), 3, "not found"),
    Case("report --table", UNREACHABLE, _report(), 3, "cannot reach"),
    Case(
        "report --table",
        BAD_INPUT,
        lambda d: [*_report()(d), "--month", "2026-13"],
        2,
        "--month",
    ),
    Case("replay FILE", NO_CREDENTIALS + " (offline: none needed)", _replay("{d}/events.jsonl"), 0, ""),
    Case("replay FILE", UNREACHABLE + " (offline: none is called)", _replay("{d}/events.jsonl"), 0, ""),
    Case("replay FILE", BAD_INPUT, _replay("{d}/none.jsonl"), 2, "cannot read events file"),
    Case(
        "replay FILE",
        BAD_INPUT + " (policy)",
        lambda d: ["replay", str(d / "events.jsonl"), "--policy", str(d / "broken.yaml")],
        2,
        "is invalid",
    ),
    Case(
        "replay FILE",
        ALL_REJECTED,
        lambda d: ["replay", str(d / "rejected.jsonl"), "--policy", str(d / "policy.yaml")],
        4,
        "3 of 3 lines rejected",
    ),
    Case("replay s3://", NO_CREDENTIALS, _replay("s3://capture-bucket/events/"), 3, "no AWS credentials"),
    Case("replay s3://", MISSING, _replay("s3://no-such-bucket/events/"), 3, "not found"),
    Case("replay s3://", UNREACHABLE, _replay("s3://capture-bucket/events/"), 3, "cannot reach"),
    Case("replay --facts-from-table", NO_CREDENTIALS, _replay_with("--facts-from-table"), 3, "no AWS credentials"),
    Case("replay --facts-from-table", MISSING, _replay_with("--facts-from-table", "no-such-table"), 3, "not found"),
    Case("replay --facts-from-table", UNREACHABLE, _replay_with("--facts-from-table"), 3, "cannot reach"),
    Case("replay --prices-from-table", NO_CREDENTIALS, _replay_with("--prices-from-table"), 3, "no AWS credentials"),
    Case("replay --prices-from-table", MISSING, _replay_with("--prices-from-table", "no-such-table"), 3, "not found"),
    Case("replay --prices-from-table", UNREACHABLE, _replay_with("--prices-from-table"), 3, "cannot reach"),
    Case(
        "replay --prices FILE",
        BAD_INPUT,
        lambda d: [
            "replay",
            str(d / "events.jsonl"),
            "--policy",
            str(d / "policy.yaml"),
            "--prices",
            str(d / "policy.yaml"),
        ],
        2,
        "not a price catalogue",
    ),
    Case("prices export --table", NO_CREDENTIALS, _prices(), 3, "no AWS credentials"),
    Case("prices export --table", MISSING, _prices("no-such-table"), 3, "not found"),
    Case("prices export --table", UNREACHABLE, _prices(), 3, "cannot reach"),
    Case("prices export --table", BAD_INPUT + " (usage)", lambda d: ["prices", "export"], 2, "--table"),
    Case(
        "simulate",
        NO_CREDENTIALS + " (offline: none needed)",
        lambda d: ["simulate", str(d / "scenario.yaml"), "--out", str(d / "sim.jsonl")],
        0,
        "",
    ),
    Case(
        "simulate",
        UNREACHABLE + " (offline: none is called)",
        lambda d: ["simulate", str(d / "scenario.yaml"), "--out", str(d / "sim.jsonl")],
        0,
        "",
    ),
    Case(
        "simulate",
        BAD_INPUT,
        lambda d: ["simulate", str(d / "bad-scenario.yaml"), "--out", str(d / "sim.jsonl")],
        2,
        "instance_count",
    ),
    Case("check REQUEST.json", NO_CREDENTIALS + " (offline: none needed)", _check(), 0, ""),
    Case("check REQUEST.json", UNREACHABLE + " (offline: none is called)", _check(), 0, ""),
    Case("check REQUEST.json", BAD_INPUT, _check(request="bad-request.json"), 2, "is not JSON"),
    Case("check REQUEST.json", BAD_INPUT + " (no file)", _check(request="none.json"), 2, "cannot read"),
    Case("check --table", NO_CREDENTIALS, _check("--table", "tuning-governor"), 3, "no AWS credentials"),
    Case("check --table", MISSING, _check("--table", "no-such-table"), 3, "not found"),
    Case("check --table", UNREACHABLE, _check("--table", "tuning-governor"), 3, "cannot reach"),
    Case(SUBMIT, NO_CREDENTIALS, _submit(), 3, "no AWS credentials"),
    Case(SUBMIT, MISSING + " (no such queue)", _submit(), 3, "cannot send to"),
    Case(SUBMIT, UNREACHABLE, _submit(), 3, "cannot reach"),
    Case(SUBMIT, BAD_INPUT + " (no --queue-url)", _submit(url=None), 2, "--queue-url"),
    Case(SUBMIT, BAD_INPUT + " (no file)", _submit("none.json"), 2, "cannot read"),
    Case(SUBMIT, BAD_INPUT, _submit("bad-request.json"), 2, "is not JSON"),
    Case(SUBMIT, BAD_INPUT + " (refused by SageMaker's model)", _submit("invalid-request.json"), 2, "nothing was sent"),
    Case("demo", BAD_INPUT, lambda d: ["demo", "--seed", "seven"], 2, "--seed"),
    Case("(any)", BAD_INPUT + " (usage)", lambda d: ["replay"], 2, "required"),
)


def closed_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ENDPOINT_URL",
)


@contextlib.contextmanager
def aws_condition(condition: str) -> Iterator[None]:
    """The AWS environment of ``condition`` (restored afterwards)."""
    saved = {key: os.environ.get(key) for key in (*AWS_VARIABLES, "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")}
    saved["AWS_EC2_METADATA_DISABLED"] = os.environ.get("AWS_EC2_METADATA_DISABLED")
    saved["AWS_REGION"] = os.environ.get("AWS_REGION")
    try:
        for key in AWS_VARIABLES:
            os.environ.pop(key, None)
        os.environ.update(
            AWS_CONFIG_FILE="/nonexistent/aws-config",
            AWS_SHARED_CREDENTIALS_FILE="/nonexistent/aws-credentials",
            AWS_EC2_METADATA_DISABLED="true",
            AWS_REGION="us-east-1",
        )
        if condition != NO_CREDENTIALS:
            os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
        if condition == UNREACHABLE:
            os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{closed_port()}"
        with mock_aws() if condition == MISSING else contextlib.nullcontext():
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_case(case: Case, inputs: Path) -> Outcome:
    """Run ``case`` in-process: its exit status, what it printed, how long it took."""
    from governor_client.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    with aws_condition(case.condition.split(" (")[0]), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(case.argv(inputs))
        except SystemExit as exc:  # argparse's own exit, before the command runs
            code = int(exc.code or 0)
    return Outcome(code, out.getvalue(), err.getvalue(), time.monotonic() - started)
