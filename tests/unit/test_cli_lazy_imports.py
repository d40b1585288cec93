"""A command that fails early loads only what its failure needs: a usage error is argparse's before any
command's machinery loads, a request SageMaker's model refuses loads neither the simulator nor the
governor's layer, a broken policy loads neither botocore nor the semantic checks (benchmarks/cli.py
times each)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import ROOT

# A fresh interpreter: main(argv)'s exit status and every module it imported, as JSON.
MODULES = """
import contextlib, io, json, sys
from governor_client.__main__ import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

#: What no early failure needs: the AMT stand-in, the pictures, the SageMaker SDK, the AWS SDK's sessions.
SIMULATOR_AND_PICTURES = ("moto", "matplotlib", "plotly", "sagemaker", "jinja2", "boto3")


def _modules(folder: Path, *argv: str) -> tuple[int, set[str]]:
    done = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
        [sys.executable, "-c", MODULES, *argv], capture_output=True, text=True, timeout=120, check=False, cwd=folder
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    return int(report["code"]), set(report["modules"])


def _loaded(modules: set[str], *packages: str) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in packages or any(m.startswith(f"{p}.") for p in packages))


def _under(modules: set[str], *prefixes: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in prefixes))


@pytest.mark.parametrize("argv", [["replay"], ["check"], ["validate"], ["simulate"], ["report", "--bogus"]])
def test_a_usage_error_loads_no_command_machinery(argv: list[str], tmp_path: Path) -> None:
    code, modules = _modules(tmp_path, *argv)

    assert code == 2
    assert _loaded(modules, *SIMULATOR_AND_PICTURES, "pydantic", "botocore") == []
    assert _under(modules, "tuning_governor") == []


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["prices", "--help"], ["prices", "fetch", "--help"]])
def test_help_loads_no_command_machinery(argv: list[str], tmp_path: Path) -> None:
    # The prices command's arguments live in a module of argparse alone (governor_client.prices.command)
    code, modules = _modules(tmp_path, *argv)

    assert code == 0
    assert _loaded(modules, *SIMULATOR_AND_PICTURES, "pydantic", "botocore") == []
    assert _under(modules, "tuning_governor", "governor_client.prices.fetch", "governor_client.prices.export") == []


@pytest.mark.parametrize("name", ["replay", "validate", "report", "simulate", "check", "submit", "demo"])
def test_every_subcommands_help_loads_neither_the_simulator_nor_the_governors_app(name: str, tmp_path: Path) -> None:
    code, modules = _modules(tmp_path, name, "--help")

    assert code == 0
    assert _loaded(modules, *SIMULATOR_AND_PICTURES) == []
    assert _under(modules, "tuning_governor.app", "tuning_governor.adapters") == []


def test_a_request_sagemakers_model_refuses_loads_only_the_model(tmp_path: Path) -> None:
    # Given a request whose MaxParallelTrainingJobs is a word (botocore's model wants an integer)
    request = seed_tuning_request()
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = "two"
    (tmp_path / "invalid.json").write_text(json.dumps(request), encoding="utf-8")

    code, modules = _modules(tmp_path, "check", "invalid.json")

    assert code == 2
    assert _loaded(modules, *SIMULATOR_AND_PICTURES) == []
    assert _under(modules, "tuning_governor.app", "tuning_governor.adapters", "tuning_governor.policy.model") == []
    assert (
        _under(
            modules,
            "governor_client.validate.account",
            "governor_client.check.verdict",
            "governor_client.offline.environment",
        )
        == []
    )


def test_a_submission_sagemakers_model_refuses_loads_only_the_model(tmp_path: Path) -> None:
    request = seed_tuning_request()
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = "two"
    (tmp_path / "invalid.json").write_text(json.dumps(request), encoding="utf-8")
    queue = "https://sqs.us-east-1.amazonaws.com/000000000000/q"

    code, modules = _modules(tmp_path, "submit", "invalid.json", "--queue-url", queue, "--client-token", "t")

    assert code == 2
    assert _loaded(modules, *SIMULATOR_AND_PICTURES) == []
    assert _under(modules, "tuning_governor.app", "tuning_governor.adapters", "tuning_governor.policy.model") == []


def test_a_broken_policy_loads_neither_botocore_nor_the_semantic_checks(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("mode: enforse\n", encoding="utf-8")

    code, modules = _modules(tmp_path, "validate", "broken.yaml")

    assert code == 2
    assert _loaded(modules, *SIMULATOR_AND_PICTURES) == []
    # (the package botocore alone is the Powertools logger's: it reads its version)
    assert _under(modules, "botocore.loaders", "botocore.model", "botocore.session", "botocore.client") == []
    assert _under(modules, "governor_client.validate.checks", "governor_client.validate.account") == []
    assert _under(modules, "tuning_governor.adapters", "tuning_governor.app", "tuning_governor.policy.routing") == []


def test_the_lazy_packages_still_export_their_api() -> None:
    # The package names stay importable (from the package) though each loads its module when asked
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import governor_client.check as c, governor_client.validate as v, governor_client.replay as r,"
            " tuning_governor.policy as p\n"
            "for m in (c, v, r, p):\n"
            "    for name in m.__all__: getattr(m, name)\n"
            "print('ok')",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.stdout.strip() == "ok", done.stderr
