"""Early-stopping savings and the timing baseline of a job summary (issue 7, points 10 and 11).

Only trials that AMT's early stopping ended count as savings; trials cut short because the whole
tuning job was stopped (by its owner, the governor or ResourceLimits.MaxRuntimeInSeconds) are
counted apart. The reference is a full-length trial's billable time, so spot is not overstated.
The timing baseline is ceil(N / MaxParallel) x the wall time (creation -> end) of a full-length trial.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuning_governor.domain.reports import summary_report
from tuning_governor.domain.summary import summarise
from tuning_governor.models.records import JobSummary, TrialRecord
from tuning_governor.models.tuning_job import TrialSummary, TuningJob

REGION = "us-east-1"
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
M5_CLUSTER_USD_PER_HOUR = Decimal("0.69")  # 3 x ml.m5.xlarge at 0.23


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _record(
    index: int,
    status: str,
    *,
    ended_at: float,
    billable: int,
    training: int | None = None,
    count: int = 3,
    spot: bool = False,
) -> TrialRecord:
    """A finished trial as the governor records it (times in seconds after T0)."""
    hourly = M5_CLUSTER_USD_PER_HOUR * count / 3
    return TrialRecord(
        job_key="xgb",
        training_job_name=f"xgb-{index:03d}-0000000{index % 10}",
        status=status,
        region=REGION,
        instances={"ml.m5.xlarge": count},
        instance_count=count,
        spot=spot,
        training_seconds=training if training is not None else billable,
        billable_seconds=billable,
        billable_instance_seconds=billable * count,
        warm_pool_seconds=0,
        warm_pool_instance_seconds=0,
        hourly_usd=hourly,
        cost_usd=(hourly * billable / 3600).quantize(Decimal("0.000001")),
        warm_pool_cost_usd=Decimal(0),
        spot_savings_usd=Decimal(0),
        start_time=_at(ended_at - (training if training is not None else billable)),
        end_time=_at(ended_at),
        event_id=f"e{index}",
        event_time=_at(ended_at),
    )


def _trial(record: TrialRecord, *, created_at: float, auc: float = 0.8) -> TrialSummary:
    """SageMaker's list entry of the same trial: CreationTime is when AMT launched it."""
    return TrialSummary.model_validate(
        {
            "TrainingJobName": record.training_job_name,
            "TrainingJobStatus": record.status,
            "CreationTime": _at(created_at),
            "TrainingStartTime": record.start_time,
            "TrainingEndTime": record.end_time,
            "TunedHyperParameters": {"eta": str(auc)},
            "FinalHyperParameterTuningJobObjectiveMetric": {"MetricName": "validation:auc", "Value": auc},
        }
    )


def _tuning(
    *,
    strategy: str = "Hyperband",
    status: str = "Completed",
    ended_at: float = 3600,
    parallel: int = 4,
    early_stopping: str = "Off",
    max_runtime: int | None = None,
) -> TuningJob:
    limits: dict[str, int] = {"MaxNumberOfTrainingJobs": 30, "MaxParallelTrainingJobs": parallel}
    if max_runtime is not None:
        limits["MaxRuntimeInSeconds"] = max_runtime
    return TuningJob.model_validate(
        {
            "HyperParameterTuningJobName": "xgb",
            "HyperParameterTuningJobStatus": status,
            "CreationTime": T0,
            "HyperParameterTuningEndTime": _at(ended_at),
            "HyperParameterTuningJobConfig": {
                "Strategy": strategy,
                "ResourceLimits": limits,
                "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "validation:auc"},
                "TrainingJobEarlyStoppingType": early_stopping,
            },
            "Tags": {"team": "churn", "owner": "ana@example.com"},
        }
    )


def _summarise(
    job: TuningJob,
    records: list[TrialRecord],
    trials: list[TrialSummary] | None = None,
    *,
    stop_requested_at: datetime | None = None,
    stopping_at: datetime | None = None,
) -> JobSummary:
    return summarise(
        job,
        trials if trials is not None else [],
        records,
        region=REGION,
        team=None,
        owner_tag="owner",
        now=_at(7200),
        stop_requested_at=stop_requested_at,
        stopping_at=stopping_at,
    )


