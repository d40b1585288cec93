"""The ``cli`` extra installs the operator's command without the dev tools: every module of the client
package imports, and ``tuning-governor --help`` runs, with the dev-only packages made unimportable."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib

from packaging.requirements import Requirement

from tests.conftest import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install, transitively (as the installed metadata says)."""
    seen: set[str] = set()
    todo = [Requirement(line) for line in requirements]
    while todo:
        requirement = todo.pop()
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if name in seen or name == "tuning-governor":
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            child = Requirement(line)
            wanted = requirement.extras
            if child.marker is None or any(child.marker.evaluate({"extra": e}) for e in wanted or {""}):
                todo.append(child)
    return seen


def _dev_only_modules() -> set[str]:
    extras = PROJECT["optional-dependencies"]
    cli = _closure([*PROJECT["dependencies"], *extras["cli"]])
    dev = _closure([line for line in extras["dev"] if not line.startswith("tuning-governor")])
    blocked: set[str] = set()
    for module, distributions in importlib.metadata.packages_distributions().items():
        names = {re.sub(r"[-_.]+", "-", d).lower() for d in distributions}
        if names & dev and not names & cli:
            blocked.add(module)
    return blocked


SNIPPET = """
import importlib, importlib.abc, pkgutil, sys
BLOCKED = set(sys.argv[1].split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is a dev-only package")
        return None
sys.meta_path.insert(0, Block())
import governor_client
for module in pkgutil.walk_packages(governor_client.__path__, "governor_client."):
    importlib.import_module(module.name)
from governor_client.__main__ import main
raise SystemExit(main(["--help"]))
"""


def test_the_cli_extra_holds_no_dev_tool_and_dev_holds_the_cli() -> None:
    extras = PROJECT["optional-dependencies"]
    tools = {"pytest", "mypy", "ruff", "hypothesis", "cfn-lint", "import-linter", "pytest-xdist"}
    assert not {Requirement(line).name for line in extras["cli"]} & tools
    assert "tuning-governor[cli]" in extras["dev"]


def test_the_client_package_imports_with_the_dev_only_packages_blocked() -> None:
    blocked = _dev_only_modules()
    assert {"pytest", "mypy", "hypothesis", "cfnlint"} <= blocked
    done = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
        [sys.executable, "-c", SNIPPET, ",".join(sorted(blocked))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "simulate" in done.stdout
