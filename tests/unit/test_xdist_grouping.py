"""`make test` runs ``pytest -n 2 --dist loadgroup``: modules marked ``xdist_group`` build their moto worlds
once, on one worker. pytest 9.2's structured node ids silently undo that grouping (pytest-xdist issue 1386:
the group is written to a node-id field pytest no longer reads), and every such module then builds its
world on both workers, once per interleaving. pyproject.toml pins pytest below 9.2; this test fails if the
installed pair stops grouping."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    with open(os.path.join(os.environ["GROUPING_OUT"], f"{{name}}-{i}"), "w") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"])
"""
FREE = """
import pytest


@pytest.mark.parametrize("i", range(6))
def test_free(i):
    pass
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    # Given two modules in one group and one free module, run as make test runs them
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\nmarkers =\n  xdist_group: one worker\n")
    for name in ("a", "b"):
        (project / f"test_{name}.py").write_text(GROUPED.replace("{{name}}", name))
    (project / "test_free.py").write_text(FREE)
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | {"GROUPING_OUT": str(out)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Then all twelve grouped tests ran, every one on the same worker
    workers = [p.read_text() for p in sorted(out.glob("[ab]-*"))]
    assert len(workers) == 12
    assert len(set(workers)) == 1, f"the group was split across workers: {sorted(set(workers))}"
