"""``check``: a CreateHyperParameterTuningJob request judged before launch, offline (no moto, no network).

The request is validated against botocore's own SageMaker model; its worst-case and typical cost come
from the bundled price catalogue; the verdict from the governor's arrival rules on the policy's quotas.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governor_client.check import check_request
from governor_client.simulator.requests import tuning_request
from governor_client.simulator.scenarios import seed_tuning_request
from tuning_governor.domain.pricing import bundled_catalog
from tuning_governor.policy import parse_policy

M5 = "ml.m5.xlarge"
ROOMY = parse_policy("mode: enforce\nquotas: {ml.m5.xlarge: 16}\n", "test")


def m5_price() -> Decimal:
    quote = bundled_catalog().quote("us-east-1", M5)
    assert quote is not None
    return quote.usd_per_hour


def codes(request: dict[str, Any], policy: Any = ROOMY, **options: Any) -> set[str]:
    return {f.code for f in check_request(request, policy, **options).findings}


def test_the_seed_request_is_admitted_with_its_worst_case_cost() -> None:
    # Given the seed job (30 trials, 4 in parallel, 3 x ml.m5.xlarge, MaxRuntime 3600 s) and room for 16
    result = check_request(seed_tuning_request(), ROOMY)
    # Then it is admitted, and the worst case is every trial running its full MaxRuntime
    assert result.admission.outcome == "admitted"
    assert result.status == "ok"
    assert result.exit_code == 0
    assert result.cost.worst_case_usd == (30 * 3 * m5_price()).quantize(Decimal("0.01"))
    assert result.cost.max_concurrent_instances == {M5: 12}


def test_unknown_keys_and_wrong_types_are_listed_with_their_path() -> None:
    request = seed_tuning_request()
    request["Colour"] = "blue"
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = "4"
    result = check_request(request, ROOMY)
    assert result.status == "invalid"
    assert result.exit_code == 2
    found = {(f.code, f.path) for f in result.findings}
    assert ("unknown-field", "Colour") in found
    assert ("invalid-type", "HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs") in found


def test_a_value_outside_the_models_enum_is_invalid() -> None:
    request = seed_tuning_request()
    request["HyperParameterTuningJobConfig"]["Strategy"] = "Genetic"
    result = check_request(request, ROOMY)
    assert result.status == "invalid"
    assert any(f.code == "invalid-enum" and f.path == "HyperParameterTuningJobConfig.Strategy" for f in result.findings)


def test_a_request_over_the_quota_even_on_an_empty_account_can_never_run() -> None:
    tight = parse_policy("mode: enforce\nquotas: {ml.m5.xlarge: 8}\n", "test")
    result = check_request(seed_tuning_request(), tight)
    assert result.status == "refused"
    assert result.exit_code == 2
    never = [f for f in result.findings if f.code == "never-fits"]
    assert never and "demand 12 > limit 8" in never[0].message
    assert result.admission.outcome == "stopped on arrival"
    assert result.admission.rule == "concurrency"


def test_over_quota_under_monitor_mode_is_a_warning_not_a_refusal() -> None:
    monitor = parse_policy("mode: monitor\nquotas: {ml.m5.xlarge: 8}\n", "test")
    result = check_request(seed_tuning_request(), monitor)
    assert result.admission.outcome == "admitted"
    assert result.admission.rule == "concurrency"  # the breach it would record
    assert result.status == "refused"  # never-fits stays an error: AWS would not run 12 either if 8 is real


def test_spot_without_max_wait_or_checkpoints_is_flagged() -> None:
    request = tuning_request("spotty", spot=True)
    del request["TrainingJobDefinition"]["StoppingCondition"]["MaxWaitTimeInSeconds"]
    found = codes(request)
    assert {"spot-without-max-wait", "spot-without-checkpoints"} <= found


def test_spot_worst_case_wall_clock_is_bounded_by_max_wait() -> None:
    request = tuning_request("spotty", spot=True, max_runtime_s=3600)
    request["TrainingJobDefinition"]["CheckpointConfig"] = {"S3Uri": "s3://example-bucket/ckpt/"}
    result = check_request(request, ROOMY)
    assert "spot-without-checkpoints" not in {f.code for f in result.findings}
    # 30 trials in waves of 4 = 8 waves, each up to MaxWaitTimeInSeconds (7200 s)
    assert result.cost.worst_case_wall_clock_hours == Decimal(16)


def test_no_max_runtime_uses_sagemakers_one_day_default_and_says_so() -> None:
    request = seed_tuning_request()
    # StoppingCondition itself is required by SageMaker's model; its MaxRuntimeInSeconds is not
    request["TrainingJobDefinition"]["StoppingCondition"] = {}
    result = check_request(request, ROOMY)
    assert "no-max-runtime" in {f.code for f in result.findings}
    assert result.cost.worst_case_usd == (30 * 24 * 3 * m5_price()).quantize(Decimal("0.01"))


def test_early_stopping_off_with_a_strategy_that_supports_it_is_flagged() -> None:
    assert "early-stopping-off" in codes(tuning_request("bayes", strategy="Bayesian", early_stopping="Off"))
    assert "early-stopping-off" not in codes(tuning_request("bayes", strategy="Bayesian", early_stopping="Auto"))
    assert "early-stopping-off" not in codes(tuning_request("grid", strategy="Grid"))


def test_an_instance_type_sagemaker_does_not_know_is_invalid() -> None:
    result = check_request(seed_tuning_request(instance_type="ml.zz9.huge"), ROOMY)
    assert result.status == "invalid"
    assert any(
        f.code == "invalid-enum" and f.path == "TrainingJobDefinition.ResourceConfig.InstanceType"
        for f in result.findings
    )


def test_an_unpriced_type_makes_the_cost_unknown_never_zero() -> None:
    request = seed_tuning_request(instance_type="ml.m4.xlarge")
    result = check_request(request, parse_policy("mode: enforce\n", "test"))
    assert result.cost.worst_case_usd is None
    assert result.cost.unpriced_types == ["ml.m4.xlarge"]
    assert "unpriced-instance-type" in {f.code for f in result.findings}
    assert result.exit_code == 1


def test_the_policys_prices_fill_the_catalogues_gaps() -> None:
    policy = parse_policy("mode: enforce\nprices: {ml.m4.xlarge: 2.0}\n", "test")
    result = check_request(seed_tuning_request(instance_type="ml.m4.xlarge"), policy)
    assert result.cost.worst_case_usd == Decimal("180.00")  # 30 trials x 1 h x 3 x $2


def test_a_worst_case_above_the_job_budget_is_a_warning_with_the_numbers() -> None:
    policy = parse_policy("mode: enforce\ndefaults: {job_budget_usd: 5}\n", "test")
    result = check_request(seed_tuning_request(), policy)
    over = [f for f in result.findings if f.code == "worst-case-over-budget"]
    assert over and "$5.00" in over[0].message
    assert result.exit_code == 1


def test_the_typical_cost_uses_the_expected_trial_length() -> None:
    result = check_request(seed_tuning_request(), ROOMY, trial_minutes=10)
    assert result.cost.typical_usd == (30 * 3 * m5_price() / 6).quantize(Decimal("0.01"))
    assert result.cost.hyperband_max_resource == 30


def test_the_typical_cost_is_capped_by_the_jobs_max_runtime_as_the_worst_case_is() -> None:
    # Given the seed job (30 trials of 3 x ml.m5.xlarge, 4 in parallel) that may run 1 hour in all,
    # with trials expected to take 40 minutes each (8 waves: 5h20 if nothing stopped it)
    request = copy.deepcopy(seed_tuning_request())
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxRuntimeInSeconds"] = 3600
    cost = check_request(request, None, trial_minutes=40).cost
    # Then the typical cost is at most 4 trials x 3 instances for that hour, as the worst case is
    cap = (4 * 3 * m5_price()).quantize(Decimal("0.01"))
    assert cost.worst_case_usd == cap
    assert cost.typical_usd is not None and cost.typical_usd <= cap, (cost.typical_usd, cost.worst_case_usd)


def test_prioritized_instance_configs_cost_the_dearest_in_the_worst_case() -> None:
    request = copy.deepcopy(seed_tuning_request())
    definition = request["TrainingJobDefinition"]
    del definition["ResourceConfig"]
    definition["HyperParameterTuningResourceConfig"] = {
        "AllocationStrategy": "Prioritized",
        "InstanceConfigs": [
            {"InstanceType": "ml.m5.xlarge", "InstanceCount": 3, "VolumeSizeInGB": 30},
            {"InstanceType": "ml.m5.2xlarge", "InstanceCount": 3, "VolumeSizeInGB": 30},
        ],
    }
    result = check_request(request, parse_policy("mode: enforce\n", "test"))
    dear = bundled_catalog().quote("us-east-1", "ml.m5.2xlarge")
    assert dear is not None
    assert result.cost.worst_case_usd == (30 * 3 * dear.usd_per_hour).quantize(Decimal("0.01"))


@pytest.mark.parametrize("status", ["ok", "warnings", "refused", "invalid"])
def test_every_status_has_its_exit_code(status: str) -> None:
    from governor_client.check.result import EXIT_CODES

    assert EXIT_CODES[status] == {"ok": 0, "warnings": 1, "refused": 2, "invalid": 2}[status]


def test_the_published_schema_is_the_results_own() -> None:
    import json

    from governor_client.check import json_schema
    from tests.conftest import ROOT

    published = json.loads((ROOT / "docs" / "check-result.schema.json").read_text(encoding="utf-8"))
    assert published == json.loads(json.dumps(json_schema(), sort_keys=True)), (
        "docs/check-result.schema.json is stale: run `python -m governor_client.check > docs/check-result.schema.json`"
    )


SHARED = parse_policy(
    """
