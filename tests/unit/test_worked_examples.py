"""The worked example of docs/explanation/architecture.md ("Where a change goes"), applied and run: a new rule that
reads trials and has a grace period is its declaration, its judgement and its test, and nothing else.

The patch is applied to a copy of the layer package, and the copy's registry meta-test and the patch's
own test run there, so the example cannot rot while the tree moves on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATCH = ROOT / "docs" / "examples" / "new-rule-trial-cap.patch"
TOUCHED = [
    "layers/governor/tuning_governor/governance/rules/trial_cap.py",
    "layers/governor/tuning_governor/policy/rules/trial_cap.py",
    "tests/unit/test_rule_trial_cap.py",
]
#: The example's own test, and the checks every registered rule must pass.
RUN_THERE = ["tests/unit/test_rule_trial_cap.py", "tests/unit/test_rules.py", "tests/unit/test_rule_specs.py"]


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = ["git", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)  # noqa: S603


@pytest.fixture(scope="module")
def patched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the layer package and the rule tests with the example applied."""
    copy = tmp_path_factory.mktemp("example")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "layers" / "governor", copy / "layers" / "governor", ignore=ignore)
    (copy / "tests" / "unit").mkdir(parents=True)
    for name in ("tests/__init__.py", "tests/builders.py", "tests/unit/__init__.py", *RUN_THERE[1:], "pyproject.toml"):
        shutil.copyfile(ROOT / name, copy / name)
    applied = _git("apply", "--whitespace=error", str(PATCH), cwd=copy)
    assert applied.returncode == 0, applied.stderr
    return copy


def test_the_example_touches_three_files_each_new_and_within_the_size_limits() -> None:
    listed = _git("apply", "--numstat", "--summary", str(PATCH), cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines() if "\t" in line]
    assert sorted(path for _, _, path in rows) == TOUCHED
    # Only new modules: no list of rules, no shared policy model, no client check is edited.
    assert all(f"create mode 100644 {path}" in listed.stdout for path in TOUCHED)
    assert all(int(added) <= 400 and removed == "0" for added, removed, _ in rows)


def test_the_example_applies_and_its_tests_and_the_registry_checks_pass(patched: Path) -> None:
    assert all((patched / path).is_file() for path in TOUCHED)
    env = os.environ | {"PYTHONPATH": str(patched / "layers" / "governor")}
    run = subprocess.run(  # noqa: S603 - this interpreter, the copy's own tests
        [sys.executable, "-m", "pytest", *RUN_THERE, "-q", "-rA", "-p", "no:cacheprovider", "--noconftest"],
        cwd=patched,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    # The copy ran the example's own tests (the tree has no trial-cap rule) and the registry's.
    passed = {line.split("::")[-1] for line in run.stdout.splitlines() if line.startswith("PASSED ")}
    assert {
        "test_its_breach_waits_for_its_grace_period_and_says_what_clears_it",
        "test_the_sweep_reconciles_its_trials_only_while_it_is_on",
        "test_every_rule_declares_how_the_engine_runs_it",
        "test_the_lists_of_rules_are_read_from_the_specs",
    } <= passed


def test_the_example_is_lint_clean(patched: Path) -> None:
    for command in (["check"], ["format", "--check"]):
        run = subprocess.run(  # noqa: S603 - this interpreter's ruff, on the example's files
            [sys.executable, "-m", "ruff", *command, *TOUCHED],
            cwd=patched,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
