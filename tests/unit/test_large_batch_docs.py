"""docs/reference/large-batch.md's examples are what ``tuning-governor check`` prints today on the files beside them,
and ``check`` reports each large-batch finding with its source and the cost of the trials at risk."""

from __future__ import annotations

import importlib.util
import json
from decimal import Decimal
from types import ModuleType

from governor_client.check import check_request
from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("large_batch_examples", ROOT / "scripts" / "large_batch_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_files_are_the_scripts_requests() -> None:
    for name, (_, request) in _script().requests().items():
        on_disk = json.loads((ROOT / "docs" / "examples" / "large-batch" / name).read_text(encoding="utf-8"))
        assert on_disk == request, name


def test_docs_large_batch_md_shows_what_check_prints_today() -> None:
    script = _script()
    doc = (ROOT / "docs" / "reference" / "large-batch.md").read_text(encoding="utf-8")
    assert script.BLOCK.start in doc and script.BLOCK.end in doc
    assert script.BLOCK.stale(script.block()) is None


def test_check_reports_each_finding_with_its_source_and_cost_at_risk() -> None:
    # 4 x ml.p4d.24xlarge at $37.688/h each (bundled us-east-1) = $150.752/h per trial, 2 h: $301.504 a trial.
    _, fixed = _script().requests()["ddp-fixed-lr.json"]
    result = check_request(fixed)
    # The large-batch findings (the approximate-price note of the p4d price is check's own)
    found = {f.code: f for f in result.findings if f.code != "approximate-price"}
    assert found["global-batch-range"].severity == "note" and found["global-batch-range"].usd_at_risk is None
    # Every trial (20) for the unscaled learning rate; 15 of them (75 %) for the missing warmup; 5 past 8,192.
    assert result.cost is not None
    assert found["lr-not-scaled"].usd_at_risk == Decimal("6030.08") == result.cost.worst_case_usd
    assert found["no-warmup"].usd_at_risk == Decimal("4522.56")
    assert found["batch-beyond-literature"].usd_at_risk == Decimal("1507.52")
    assert all(f.source for f in found.values())
    assert result.status == "warnings"


def test_the_seed_request_gets_no_large_batch_finding_from_check() -> None:
    codes = {f.code for f in check_request(seed_tuning_request()).findings}
    assert not codes & {"global-batch-range", "lr-not-scaled", "no-warmup", "batch-beyond-literature"}
