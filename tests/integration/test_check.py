"""``tuning-governor check REQUEST.json``: the CLI on files, offline and against a deployed table (moto)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from governor_client.__main__ import main
from governor_client.offline.environment import TABLE_NAME
from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import ROOT
from tests.integration.conftest import World
from tuning_governor.policy import parse_policy

SCHEMA = ROOT / "docs" / "check-result.schema.json"


def write(tmp_path: Path, name: str, content: Any) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return str(path)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_seed_request_passes_and_its_json_matches_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = write(tmp_path, "seed.json", seed_tuning_request())
    policy = write(tmp_path, "policy.yaml", "mode: enforce\nquotas: {ml.m5.xlarge: 16}\n")
    code, out, _ = run(["check", request, "--policy", policy, "--json"], capsys)
    assert code == 0
    result = json.loads(out)
    jsonschema.validate(result, json.loads(SCHEMA.read_text(encoding="utf-8")))
    assert result["status"] == "ok"
    assert result["admission"]["outcome"] == "admitted"


def test_a_request_that_can_never_fit_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = write(tmp_path, "seed.json", seed_tuning_request())
    policy = write(tmp_path, "policy.yaml", "mode: enforce\nquotas: {ml.m5.xlarge: 8}\n")
    code, out, _ = run(["check", request, "--policy", policy], capsys)
    assert code == 2
    assert "never-fits" in out
    assert "demand 12 > limit 8" in out


def test_a_malformed_request_exits_2_with_status_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = seed_tuning_request()
    broken["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = "four"
    code, out, _ = run(["check", write(tmp_path, "bad.json", broken), "--json"], capsys)
    assert code == 2
    result = json.loads(out)
    assert result["status"] == "invalid"
    assert result["admission"]["outcome"] == "not judged"


def test_a_file_that_is_not_json_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(["check", write(tmp_path, "bad.json", "{not json")], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_against_the_deployed_table_a_job_that_fits_alone_is_stopped_behind_what_runs(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the governor admitted the seed job (12 x ml.m5.xlarge) under a quota of 16
    policy_text = "mode: enforce\nquotas: {ml.m5.xlarge: 16}\n"
    policy = parse_policy(policy_text, "test")
    world.env.services.policy = lambda: policy
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("first-job"))
    world.pump(60)
    capsys.readouterr()  # the handlers' metric lines
    # When a second seed job is checked against the table's state
    request = write(tmp_path, "second.json", seed_tuning_request("second-job"))
    policy_file = write(tmp_path, "policy.yaml", policy_text)
    code, out, _ = run(["check", request, "--policy", policy_file, "--table", TABLE_NAME, "--json"], capsys)
    # Then it would be stopped on arrival by the concurrency rule, usage 12 + demand 12 > 16
    result = json.loads(out)
    assert code == 2
    assert result["admission"]["outcome"] == "stopped on arrival"
    assert result["admission"]["rule"] == "concurrency"
    assert "usage 12 + demand 12 > limit 16" in result["admission"]["message"]
    assert result["capacity_from"].startswith(f"table {TABLE_NAME}")


def test_a_guarded_sagemaker_client_never_sends_a_request_the_governor_would_refuse(world: World) -> None:
    from governor_client.check import RequestRefused, guard_tuning_requests

    # Given the client an SDK (boto3, or SDK v3's session) creates tuning jobs with, guarded by a tight policy
    tight = parse_policy("mode: enforce\nquotas: {ml.m5.xlarge: 8}\n", "test")
    sagemaker = world.env.sagemaker
    guard_tuning_requests(sagemaker.meta.events, tight)
    # When the seed job (12 x ml.m5.xlarge at once) is launched through it
    with pytest.raises(RequestRefused) as refused:
        sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("too-wide"))
    # Then the call never reached SageMaker, and the error carries the check's reason
    assert refused.value.result.status == "refused"
    assert "demand 12 > limit 8" in str(refused.value)
    assert sagemaker.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"] == []
    # And a request that fits goes through
    sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("fits", max_parallel=2))
    assert [
        s["HyperParameterTuningJobName"]
        for s in sagemaker.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]
    ] == ["fits"]


def test_against_the_deployed_table_the_accounts_service_quota_applies_when_lower(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an account whose applied quota for ml.m5.xlarge is 10, below the policy's 16
    world.amt.set_applied_quota("ml.m5.xlarge", 10)
    request = write(tmp_path, "seed.json", seed_tuning_request())
    policy_file = write(tmp_path, "policy.yaml", "mode: enforce\nquotas: {ml.m5.xlarge: 16}\n")
    # When the seed (12 at once) is checked against the deployed governor
    code, out, _ = run(["check", request, "--policy", policy_file, "--table", TABLE_NAME, "--json"], capsys)
    # Then the Service Quota decides, and is named, as the governor's admission would
    result = json.loads(out)
    assert code == 2
    assert result["admission"]["outcome"] == "stopped on arrival"
    assert "demand 12 > limit 10 (Service Quota" in result["admission"]["message"]
    assert any(f["code"] == "never-fits" for f in result["findings"])