# -- point 10: which Stopped trials are early stops ----------------------------------------------------------
def _stopped_job_records() -> list[TrialRecord]:
    """Two full trials, two Hyperband stops well before the job stop at +1800 s, two trials cut by it."""
    return [
        _record(1, "Completed", ended_at=600, billable=500),
        _record(2, "Completed", ended_at=700, billable=500),
        _record(3, "Stopped", ended_at=400, billable=100),
        _record(4, "Stopped", ended_at=900, billable=200),
        _record(5, "Stopped", ended_at=1810, billable=300),  # running when the job stopped
        _record(6, "Stopped", ended_at=1830, billable=50),
    ]


def test_trials_cut_by_a_governor_stop_are_not_early_stopping_savings() -> None:
    # Given a Hyperband job the governor stopped at +1800 s
    job = _tuning(status="Stopped", ended_at=1900)
    # When it is summarised with the stop the store kept
    summary = _summarise(job, _stopped_job_records(), stop_requested_at=_at(1800))
    es = summary.cost.early_stopping
    # Then only the trials that ended before the stop are early stops; the two running at the stop are cut
    assert es.trials_stopped_early == 2
    assert es.trials_cut_by_job_stop == 2
    assert es.saved_billable_instance_seconds == (500 - 100) * 3 + (500 - 200) * 3
    assert es.billable_instance_seconds_without_early_stopping == summary.cost.billable_instance_seconds + 2100
    assert es.job_stopped_at == _at(1800)
    assert es.saved_usd == Decimal("0.134167")  # 700 s x 0.69 $/h


def test_an_owner_stop_is_separated_by_the_jobs_stopping_transition() -> None:
    # Given the owner stopped the job (no governor stop): the tuning job went Stopping at +1800 s
    job = _tuning(status="Stopped", ended_at=1900)
    summary = _summarise(job, _stopped_job_records(), stopping_at=_at(1800))
    es = summary.cost.early_stopping
    assert (es.trials_stopped_early, es.trials_cut_by_job_stop) == (2, 2)
    assert es.job_stopped_at == _at(1800)


def test_max_runtime_of_the_tuning_job_cuts_trials_at_its_deadline() -> None:
    # Given ResourceLimits.MaxRuntimeInSeconds = 1800: AMT stopped the job (and its trials) at +1800 s
    job = _tuning(status="Completed", ended_at=1900, max_runtime=1800)
    summary = _summarise(job, _stopped_job_records())
    es = summary.cost.early_stopping
    assert (es.trials_stopped_early, es.trials_cut_by_job_stop) == (2, 2)
    assert es.job_stopped_at == _at(1800)


def test_a_stopped_job_without_a_known_stop_time_falls_back_to_its_end_time() -> None:
    # Given a Stopped job whose Stopping transition was never seen: the trials that ended in the minutes
    # before the job's end are taken as cut by its stop (they cannot be told from early stops otherwise)
    job = _tuning(status="Stopped", ended_at=1900)
    summary = _summarise(job, _stopped_job_records())
    es = summary.cost.early_stopping
    assert (es.trials_stopped_early, es.trials_cut_by_job_stop) == (2, 2)
    assert "approximate" in es.method


def test_the_earliest_known_stop_wins() -> None:
    job = _tuning(status="Stopped", ended_at=1900, max_runtime=3000)
    summary = _summarise(job, _stopped_job_records(), stop_requested_at=_at(1800), stopping_at=_at(1805))
    assert summary.cost.early_stopping.job_stopped_at == _at(1800)


def test_without_early_stopping_a_stopped_trial_is_no_saving_but_a_job_stop_cut_is_still_counted() -> None:
    job = _tuning(strategy="Bayesian", status="Stopped", ended_at=1900)
    summary = _summarise(job, _stopped_job_records(), stop_requested_at=_at(1800))
    es = summary.cost.early_stopping
    assert es.trials_stopped_early == 0
    assert es.trials_cut_by_job_stop == 2
    assert es.saved_billable_instance_seconds == 0


