"""Without credentials, a command that calls AWS says so fast: the credential chain's one network probe
(the instance metadata service) is tried once, not once per IMDS version, before the one line."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT


@contextlib.contextmanager
def _silent_server() -> Iterator[tuple[int, list[float]]]:
    """A 127.0.0.1 port that accepts connections and never answers (an unreachable IMDS, as offline);
    yields the port and the times of the connections it accepted."""
    accepted: list[float] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                connection, _ = server.accept()
                accepted.append(time.monotonic())
                held.append(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1]), accepted
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        server.close()


def _no_credentials(imds_port: int, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return env | {
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": f"http://127.0.0.1:{imds_port}",
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--table", "tuning-governor", "--out", "report"],
        ["check", "request.json", "--table", "tuning-governor"],
        ["prices", "export", "--table", "tuning-governor", "--out", "prices.json"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_no_credentials_is_said_after_one_metadata_probe(argv: list[str], tmp_path: Path) -> None:
    from governor_client.simulator.scenarios import seed_tuning_request

    (tmp_path / "request.json").write_text(__import__("json").dumps(seed_tuning_request()), encoding="utf-8")
    with _silent_server() as (port, accepted):
        done = subprocess.run(  # noqa: S603 - this interpreter, our own entry point
            [sys.executable, "-m", "governor_client", *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_no_credentials(port, tmp_path) | {"PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))},
            timeout=120,
            check=False,
        )

    assert done.returncode == 3, done.stderr
    assert "no AWS credentials" in done.stderr
    assert len(accepted) == 1, f"{len(accepted)} connections to the instance metadata service"


# A fresh interpreter: main(argv)'s exit status and the modules it had imported when it gave up.
MODULES = """
import contextlib, io, json, sys
from governor_client.__main__ import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.mark.parametrize(
    ("argv", "not_loaded"),
    [
        (["report", "--table", "tuning-governor", "--out", "report"], ("matplotlib", "governor_client.report.page")),
        (["check", "request.json", "--table", "tuning-governor"], ("tuning_governor.adapters.dynamodb",)),
        (
            [
                *("submit", "request.json", "--client-token", "t"),
                *("--queue-url", "https://sqs.us-east-1.amazonaws.com/000000000000/q"),
            ],
            ("governor_client.submit.submissions", "tuning_governor.adapters"),
        ),
    ],
    ids=lambda value: " ".join(value[:2]) if isinstance(value, list) else "",
)
def test_no_credentials_is_said_before_the_commands_machinery_loads(
    argv: list[str], not_loaded: tuple[str, ...], tmp_path: Path
) -> None:
    from governor_client.simulator.scenarios import seed_tuning_request

    (tmp_path / "request.json").write_text(__import__("json").dumps(seed_tuning_request()), encoding="utf-8")
    with _silent_server() as (port, _):
        done = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
            [sys.executable, "-c", MODULES, *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_no_credentials(port, tmp_path) | {"PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))},
            timeout=120,
            check=False,
        )

    report = __import__("json").loads(done.stdout.splitlines()[-1])
    assert report["code"] == 3, done.stderr
    loaded = sorted(m for m in report["modules"] if any(m == n or m.startswith(f"{n}.") for n in not_loaded))
    assert loaded == []
