"""`sam build` produces a layer with the governor package and its runtime dependencies, and nothing
that belongs only to the client or the tests."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.template.cfn import ROOT, TEMPLATE, python313_dir, sam_env

# Client and test tooling that must never ship to Lambda.
FORBIDDEN = re.compile(r"^(sagemaker|moto|pytest|_pytest)([-_.].*)?$", re.IGNORECASE)
# The bundled policy governs when PolicyParameterName is empty; yaml parses it.
REQUIRED = (
    "tuning_governor/__init__.py",
    "tuning_governor/data/default-policy.yaml",
    "pydantic",
    "pydantic_settings",
    "aws_lambda_powertools",
    "slack_sdk",
    "yaml",
)
# Lambda's limit for a function plus its layers, unzipped.
LAMBDA_UNZIPPED_LIMIT = 262_144_000


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory, sam_cli: str) -> Path:
    python_dir = python313_dir()
    if python_dir is None:
        pytest.fail("sam build needs python3.13 on PATH (BuildMethod: python3.13); none found")
    work = tmp_path_factory.mktemp("sam-build")

    result = subprocess.run(  # noqa: S603 - fixed argv, sam path from our own lookup
        [
            sam_cli,
            "build",
            "--template-file",
            str(TEMPLATE),
            "--build-dir",
            str(work / "build"),
            # samconfig.toml turns caching on; off here, or SAM keeps dependencies in ./.aws-sam/deps.
            "--no-cached",
        ],
        cwd=ROOT,
        env=sam_env(path_prefix=python_dir),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )

    assert result.returncode == 0, f"sam build failed:\n{result.stdout}\n{result.stderr}"
    return work / "build"


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


@pytest.mark.sam
def test_layer_has_the_package_and_its_runtime_dependencies(build_dir: Path) -> None:
    python = build_dir / "GovernorLayer" / "python"

    missing = [name for name in REQUIRED if not (python / name).exists()]
    assert not missing, f"built layer lacks {missing}; it has {sorted(p.name for p in python.iterdir())}"


@pytest.mark.sam
def test_layer_ships_no_client_or_test_tooling(build_dir: Path) -> None:
    python = build_dir / "GovernorLayer" / "python"

    shipped = sorted(p.name for p in python.iterdir())
    assert shipped, "the built layer is empty"
    assert [name for name in shipped if FORBIDDEN.match(name)] == []


@pytest.mark.sam
@pytest.mark.parametrize(
    ("function_id", "module"),
    [
        ("TuningEventsFunction", "tuning_events.py"),
        ("TrainingEventsFunction", "training_events.py"),
        ("SweepFunction", "sweep.py"),
    ],
)
def test_function_artifact_has_its_handler_and_fits_lambda_limits(
    build_dir: Path, function_id: str, module: str
) -> None:
    function_dir = build_dir / function_id

    assert (function_dir / module).is_file()
    assert _size(function_dir) + _size(build_dir / "GovernorLayer") < LAMBDA_UNZIPPED_LIMIT