def test_auto_early_stopping_counts_like_hyperband() -> None:
    job = _tuning(strategy="Bayesian", early_stopping="Auto", status="Completed", ended_at=1000)
    records = [r for r in _stopped_job_records() if r.end_time is not None and r.end_time <= _at(1000)]
    summary = _summarise(job, records)
    assert summary.cost.early_stopping.trials_stopped_early == 2
    assert summary.cost.early_stopping.trials_cut_by_job_stop == 0


def test_spot_savings_are_not_counted_as_early_stopping_savings() -> None:
    # Given a managed-spot Hyperband job: a full trial trains 1000 s but is billed 400 s (spot),
    # and a trial stopped early trained 200 s, billed 80 s
    job = _tuning(ended_at=3000)
    records = [
        _record(1, "Completed", ended_at=1100, billable=400, training=1000, spot=True),
        _record(2, "Stopped", ended_at=400, billable=80, training=200, spot=True),
    ]
    summary = _summarise(job, records)
    es = summary.cost.early_stopping
    # Then the saving compares billable with billable: (400 - 80) x 3, not (1000 - 80) x 3
    assert es.reference_billable_seconds == 400
    assert es.saved_billable_instance_seconds == 320 * 3
    assert es.billable_instance_seconds_without_early_stopping == 400 * 3 * 2


def test_a_spot_trial_stopped_early_with_only_on_demand_references_is_scaled_by_its_own_spot_rate() -> None:
    job = _tuning(ended_at=3000)
    records = [
        _record(1, "Completed", ended_at=1100, billable=1000),
        _record(2, "Stopped", ended_at=400, billable=80, training=200, spot=True),
    ]
    es = _summarise(job, records).cost.early_stopping
    # Its own billable / training ratio (0.4) applied to the on-demand full trial: 400 s billable in full
    assert es.saved_billable_instance_seconds == (400 - 80) * 3


def test_the_reference_is_a_typical_full_trial_not_the_longest() -> None:
    job = _tuning(ended_at=3000)
    records = [
        _record(1, "Completed", ended_at=600, billable=500),
        _record(2, "Completed", ended_at=700, billable=520),
        _record(3, "Completed", ended_at=2900, billable=2000),  # an outlier (a slow straggler)
        _record(4, "Stopped", ended_at=300, billable=100),
    ]
    es = _summarise(job, records).cost.early_stopping
    assert es.reference_billable_seconds == 520
    assert es.saved_billable_instance_seconds == (520 - 100) * 3


# -- point 11: the seed's table ----------------------------------------------------------------------------
def _seed_job() -> tuple[TuningJob, list[TrialRecord], list[TrialSummary]]:
    """The seed's figures: 30 Hyperband trials, 4 parallel, 3 x ml.m5.xlarge; a full trial is 3 min from
    creation to end (2 min start-up, 60 s billed); 24 trials stopped early after 10 s billed; the job took
    12 minutes."""
    records: list[TrialRecord] = []
    trials: list[TrialSummary] = []
    for i in range(30):
        created = 24.0 * i
        full = i % 5 == 4  # 6 full-length trials
        billable = 60 if full else 10
        end = created + 120 + billable
        record = _record(i + 1, "Completed" if full else "Stopped", ended_at=end, billable=billable)
        records.append(record)
        trials.append(_trial(record, created_at=created, auc=0.9 if full else 0.7))
    return _tuning(ended_at=720), records, trials


