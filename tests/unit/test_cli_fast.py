"""The command answers fast and quietly: ``--help`` and ``--version`` load no command, a closed pipe is
not bad input, and the imports a command needs are loaded only when it runs (benchmarks/cli.py times it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import ROOT

# A fresh interpreter: what ``main(argv)`` imported, printed as JSON after its exit status.
IMPORTS = """
import contextlib, io, json, sys
from governor_client.__main__ import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"moto", "pydantic", "boto3", "yaml", "tuning_governor",
                                                      "matplotlib", "jinja2", "rich", "aws_lambda_powertools"})
loaded = sorted(m for m in sys.modules if m.startswith("governor_client."))
print(json.dumps({"code": code, "out": out.getvalue(), "heavy": heavy, "loaded": loaded}))
"""


def _imports(*argv: str) -> dict[str, object]:
    done = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
        [sys.executable, "-c", IMPORTS, *argv], capture_output=True, text=True, timeout=120, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return report


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_help_and_version_import_no_command(argv: list[str]) -> None:
    report = _imports(*argv)

    assert report["code"] == 0
    assert report["heavy"] == []
    assert report["loaded"] == ["governor_client.__main__", "governor_client.cli", "governor_client.cli.errors"]


def test_version_names_the_installed_distribution() -> None:
    import importlib.metadata

    report = _imports("--version")

    assert report["out"] == f"tuning-governor {importlib.metadata.version('tuning-governor')}\n"


def test_a_command_loads_only_its_own_module() -> None:
    # Given `simulate --help`: simulate's arguments are built, no other command's module is imported
    report = _imports("simulate", "--help")

    assert report["code"] == 0
    assert "simulate [-h]" in str(report["out"])
    loaded = set(report["loaded"])  # type: ignore[arg-type]
    assert not loaded & {
        "governor_client.replay",
        "governor_client.check",
        "governor_client.report.page",
        "governor_client.validate",
    }


def test_top_help_lists_every_command() -> None:
    report = _imports("--help")

    for name in ("replay", "validate", "report", "simulate", "prices", "check", "submit", "demo"):
        assert f"    {name} " in str(report["out"])


def test_a_closed_pipe_exits_quietly_with_the_commands_own_status(tmp_path: Path) -> None:
    # Given a request check refuses (exit 2) when its output is read whole
    request = seed_tuning_request()
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = 40
    (tmp_path / "request.json").write_text(json.dumps(request), encoding="utf-8")
    (tmp_path / "policy.yaml").write_text("quotas: {ml.m5.xlarge: 8}\n", encoding="utf-8")
    argv = [sys.executable, "-m", "governor_client", "check", "request.json", "--policy", "policy.yaml"]
    whole = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)  # noqa: S603
    assert whole.returncode == 2 and whole.stdout, whole.stderr

    # When the reader has gone before the command writes (as `| head -0` would)
    reader = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)  # noqa: S603
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()
    err = reader.stderr.read().decode()
    code = reader.wait(timeout=120)

    # Then nothing is said about the pipe, and the status is the command's own
    assert err == ""
    assert code == whole.returncode


def test_the_version_constant_is_pyprojects() -> None:
    import tomllib

    import governor_client

    assert governor_client.__version__ == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_a_command_does_not_load_the_x_ray_sdk(tmp_path: Path) -> None:
    # Given a command that imports the governor's layer (its policy model and logger)
    (tmp_path / "policy.yaml").write_text("mode: monitor\n", encoding="utf-8")
    report = _imports("validate", str(tmp_path / "policy.yaml"))

    assert report["code"] == 0
    assert "tuning_governor" in report["heavy"]  # type: ignore[operator]
    done = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
        [
            sys.executable,
            "-c",
            "import contextlib, io, sys; from governor_client.__main__ import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['validate', sys.argv[1]])\n"
            "print(sorted(m for m in sys.modules if m.startswith('aws_xray_sdk')))",
            str(tmp_path / "policy.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={k: v for k, v in __import__("os").environ.items() if k != "POWERTOOLS_TRACE_DISABLED"},
    )
    assert done.stdout.splitlines()[-1] == "[]"


def test_demo_runs_through_its_runner() -> None:
    from governor_client.__main__ import _demo, build_parser

    assert build_parser(["demo"]).parse_args(["demo"]).command is _demo
