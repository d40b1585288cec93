"""The worked examples of docs/explanation/architecture.md ("Where a change goes"), applied and run: a new rule that
reads trials and has a grace period is one module (its settings, its judgement, its declaration), its test
and the policy reference page regenerated, and nothing else.

A new report channel (Google Chat incoming webhooks) is its module, its registration line, its template
parameter and its test: the tests that used to be edited by hand for each channel (the template's grants,
the permissions boundary, the deploy guide's parameters) derive what they expect from the template.

A new store area (exemption requests) is its module over the item port, its contract test on both tables
and its row on the table-items page: no table's code, no façade or port union, no keys module.

Each patch is applied to a copy of the tree, and its own tests and the checks it must pass run there, so
the examples cannot rot while the tree moves on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATCH = ROOT / "docs" / "examples" / "new-rule-trial-cap.patch"
CREATED = ["layers/governor/tuning_governor/policy/rules/trial_cap.py", "tests/unit/test_rule_trial_cap.py"]
#: The one existing file it changes: the generated page, as ``python scripts/policy_docs.py --write`` left it.
REGENERATED = "docs/reference/policy.md"
TOUCHED = sorted([*CREATED, REGENERATED])
#: The example's own test, and the checks every registered rule must pass.
RUN_THERE = ["tests/unit/test_rule_trial_cap.py", "tests/unit/test_rules.py", "tests/unit/test_rule_specs.py"]


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = ["git", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)  # noqa: S603


def _numstat(patch: Path) -> tuple[str, list[list[str]]]:
    """``git apply --check --numstat --summary`` of ``patch`` against the tree: its output (the summary's
    create lines) and one [added, removed, path] row per file; the patch applies to the tree as it is."""
    listed = _git("apply", "--check", "--numstat", "--summary", str(patch), cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    return listed.stdout, [line.split("\t") for line in listed.stdout.splitlines() if "\t" in line]


def _assert_ruff_clean(tree: Path, files: list[str]) -> None:
    """This interpreter's ruff finds nothing in ``files`` of ``tree``, lint or format."""
    for command in (["check"], ["format", "--check"]):
        run = subprocess.run(  # noqa: S603 - this interpreter's ruff, on the example's files
            [sys.executable, "-m", "ruff", *command, *files],
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr


@pytest.fixture(scope="module")
def patched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the layer package and the rule tests with the example applied."""
    copy = tmp_path_factory.mktemp("example")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "layers" / "governor", copy / "layers" / "governor", ignore=ignore)
    (copy / "tests" / "unit").mkdir(parents=True)
    (copy / "docs" / "reference").mkdir(parents=True)
    (copy / "scripts").mkdir()
    copied = ("tests/__init__.py", "tests/builders.py", "tests/unit/__init__.py", *RUN_THERE[1:], "pyproject.toml")
    for name in (*copied, REGENERATED, "scripts/docblocks.py", "scripts/policy_docs.py"):
        shutil.copyfile(ROOT / name, copy / name)
    applied = _git("apply", "--whitespace=error", str(PATCH), cwd=copy)
    assert applied.returncode == 0, applied.stderr
    return copy


def test_the_example_touches_three_files_two_new_and_the_generated_page() -> None:
    summary, rows = _numstat(PATCH)
    assert sorted(path for _, _, path in rows) == TOUCHED
    # New modules, and the page: no list of rules, no shared policy model, no governance module, no client check.
    assert all(f"create mode 100644 {path}" in summary for path in CREATED)
    assert all(int(added) <= 400 for added, _, _ in rows)
    assert all(removed == "0" for _, removed, path in rows if path != REGENERATED)


def test_the_regenerated_page_is_what_its_generator_renders_for_the_patched_tree(patched: Path) -> None:
    run = subprocess.run(
        [sys.executable, "scripts/policy_docs.py", "--check"],
        cwd=patched,
        env=os.environ | {"PYTHONPATH": str(patched / "layers" / "governor")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "| `defaults.max_trials_per_job` |" in (patched / REGENERATED).read_text(encoding="utf-8")


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
    _assert_ruff_clean(patched, CREATED)


# -- a new report channel -------------------------------------------------------------------------------
CHANNEL_PATCH = ROOT / "docs" / "examples" / "new-channel-googlechat.patch"
CHANNEL_CREATED = [
    "layers/governor/tuning_governor/adapters/channels/googlechat.py",
    "tests/integration/test_googlechat_channel.py",
]
#: Its registration and its template parameter: the only existing files a channel edits.
CHANNEL_EDITED = ["layers/governor/tuning_governor/domain/channels.py", "template.yaml"]
#: The patch's own test, and the tests whose expectations a channel used to edit by hand (the template's
#: grants, the permissions boundary, the deploy guide's parameters, the Teams test's list of kinds).
CHANNEL_RUN_THERE = [
    "tests/integration/test_googlechat_channel.py",
    "tests/integration/test_teams_channel.py",
    "tests/template/test_translated.py",
    "tests/template/test_permissions_boundary.py",
    "tests/template/test_deployer_docs.py",
]


def test_the_channel_example_touches_four_files_its_module_registration_parameter_and_test() -> None:
    summary, rows = _numstat(CHANNEL_PATCH)
    assert sorted(path for _, _, path in rows) == sorted([*CHANNEL_CREATED, *CHANNEL_EDITED])
    assert all(f"create mode 100644 {path}" in summary for path in CHANNEL_CREATED)
    registration = next(row for row in rows if row[2] == CHANNEL_EDITED[0])
    assert registration[:2] == ["1", "0"], "the registration is one added line"


def _tree_with(patch: Path, copy: Path) -> Path:
    """A copy of the tree's own files (tracked, or new and not ignored: no caches, builds or
    virtualenvs) at ``copy``, with ``patch`` applied."""
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, copy / name)
    applied = _git("apply", "--whitespace=error", str(patch), cwd=copy)
    assert applied.returncode == 0, applied.stderr
    return copy


def _pytest_in(tree: Path, tests: list[str]) -> set[str]:
    """Run ``tests`` in ``tree`` with its own packages first on the path: the names of those that passed."""
    paths = [str(tree / p) for p in ("layers/governor", "client", ".")]
    run = subprocess.run(  # noqa: S603 - this interpreter, the copy's own tests
        [sys.executable, "-m", "pytest", *tests, "-q", "-rA", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=tree,
        env=os.environ | {"PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return {line.split("::")[-1] for line in run.stdout.splitlines() if line.startswith("PASSED ")}


@pytest.fixture(scope="module")
def channel_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the tree with the channel example applied."""
    return _tree_with(CHANNEL_PATCH, tmp_path_factory.mktemp("channel"))


