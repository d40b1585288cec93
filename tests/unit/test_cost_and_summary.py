"""Cost arithmetic and job summaries: billing formula, spot, warm pools, unpriced types, early stopping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuning_governor.adapters.channels.slack import render_blocks
from tuning_governor.domain.cost import trial_cost
from tuning_governor.domain.pricing import PriceCatalog, PriceEntry
from tuning_governor.domain.reports import summary_report
from tuning_governor.domain.summary import summarise
from tuning_governor.domain.trial_record import build_trial_record
from tuning_governor.models.records import TrialRecord
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TrialSummary, TuningJob

REGION = "us-east-1"
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
CATALOG = PriceCatalog(
    {
        REGION: {
            "ml.m5.xlarge": PriceEntry(usd_per_hour=Decimal("0.23"), source="test", quality="price-list"),
            "ml.g5.xlarge": PriceEntry(usd_per_hour=Decimal("1.408"), source="test", quality="price-list"),
            "ml.c5.2xlarge": PriceEntry(usd_per_hour=Decimal("0.408"), source="test", quality="secondary"),
        }
    }
)


def _job(**extra: object) -> TrainingJob:
    base: dict[str, object] = {
        "TrainingJobName": "xgb-001-0a1b2c3d",
        "TrainingJobStatus": "Completed",
        "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 3},
        "TrainingTimeInSeconds": 600,
        "BillableTimeInSeconds": 600,
    }
    base.update(extra)
    return TrainingJob.model_validate(base)


def test_on_demand_cost_is_billable_seconds_times_instances_times_price() -> None:
    cost = trial_cost(_job(), REGION, CATALOG)
    assert cost.cost_usd == Decimal("0.115000")  # 600 s x 3 x 0.23 / 3600
    assert cost.billable_instance_seconds == 1800
    assert cost.spot_savings_usd == 0


def test_spot_savings_are_unbilled_training_seconds_at_on_demand_price() -> None:
    cost = trial_cost(
        _job(EnableManagedSpotTraining=True, TrainingTimeInSeconds=1000, BillableTimeInSeconds=400), REGION, CATALOG
    )
    assert cost.cost_usd == Decimal("0.076667")  # 400 x 3 x 0.23 / 3600
    assert cost.spot_savings_usd == Decimal("0.115000")  # 600 x 3 x 0.23 / 3600


def test_warm_pool_retention_is_billed_separately() -> None:
    cost = trial_cost(
        _job(WarmPoolStatus={"Status": "Terminated", "ResourceRetainedBillableTimeInSeconds": 1800}), REGION, CATALOG
    )
    assert cost.warm_pool_instance_seconds == 5400
    assert cost.warm_pool_cost_usd == Decimal("0.345000")


def test_instance_groups_are_priced_per_group() -> None:
    cost = trial_cost(
        _job(
            ResourceConfig={
                "InstanceGroups": [
                    {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 2, "InstanceGroupName": "data"},
                    {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "InstanceGroupName": "gpu"},
                ]
            },
            BillableTimeInSeconds=3600,
            TrainingTimeInSeconds=3600,
        ),
        REGION,
        CATALOG,
    )
    assert cost.hourly_usd == Decimal("2.224")
    assert cost.cost_usd == Decimal("2.224000")
    assert cost.approximate_price  # the c5 price is a secondary source


def test_unknown_instance_type_is_unpriced_never_zero() -> None:
    cost = trial_cost(_job(ResourceConfig={"InstanceType": "ml.x9.mega", "InstanceCount": 1}), REGION, CATALOG)
    assert cost.cost_usd is None
    assert cost.unpriced_types == ("ml.x9.mega",)


def test_a_region_without_the_type_is_costed_at_its_highest_known_price_marked_approximate() -> None:
    # Issue 7.3: no price in eu-west-3, so the stated fallback (the type's highest price anywhere).
    cost = trial_cost(_job(), "eu-west-3", CATALOG)

    assert cost.cost_usd == Decimal("0.115000")  # 600 s x 3 x $0.23/h
    assert cost.approximate_price
    assert cost.approximate_types == ("ml.m5.xlarge",)
    unknown = trial_cost(_job(ResourceConfig={"InstanceType": "ml.x9.mega", "InstanceCount": 1}), "eu-west-3", CATALOG)
    assert unknown.cost_usd is None
    assert unknown.unpriced_types == ("ml.x9.mega",)


def test_billable_falls_back_to_training_interval_when_absent() -> None:
    cost = trial_cost(
        _job(
            BillableTimeInSeconds=None,
            TrainingTimeInSeconds=None,
            TrainingStartTime=T0,
            TrainingEndTime=T0 + timedelta(seconds=750),
        ),
        REGION,
        CATALOG,
    )
    assert cost.billable_seconds == 750


def test_policy_price_overrides_catalog() -> None:
    catalog = CATALOG.with_overrides({"ml.m5.xlarge": Decimal("0.5")}, source="policy")
    assert trial_cost(_job(), REGION, catalog).cost_usd == Decimal("0.250000")


@given(
    st.lists(
        st.tuples(st.integers(1, 20_000), st.integers(1, 8), st.sampled_from(["ml.m5.xlarge", "ml.g5.xlarge"])),
        min_size=1,
        max_size=40,
    )
)
def test_job_cost_is_sum_of_trial_costs_within_rounding(trials: list[tuple[int, int, str]]) -> None:
    records = [
        _record(f"t-{i:03d}-0a1b2c3d", "Completed", billable=b, count=c, itype=t) for i, (b, c, t) in enumerate(trials)
    ]
    summary = _summarise(_tuning(), [_summary(r.training_job_name, "Completed", 0.5) for r in records], records)
    exact = sum(
        Decimal(b) * c * CATALOG.price(REGION, t).usd_per_hour / 3600  # type: ignore[union-attr]
        for b, c, t in trials
    )
    assert summary.cost.cost_usd is not None
    assert abs(summary.cost.cost_usd - exact) <= Decimal("0.000001") * len(trials)
    assert summary.cost.billable_instance_seconds == sum(b * c for b, c, _ in trials)


def _record(name: str, status: str, *, billable: int, count: int = 3, itype: str = "ml.m5.xlarge") -> TrialRecord:
    job = _job(
        TrainingJobName=name,
        TrainingJobStatus=status,
        ResourceConfig={"InstanceType": itype, "InstanceCount": count},
        BillableTimeInSeconds=billable,
        TrainingTimeInSeconds=billable,
        TrainingStartTime=T0,
        TrainingEndTime=T0 + timedelta(seconds=billable),
    )
    return build_trial_record(
        job, job_key="xgb", region=REGION, objective_name="validation:auc", catalog=CATALOG, event_id="e", event_time=T0
    )


def _summary(name: str, status: str, auc: float | None) -> TrialSummary:
    data: dict[str, object] = {
        "TrainingJobName": name,
        "TrainingJobStatus": status,
        "TunedHyperParameters": {"eta": f"{auc}"},
    }
    if auc is not None:
        data["FinalHyperParameterTuningJobObjectiveMetric"] = {"MetricName": "validation:auc", "Value": auc}
    return TrialSummary.model_validate(data)


def _tuning(strategy: str = "Hyperband", status: str = "Completed", parallel: int = 4) -> TuningJob:
    return TuningJob.model_validate(
        {
            "HyperParameterTuningJobName": "xgb",
            "HyperParameterTuningJobStatus": status,
            "CreationTime": T0,
            "HyperParameterTuningEndTime": T0 + timedelta(hours=2),
            "HyperParameterTuningJobConfig": {
                "Strategy": strategy,
                "ResourceLimits": {"MaxNumberOfTrainingJobs": 30, "MaxParallelTrainingJobs": parallel},
                "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "validation:auc"},
            },
            "Tags": {"team": "churn", "owner": "ana@example.com"},
        }
    )


def _summarise(job: TuningJob, trials: list[TrialSummary], records: list[TrialRecord]):  # type: ignore[no-untyped-def]
    return summarise(job, trials, records, region=REGION, team=job.tags.get("team"), owner_tag="owner", now=T0)


def test_summary_best_trial_trials_by_status_and_timing() -> None:
    records = [
        _record("xgb-001-00000001", "Completed", billable=900),
        _record("xgb-002-00000002", "Completed", billable=900),
        _record("xgb-003-00000003", "Stopped", billable=100),
        _record("xgb-004-00000004", "Failed", billable=50),
        _record("xgb-005-00000005", "Stopped", billable=300),
    ]
    trials = [
        _summary("xgb-001-00000001", "Completed", 0.81),
        _summary("xgb-002-00000002", "Completed", 0.93),
        _summary("xgb-003-00000003", "Stopped", 0.70),
        _summary("xgb-004-00000004", "Failed", None),
        _summary("xgb-005-00000005", "Stopped", 0.75),
    ]
    summary = _summarise(_tuning(), trials, records)
    assert summary.best_training_job == "xgb-002-00000002"
    assert summary.best_hyperparameters == {"eta": "0.93"}
    assert summary.objective is not None and summary.objective.value == pytest.approx(0.93)
    assert summary.trials_by_status == {"Completed": 2, "Failed": 1, "Stopped": 2}
    assert summary.team == "churn" and summary.owner == "ana@example.com"
    # Early stopping: two Stopped trials counted as if billed 900 s like a full-length (median completed) trial.
    es = summary.cost.early_stopping
    assert es.trials_stopped_early == 2
    assert es.saved_billable_instance_seconds == (800 + 600) * 3
    assert es.billable_instance_seconds_without_early_stopping == summary.cost.billable_instance_seconds + 4200
    # Timing: SageMaker's list gave no CreationTime, so there is no full-trial wall time to estimate from
    # (tests/unit/test_early_stopping_and_timing.py holds the estimate's formula).
    assert summary.timing.estimate_without_early_stopping_seconds is None
    assert summary.timing.one_at_a_time_seconds is None
    assert summary.timing.wall_clock_seconds == 7200
    assert summary.unaccounted_trials == []


def test_minimize_objective_picks_the_lowest() -> None:
    job = _tuning().model_copy(
        update={
            "config": _tuning().config.model_copy(  # type: ignore[union-attr]
                update={
                    "hyper_parameter_tuning_job_objective": _tuning().objective.model_copy(  # type: ignore[union-attr]
                        update={"type": "Minimize"}
                    )
                }
            )
        }
    )
    trials = [_summary("a-001-00000001", "Completed", 0.3), _summary("a-002-00000002", "Completed", 0.1)]
    assert _summarise(job, trials, []).best_training_job == "a-002-00000002"


def test_no_early_stopping_credit_without_early_stopping_strategy() -> None:
    records = [_record("x-001-00000001", "Completed", billable=900), _record("x-002-00000002", "Stopped", billable=100)]
    summary = _summarise(_tuning(strategy="Bayesian"), [], records)
    assert summary.cost.early_stopping.trials_stopped_early == 0


def test_trials_without_records_are_reported_not_silently_free() -> None:
    records = [_record("xgb-001-00000001", "Completed", billable=900)]
    trials = [_summary("xgb-001-00000001", "Completed", 0.8), _summary("xgb-002-00000002", "Completed", 0.7)]
    summary = _summarise(_tuning(), trials, records)
    assert summary.unaccounted_trials == ["xgb-002-00000002"]
    assert any("no trial record" in w for w in summary.warnings)


def test_unpriced_and_partial_costs_are_flagged_in_summary_and_report() -> None:
    priced = _record("xgb-001-00000001", "Completed", billable=3600)
    unknown = _record("xgb-002-00000002", "Completed", billable=3600, itype="ml.x9.mega")
    partial = _summarise(_tuning(), [], [priced, unknown])
    assert partial.cost.status == "partial"
    assert partial.cost.cost_usd is None
    assert partial.cost.priced_cost_usd == Decimal("0.690000")
    report = summary_report(partial)
    assert "ml.x9.mega" in report.text and "partial" in report.text
    only_unknown = _summarise(_tuning(), [], [unknown])
    assert only_unknown.cost.status == "unpriced"
    assert "unpriced" in summary_report(only_unknown).subject
    assert "$0.00" not in summary_report(only_unknown).subject


def test_report_attributes_and_blocks() -> None:
    records = [_record("xgb-001-00000001", "Completed", billable=900)]
    summary = _summarise(_tuning(status="Stopped"), [_summary("xgb-001-00000001", "Completed", 0.9)], records)
    report = summary_report(summary)
    # the owner tag is an attribute too, for SNS filter policies
    assert report.attributes == {"status": "Stopped", "team": "churn", "outcome": "stopped", "owner": "ana@example.com"}
    assert len(report.subject) <= 100
    assert render_blocks(report)[0]["type"] == "header"
    assert "validation:auc" in report.text and "0.9" in report.text
    assert all(len(field["text"]) <= 2000 for field in render_blocks(report)[1]["fields"])
    assert len(render_blocks(report)[1]["fields"]) <= 10