mode: enforce
quotas: {ml.m5.xlarge: 16}
teams:
  churn: {share: {capacity_limits: {ml.m5.xlarge: 8}, resource_sharing: RESERVE}}
  vision: {share: {capacity_limits: {ml.m5.xlarge: 8}, resource_sharing: RESERVE}}
""",
    "test",
)


def _waiting(name: str, team: str, parallel: int, minutes_ago: int) -> Any:
    from datetime import UTC, datetime, timedelta

    from tuning_governor.models.queue import QueuedRequest

    request = seed_tuning_request(name, team=team, max_parallel=parallel, instance_count=1)
    at = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    return QueuedRequest(
        client_token=name, team=team, submitter="arn:aws:iam::123456789012:role/x", job_name=name,
        request=request, demand={"ml.m5.xlarge": parallel}, enqueued_at=at,
    )  # fmt: skip


def test_submitted_a_request_that_can_never_fit_its_teams_share_is_refused_with_the_reason() -> None:
    from governor_client.check import SubmissionQueue

    # 4 x 3 = 12 ml.m5.xlarge: within the quota of 16, above churn's RESERVE share of 8
    result = check_request(seed_tuning_request(), SHARED, queue=SubmissionQueue(SHARED))
    assert (result.admission.outcome, result.admission.path, result.exit_code) == ("refused", "queue", 2)
    assert result.admission.message is not None and "above the 8 team churn can ever hold" in result.admission.message


def test_submitted_a_request_that_fits_later_is_queued_with_its_position_and_what_it_waits_behind() -> None:
    from governor_client.check import SubmissionQueue

    # churn's share is full (8 running) and a churn request is already waiting
    held = [_holder("churn-running", "churn", 8)]
    queue = SubmissionQueue(SHARED, held, [_waiting("churn-first", "churn", 4, 30)])
    result = check_request(seed_tuning_request(max_parallel=2), SHARED, queue=queue)
    assert (result.admission.outcome, result.exit_code) == ("queued", 0)
    assert result.admission.numbers == {"position": 2} and result.admission.behind == ["churn-first"]


def test_submitted_with_consent_a_request_is_created_now_with_the_parallelism_that_fits() -> None:
    from governor_client.check import SubmissionQueue

    held = [_holder("churn-running", "churn", 5)]  # 3 of churn's 8 idle: one trial of 3 instances
    queue = SubmissionQueue(SHARED, held, fit_to_share=True)
    result = check_request(seed_tuning_request(max_parallel=2), SHARED, queue=queue)
    assert (result.admission.outcome, result.admission.numbers) == ("admitted", {"max_parallel": 1})
    assert "MaxParallel 2 -> 1 to fit" in (result.admission.message or "")
    direct = check_request(seed_tuning_request(max_parallel=2), SHARED, holders=held)
    assert direct.admission.path == "create"


def _holder(key: str, team: str, instances: int) -> Any:
    from tuning_governor.domain.capacity import Holder

    return Holder(key=key, kind="tuning-job", team=team, instances={"ml.m5.xlarge": instances})


def test_a_spot_max_wait_below_the_max_runtime_is_refused_as_sagemaker_would() -> None:
    # AWS (StoppingCondition): MaxWaitTimeInSeconds must be equal to or greater than MaxRuntimeInSeconds
    request = tuning_request("spotty", spot=True, max_runtime_s=3600)
    request["TrainingJobDefinition"]["StoppingCondition"]["MaxWaitTimeInSeconds"] = 1800
    request["TrainingJobDefinition"]["CheckpointConfig"] = {"S3Uri": "s3://example-bucket/ckpt/"}
    result = check_request(request, ROOMY)
    assert [f.code for f in result.findings if f.severity == "error"] == ["max-wait-below-runtime"]
    assert result.exit_code == 2


def test_an_approximately_priced_type_is_noted_with_the_price_used() -> None:
    # ml.g5.xlarge has no price in the bundled catalogue for ap-south-2: its highest price elsewhere is used
    from tuning_governor.domain.pricing import bundled_catalog

    quote = bundled_catalog().quote("ap-south-2", "ml.g5.xlarge")
    assert quote is not None and quote.basis != "exact"
    result = check_request(seed_tuning_request(instance_type="ml.g5.xlarge"), None, region="ap-south-2")
    assert "approximate-price" in {f.code for f in result.findings if f.severity == "note"}


@settings(max_examples=60, deadline=None)
@given(
    trials=st.integers(min_value=1, max_value=500),
    parallel=st.integers(min_value=1, max_value=20),
    count=st.integers(min_value=1, max_value=8),
    runtime=st.integers(min_value=60, max_value=7 * 86_400),
    minutes=st.integers(min_value=1, max_value=10_000),
    job_cap=st.none() | st.integers(min_value=120, max_value=30 * 86_400),
)
def test_the_worst_case_bounds_the_typical_cost_and_never_shrinks_with_more_trials(
    trials: int, parallel: int, count: int, runtime: int, minutes: int, job_cap: int | None
) -> None:
    request = tuning_request(
        "prop", max_jobs=trials, max_parallel=parallel, instance_count=count, max_runtime_s=runtime
    )
    if job_cap is not None:
        request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxRuntimeInSeconds"] = job_cap
    cost = check_request(request, None, trial_minutes=minutes).cost
    assert cost is not None and cost.worst_case_usd is not None and cost.typical_usd is not None
    assert cost.typical_usd <= cost.worst_case_usd
    more = tuning_request(
        "prop", max_jobs=trials + 1, max_parallel=parallel, instance_count=count, max_runtime_s=runtime
    )
    limits = request["HyperParameterTuningJobConfig"]["ResourceLimits"]
    more["HyperParameterTuningJobConfig"]["ResourceLimits"] = dict(limits, MaxNumberOfTrainingJobs=trials + 1)
    bigger = check_request(more, None).cost
    assert bigger is not None and bigger.worst_case_usd is not None
    assert bigger.worst_case_usd >= cost.worst_case_usd  # rounded to cents: never less
