"""The large-batch checks on the corpus of real tuning requests (tests/data/large_batch_corpus/): every
fixture is a valid request with its source and hand labels, the checks meet their precision and recall
targets against those labels, and docs/reference/large-batch-corpus.md shows what they find today."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import sys
from types import ModuleType
from typing import Any

import pytest

from governor_client.check.validation import model_findings
from tests.conftest import ROOT
from tuning_governor.domain.large_batch import findings


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("large_batch_corpus", ROOT / "scripts" / "large_batch_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()
FIXTURES = SCRIPT.fixtures()


def _fixture(name: str) -> dict[str, Any]:
    return copy.deepcopy(dict(FIXTURES)[name]["request"])


def _codes(request: dict[str, Any]) -> set[str]:
    return {f.code for f in findings(request)}


@pytest.mark.parametrize(("name", "fixture"), FIXTURES, ids=[name for name, _ in FIXTURES])
def test_each_fixture_names_its_source_and_is_a_request_botocore_would_send(name: str, fixture: dict[str, Any]) -> None:
    assert set(fixture) == {"source", "request", "labels", "why"}, f"{name}: keys {sorted(fixture)}"
    source = fixture["source"]
    for key in ("repository", "path", "translated"):
        assert isinstance(source.get(key), str) and source[key].strip(), f"{name}: source.{key} missing"
    if "commit" in source:
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), f"{name}: commit {source['commit']!r}"
    labels = fixture["labels"]
    assert len(labels) == len(set(labels)) and set(labels) <= set(SCRIPT.WARNINGS), f"{name}: labels {labels}"
    assert fixture["why"].strip(), f"{name}: no reason for its labels"
    errors = [f"{f.code} {f.path}: {f.message}" for f in model_findings(fixture["request"])]
    assert errors == [], f"{name}: not a valid CreateHyperParameterTuningJob request: {errors}"


def test_the_corpus_has_forty_requests_and_the_seed_job_unlabelled() -> None:
    from governor_client.simulator.scenarios import seed_tuning_request

    assert len(FIXTURES) >= 40
    seed = dict(FIXTURES)["seed-xgboost-hyperband"]
    assert seed["request"] == seed_tuning_request()
    assert seed["labels"] == []


def test_the_seed_job_gets_no_finding_at_all() -> None:
    assert findings(_fixture("seed-xgboost-hyperband")) == []


def test_the_checks_meet_their_precision_and_recall_targets_on_the_corpus() -> None:
    rows = SCRIPT.evaluate()
    score = SCRIPT.score(rows)
    wrong = {r.name: {"expected": sorted(r.expected), "found": sorted(r.found)} for r in rows if not r.agrees}
    assert score.precision >= SCRIPT.PRECISION_TARGET, f"precision {score.precision:.2f}; disagreements: {wrong}"
    assert score.recall >= SCRIPT.RECALL_TARGET, f"recall {score.recall:.2f}; disagreements: {wrong}"


def test_docs_page_shows_what_the_checks_find_today() -> None:
    page = (ROOT / "docs" / "reference" / "large-batch-corpus.md").read_text(encoding="utf-8")
    assert page == SCRIPT.render(SCRIPT.evaluate()), (
        "docs/reference/large-batch-corpus.md is stale: run python scripts/large_batch_corpus.py --write"
    )


def test_categorical_batch_values_json_encoded_by_the_sdk_are_read() -> None:
    """A framework estimator's CategoricalParameter([512, ..., 10000]) reaches AMT as '"512"', ...: the
    SDK keeps categorical values as strings and JSON-encodes them (sagemaker CategoricalParameter)."""
    request = _fixture("ase-fraud-gnn")
    values = request["HyperParameterTuningJobConfig"]["ParameterRanges"]["CategoricalParameterRanges"][0]
    assert values["Values"] == ['"512"', '"1024"', '"2048"', '"10000"']
    assert {"global-batch-range", "no-warmup"} <= _codes(request)


def test_a_static_optimizer_json_encoded_by_the_sdk_is_known() -> None:
    """'"sgd"' is how a framework estimator sends optimizer="sgd": it is SGD (linear scaling, 8,192 limit)."""
    request = _fixture("ase-fraud-gnn")
    definition = request["TrainingJobDefinition"]
    definition["StaticHyperParameters"]["optimizer"] = json.dumps("sgd")
    lr = request["HyperParameterTuningJobConfig"]["ParameterRanges"]["ContinuousParameterRanges"][0]
    lr["MaxValue"] = "0.02"  # 10x: wider than sqrt(19.5), narrower than 19.5
    assert {"lr-not-scaled", "batch-beyond-literature"} <= _codes(request)


def test_yolov5_names_batchsize_and_lr0_are_read() -> None:
    assert "lr-not-scaled" in _codes(_fixture("ase-yolov5-hpo"))