def test_the_channel_example_applies_and_its_test_and_the_derived_template_checks_pass(channel_tree: Path) -> None:
    passed = _pytest_in(channel_tree, CHANNEL_RUN_THERE)
    assert {
        "test_a_team_report_reaches_its_chat_space_once_however_often_it_is_delivered",
        "test_the_boundary_takes_the_stacks_parameters_as_the_stack_spells_them",
        "test_the_readme_parameter_table_lists_every_parameter_of_the_template",
    } <= passed
    # The copy's template really has the channel's grant (the derived checks saw a third webhook channel).
    assert '"googlechat": "${GoogleChatWebhookSecretArn}"' in (channel_tree / "template.yaml").read_text()


# -- a new store area -----------------------------------------------------------------------------------
STORE_PATCH = ROOT / "docs" / "examples" / "new-store-area-exemption-requests.patch"
STORE_CREATED = [
    "layers/governor/tuning_governor/adapters/store/exemption_requests.py",
    "tests/contract/test_exemption_requests.py",
]
#: Its items on the reference page: the one existing file a store area edits.
STORE_EDITED = "docs/reference/table-items.md"
#: The patch's own contract test, the page's check, and the ports' shape.
STORE_RUN_THERE = [
    "tests/contract/test_exemption_requests.py",
    "tests/unit/test_reference_docs.py::test_the_table_items_page_names_every_key_the_layer_writes_and_no_other",
    "tests/contract/test_ports.py",
]


def test_the_store_area_example_touches_three_files_its_module_its_contract_test_and_the_page() -> None:
    summary, rows = _numstat(STORE_PATCH)
    assert sorted(path for _, _, path in rows) == sorted([*STORE_CREATED, STORE_EDITED])
    # Neither table's code, no façade, no port union, no keys module, no conftest: only new files and the page.
    assert all(f"create mode 100644 {path}" in summary for path in STORE_CREATED)


@pytest.fixture(scope="module")
def store_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the tree with the store-area example applied."""
    return _tree_with(STORE_PATCH, tmp_path_factory.mktemp("store-area"))


def test_the_store_area_example_applies_and_runs_alike_on_both_tables(store_tree: Path) -> None:
    passed = _pytest_in(store_tree, STORE_RUN_THERE)
    assert {
        "test_the_first_request_and_the_first_answer_win[moto]",
        "test_the_first_request_and_the_first_answer_win[memory]",
        "test_both_tables_give_the_same_outcomes_and_hold_the_same_items",
        "test_the_table_items_page_names_every_key_the_layer_writes_and_no_other",
    } <= passed
    _assert_ruff_clean(store_tree, STORE_CREATED)
