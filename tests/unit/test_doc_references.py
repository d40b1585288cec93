"""The docs name only what exists: every file, module, function, command (and its options) and policy key
(at every level: ``teams.<team>.share.priority``) a user doc cites in backticks is looked up in the tree,
so a rename that leaves a doc behind fails here."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from tuning_governor.policy.model import Policy

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *ROOT.glob("docs/**/*.md")])
#: Where a path a doc gives may be rooted: the repository, the layer's and the client's packages.
PATH_ROOTS = (ROOT, ROOT / "layers/governor/tuning_governor", ROOT / "client/governor_client", ROOT / "layers/governor")
PACKAGES = {
    "tuning_governor": ROOT / "layers/governor/tuning_governor",
    "governor_client": ROOT / "client/governor_client",
}
_CODE = re.compile(r"`([^`\n]+)`")
#: A path into the tree: under one of its source folders (a page or a file the governor writes is not).
_PATH = re.compile(
    r"^((app|governance|adapters|domain|models|policy|ports|layers|client|functions|scripts|benchmarks|tests|docs"
    r"|examples|events)/[\w./-]+|test_\w+\.py)(::\w+)?$"
)
_DOTTED = re.compile(r"^(tuning_governor|governor_client)(\.\w+)+$")
_COMMAND = re.compile(r"^tuning-governor ([a-z][a-z-]*)")
#: A policy key: a section of the policy, then the keys (or a mapping's ``<placeholder>``) below it.
_POLICY_KEY = re.compile(rf"^({'|'.join(Policy.model_fields)})\.([\w<>.-]+)(:|$| )")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
#: A module defines ``name``: a function, a class, an assignment, or an import (a package's re-export).
_DEFINES = r"^\s*(def|class|async def) {name}\b|^{name}\b\s*[:=]|^\s+{name}\s*[:=]|^\s*(from \S+ )?import .*\b{name}\b"


def _citations() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for doc in DOCS:
        text = doc.read_text()
        found += [(doc.relative_to(ROOT).as_posix(), code.strip()) for code in _CODE.findall(text)]
    return found


CITATIONS = _citations()


_SUFFIX = re.compile(r"\.(py|md|json|yaml|yml|jsonl|txt|png|html|toml)$")


def _path_exists(cited: str) -> bool:
    path, _, test = cited.partition("::")
    if "/" in path and not test and any((root / path).exists() for root in PATH_ROOTS):
        return True  # a folder, or a file without a suffix (a Makefile)
    if "/" in path and not _SUFFIX.search(path):
        # ``app/queue/plan.plan_decisions`` or ``domain/queue_reports``: a module's path, then names in it.
        head, _, names = path.partition(".")
        return any(_names_exist(root / head, [n for n in names.split(".") if n]) for root in PATH_ROOTS)
    candidates = [root / path for root in PATH_ROOTS]
    if "/" not in path and path.startswith("test_"):
        candidates += list((ROOT / "tests").rglob(path))
    for candidate in candidates:
        if candidate.exists():
            return not test or re.search(rf"def {test}\b", candidate.read_text()) is not None
    return False


def _names_exist(where: Path, names: list[str]) -> bool:
    """``names`` defined in the module or package ``where`` (its path without ``.py``)."""
    module = where / "__init__.py" if where.is_dir() else where.with_suffix(".py")
    return module.exists() and len(names) <= 2 and all(_defined(module, name) for name in names)


def _defined(source: Path, name: str) -> bool:
    return re.search(_DEFINES.format(name=re.escape(name)), source.read_text(), re.MULTILINE) is not None


def _dotted_exists(cited: str) -> bool:
    first, *parts = cited.split(".")
    where = PACKAGES[first]
    while parts and ((where / parts[0]).is_dir() or (where / f"{parts[0]}.py").exists()):
        where = where / parts.pop(0)
    # What is left names at most a function or class of the module and one of its members.
    return _names_exist(where, parts)


def _commands() -> set[str]:
    """The CLI's commands, as its own ``--help`` lists them."""
    shown = subprocess.run(
        [sys.executable, "-m", "governor_client", "--help"], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    listing = shown.split("commands:", 1)[1]
    return set(re.findall(r"^ {4}([a-z][a-z-]*) {2,}\S", listing, re.MULTILINE))


def _options(parser: argparse.ArgumentParser) -> Iterator[tuple[str, set[str]]]:
    """(subcommand, every option string of it and of its own subcommands) for each subcommand of the CLI."""

    def flags(sub: argparse.ArgumentParser) -> set[str]:
        found = {flag for action in sub._actions for flag in action.option_strings}
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                found |= {flag for child in action.choices.values() for flag in flags(child)}
        return found

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from ((name, flags(sub)) for name, sub in action.choices.items())


def _below(annotation: Any) -> tuple[str, Any]:
    """What a key of this type holds below it: ``("model", M)``, ``("mapping", value type)`` or ``("leaf", None)``."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        shapes = [_below(arg) for arg in get_args(annotation) if arg is not type(None)]
        return next((shape for shape in shapes if shape[0] != "leaf"), ("leaf", None))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "model", annotation
    if get_origin(annotation) is dict:
        return "mapping", get_args(annotation)[1]
    return "leaf", None


def _policy_key_exists(cited: str) -> bool:
    """``teams.<team>.share.priority``: each name a field (or its alias) of the model it is read in; a
    mapping's key may be any name or placeholder; a plain value has no keys below it."""
    shape: tuple[str, Any] = ("model", Policy)
    for part in re.split(r"[: ]", cited, maxsplit=1)[0].split("."):
        kind, below = shape
        if kind == "model":
            fields = below.model_fields
            by_name = {field.alias or name: field for name, field in fields.items()} | fields
            if part not in by_name:
                return False
            shape = _below(by_name[part].annotation)
        elif kind == "mapping":
            shape = _below(below)
        else:
            return False
    return True


#: A layout the governor writes (``events/YYYY/MM/DD/HH/``), not a path of the tree.
_PLACEHOLDER = re.compile(r"<|/[A-Z]{2,}/")


@pytest.mark.parametrize(
    ("doc", "cited"), [c for c in CITATIONS if _PATH.match(c[1]) and not _PLACEHOLDER.search(c[1])]
)
def test_a_cited_file_exists(doc: str, cited: str) -> None:
    assert _path_exists(cited), f"{doc} cites {cited}, which is not in the tree"


@pytest.mark.parametrize(("doc", "cited"), [c for c in CITATIONS if _DOTTED.match(c[1])])
def test_a_cited_module_or_function_exists(doc: str, cited: str) -> None:
    assert _dotted_exists(cited), f"{doc} cites {cited}, which names no module, class or function"


def test_every_cited_command_is_a_command_of_the_cli() -> None:
    commands = _commands()
    assert {"check", "replay", "validate", "demo"} <= commands  # the reader of the CLI still finds them
    unknown = {(doc, cited) for doc, cited in CITATIONS if (m := _COMMAND.match(cited)) and m[1] not in commands}
    assert not unknown, f"docs cite commands the CLI does not have: {sorted(unknown)}"


def test_every_cited_option_is_an_option_of_its_command() -> None:
    from governor_client.__main__ import build_parser

    options = dict(_options(build_parser()))
    unknown = {
        (doc, cited)
        for doc, cited in CITATIONS
        # An invocation, not an error message the command prints (``tuning-governor check: ...``).
        if (m := _COMMAND.match(cited))
        and not cited[m.end() :].startswith(":")
        and set(_OPTION.findall(cited)) - options.get(m[1], set())
    }
    assert not unknown, f"docs cite options their command does not have: {sorted(unknown)}"


def test_every_cited_policy_key_is_a_key_of_the_policy() -> None:
    unknown = {(doc, cited) for doc, cited in CITATIONS if _POLICY_KEY.match(cited) and not _policy_key_exists(cited)}
    assert not unknown, f"docs cite policy keys the policy does not have: {sorted(unknown)}"


def test_the_lookups_find_what_the_docs_cite() -> None:
    # The checks above would pass on nothing: they must see real citations of each kind.
    kinds = [_PATH, _DOTTED, _COMMAND, _POLICY_KEY]
    assert all(sum(1 for _, cited in CITATIONS if kind.match(cited)) >= 5 for kind in kinds)
    assert not _path_exists("app/no_such_module.py")
    assert not _dotted_exists("tuning_governor.app.sweep.run.no_such_function")
    assert sum(1 for _, cited in CITATIONS if _COMMAND.match(cited) and _OPTION.search(cited)) >= 5
    # A key is looked up at every level, through mappings (``<team>``) and nested models (``share``).
    assert _policy_key_exists("teams.<team>.share.priority") and _policy_key_exists("defaults.grace_minutes.<rule>")
    assert _policy_key_exists("large_batch.names.<hyperparameter>") and _policy_key_exists("accounts.<id>.mode")
    for wrong in ("teams.<team>.share.priorty", "large_batch.no_such", "defaults.max_widgets", "mode.enforce"):
        assert not _policy_key_exists(wrong), wrong