def test_the_seeds_table() -> None:
    job, records, trials = _seed_job()
    summary = _summarise(job, records, trials)
    cost, es, timing = summary.cost, summary.cost.early_stopping, summary.timing
    # 30 billable instance-minutes against 90 without early stopping
    assert cost.billable_instance_seconds == 30 * 60
    assert es.billable_instance_seconds_without_early_stopping == 90 * 60
    assert es.trials_stopped_early == 24 and es.trials_cut_by_job_stop == 0
    # 12 minutes of wall clock against ceil(30 / 4) = 8 rounds of a full 3-minute trial, 90 one at a time
    assert timing.wall_clock_seconds == 12 * 60
    assert timing.full_trial_seconds == 180
    assert timing.estimate_without_early_stopping_seconds == 8 * 180
    assert timing.one_at_a_time_seconds == 30 * 180
    assert timing.mean_trial_seconds == Decimal(120 + (6 * 60 + 24 * 10) / 30)


def test_the_estimate_without_early_stopping_is_unknown_without_trial_creation_times() -> None:
    job, records, _ = _seed_job()
    timing = _summarise(job, records, []).timing
    assert timing.estimate_without_early_stopping_seconds is None
    assert timing.one_at_a_time_seconds is None
    assert timing.wall_clock_seconds == 720


@pytest.mark.parametrize("n", [1, 4, 5, 30, 31])
def test_estimate_formula_for_any_trial_count(n: int) -> None:
    records = [_record(i + 1, "Completed", ended_at=300 + i, billable=100) for i in range(n)]
    trials = [_trial(r, created_at=float(i)) for i, r in enumerate(records)]
    timing = _summarise(_tuning(), records, trials).timing
    assert timing.full_trial_seconds == 300
    assert timing.estimate_without_early_stopping_seconds == -(-n // 4) * 300
    assert timing.one_at_a_time_seconds == n * 300


def test_the_report_uses_the_seeds_labels() -> None:
    job, records, trials = _seed_job()
    text = summary_report(_summarise(job, records, trials)).text
    assert "sequential" not in text.lower()
    assert "Wall clock vs without early stopping: 12m 00s vs ~24m 00s (one at a time ~1h 30m)" in text
    assert "24 trials stopped early" in text
    assert "30.0 billable instance-min vs ~90.0 without early stopping" in text


def test_the_report_names_trials_cut_by_a_job_stop() -> None:
    job = _tuning(status="Stopped", ended_at=1900)
    summary = _summarise(job, _stopped_job_records(), stop_requested_at=_at(1800))
    assert "2 cut short by the job's stop (not counted)" in summary_report(summary).text


# -- for any trials ------------------------------------------------------------------------------------------
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Completed", "Stopped", "Failed"]),
            st.integers(1, 4000),  # ended at, seconds after T0
            st.integers(1, 900),  # billable seconds
            st.integers(1, 4),  # instances
            st.booleans(),  # managed spot
        ),
        max_size=30,
    ),
    st.one_of(st.none(), st.integers(0, 4000)),
    st.sampled_from(["Hyperband", "Bayesian"]),
)
def test_every_stopped_trial_is_counted_once_and_savings_never_reduce_the_baseline(
    trials: list[tuple[str, int, int, int, bool]], stop_at: int | None, strategy: str
) -> None:
    records = [
        _record(
            i + 1, status, ended_at=end, billable=billable, training=billable * (2 if spot else 1), count=n, spot=spot
        )
        for i, (status, end, billable, n, spot) in enumerate(trials)
    ]
    job = _tuning(strategy=strategy, status="Stopped" if stop_at is not None else "Completed", ended_at=4100)
    es = _summarise(job, records, stop_requested_at=_at(stop_at) if stop_at is not None else None).cost.early_stopping
    stopped = sum(1 for status, *_ in trials if status == "Stopped")
    assert es.trials_stopped_early + es.trials_cut_by_job_stop <= stopped
    if strategy == "Hyperband":
        assert es.trials_stopped_early + es.trials_cut_by_job_stop == stopped
    assert es.saved_billable_instance_seconds >= 0
    total = sum(r.billable_instance_seconds for r in records)
    assert es.billable_instance_seconds_without_early_stopping == total + es.saved_billable_instance_seconds
    if stop_at is None:
        assert es.trials_cut_by_job_stop == 0
