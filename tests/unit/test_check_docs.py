"""docs/reference/check.md's examples are what ``tuning-governor check`` prints today on the files beside them."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

from tests.conftest import ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_examples", ROOT / "scripts" / "check_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_requests_are_the_seed_and_its_variants() -> None:
    from governor_client.simulator.scenarios import seed_tuning_request

    seed = json.loads((ROOT / "docs" / "examples" / "check" / "seed.json").read_text(encoding="utf-8"))
    assert seed == seed_tuning_request()


def test_docs_check_md_shows_what_check_prints_today() -> None:
    script = _script()
    assert script.BLOCK.stale(script.block()) is None
