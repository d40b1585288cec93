"""The large-batch rule on arrival: what the job item keeps of a request, and the decision made of it."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governor_client.simulator.scenarios import seed_tuning_request
from tests.builders import job_facts
from tests.conftest import ROOT
from tuning_governor.domain.large_batch import findings
from tuning_governor.domain.large_batch.arrival import MAX_VALUE_CHARS, checked_request
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.rules import registry
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.policy import Policy, parse_policy

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _examples() -> dict[str, tuple[str, dict[str, Any]]]:
    spec = importlib.util.spec_from_file_location("large_batch_examples", ROOT / "scripts" / "large_batch_examples.py")
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.requests())


def _job(request: dict[str, Any]) -> TuningJob:
    return TuningJob.model_validate(request | {"HyperParameterTuningJobStatus": "InProgress"})


def _facts(batch_request: dict[str, Any]) -> JobFacts:
    return job_facts(tags={}, max_parallel=2, max_trials=20, batch_request=batch_request)


@pytest.mark.parametrize("name", ["ddp-fixed-lr.json", "ddp-scaled-lr.json", "hf-accumulation.json"])
def test_the_kept_request_gets_the_findings_of_the_whole_request(name: str) -> None:
    request = _examples()[name][1]
    assert findings(checked_request(_job(request))) == findings(request)


def test_nothing_is_kept_for_the_seed_xgboost_job_or_a_job_without_its_configuration() -> None:
    assert checked_request(_job(seed_tuning_request())) == {}
    assert (
        checked_request(
            TuningJob.model_validate(
                {"HyperParameterTuningJobName": "thin", "HyperParameterTuningJobStatus": "InProgress"}
            )
        )
        == {}
    )


def test_a_long_static_value_is_cut() -> None:
    request = _examples()["ddp-fixed-lr.json"][1]
    request["TrainingJobDefinition"]["StaticHyperParameters"]["sagemaker_program_args"] = "x" * 2000
    kept = checked_request(_job(request))["TrainingJobDefinition"]["StaticHyperParameters"]
    assert len(kept["sagemaker_program_args"]) == MAX_VALUE_CHARS and kept["lr"] == "0.1"


@pytest.mark.parametrize(
    ("policy", "verdict"),
    [("", "warning"), ("large_batch: {on_arrival: stop}\n", "breach"), ("large_batch: {on_arrival: skip}\n", None)],
)
def test_the_rule_warns_unless_the_policy_says_stop_or_off(policy: str, verdict: str | None) -> None:
    kept = checked_request(_job(_examples()["ddp-fixed-lr.json"][1]))
    decision = registry.get("large-batch").evaluate(parse_policy(policy or "{}", "p.yaml"), _facts(kept))
    if verdict is None:
        assert decision is None
        return
    assert decision is not None and decision.verdict == verdict
    assert [f["code"] for f in decision.numbers["findings"]] == [
        "lr-not-scaled",
        "no-warmup",
        "batch-beyond-literature",
    ]
    assert all(f["source"] for f in decision.numbers["findings"])


def test_a_job_with_only_the_information_line_gets_no_decision() -> None:
    kept = checked_request(_job(_examples()["ddp-scaled-lr.json"][1]))
    assert kept and registry.get("large-batch").evaluate(Policy(), _facts(kept)) is None


_TEXT = st.one_of(st.sampled_from(["0", "-3", "1e309", "nan", "32", "0.1", "sgd", ""]), st.text(max_size=8))
_NAMES = st.sampled_from(["batch_size", "lr", "warmup_ratio", "epochs", "optimizer", "gradient_accumulation_steps"])


@settings(max_examples=150, deadline=None)
@given(
    static=st.dictionaries(_NAMES, _TEXT, max_size=6),
    low=_TEXT,
    high=_TEXT,
    values=st.lists(_TEXT, max_size=4),
    count=st.integers(min_value=1, max_value=64),
)
def test_any_values_give_findings_or_none_never_an_error(
    static: dict[str, str], low: str, high: str, values: list[str], count: int
) -> None:
    ranges = {
        "IntegerParameterRanges": [{"Name": "batch_size", "MinValue": low, "MaxValue": high}],
        "CategoricalParameterRanges": [{"Name": "gradient_accumulation_steps", "Values": values}],
    }
    request = {
        "HyperParameterTuningJobConfig": {"Strategy": "Hyperband", "ParameterRanges": ranges},
        "TrainingJobDefinition": {
            "StaticHyperParameters": static,
            "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": count},
        },
    }
    for finding in findings(request, worst_case_trial_dollars=1.0):
        assert finding.reason and finding.source
        assert finding.dollars is None or finding.dollars >= 0
