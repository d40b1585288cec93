"""EventSourcedSageMaker: SageMaker's answers reconstructed from events, as the governor's calls see them."""

from __future__ import annotations

import copy
import inspect
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from governor_client.replay import EventSourcedSageMaker, parse_line
from tests.conftest import load_event
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.errors import JobNotFound, RejectedEvent

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
JOB = "xgb-churn-hb-20261130"


def observe(sagemaker: EventSourcedSageMaker, *events: dict[str, Any]) -> None:
    for event in events:
        raw, parsed = parse_line(json.dumps(event))
        sagemaker.observe(parsed, raw["detail"])


def later(event: dict[str, Any], seconds: int, **detail: Any) -> dict[str, Any]:
    """A copy of ``event`` modified ``seconds`` after it, with ``detail`` fields replaced."""
    out = copy.deepcopy(event)
    out["detail"]["LastModifiedTime"] = int(out["detail"]["LastModifiedTime"]) + seconds * 1000
    out["detail"].update(detail)
    return out


@pytest.fixture
def sagemaker() -> EventSourcedSageMaker:
    return EventSourcedSageMaker(clock=lambda: NOW)


def test_every_gateway_call_is_answered_from_events_never_from_a_client() -> None:
    # Each SageMaker call the governor may make (its IAM map) is overridden, with the same signature.
    for method in SageMakerGateway.permissions:
        ours = getattr(EventSourcedSageMaker, method)
        assert ours is not getattr(SageMakerGateway, method), method
        assert inspect.signature(ours) == inspect.signature(getattr(SageMakerGateway, method)), method


def test_describe_answers_with_the_latest_state_without_tags(sagemaker: EventSourcedSageMaker) -> None:
    completed = load_event("training-completed")
    observe(sagemaker, completed)
    described = sagemaker.describe_training_job("xgb-churn-hb-20261130-017-0753ec82")
    assert (described.status, described.billable_time_in_seconds, described.tags) == ("Completed", 197, {})
    assert sagemaker.list_tags(completed["detail"]["TrainingJobArn"]) == completed["detail"]["Tags"]


def test_an_older_or_non_terminal_event_never_replaces_a_terminal_state(sagemaker: EventSourcedSageMaker) -> None:
    completed = load_event("tuning-completed")
    in_progress = load_event("tuning-inprogress")  # modified earlier
    late_in_progress = later(completed, 60, HyperParameterTuningJobStatus="InProgress")
    observe(sagemaker, completed, in_progress, late_in_progress, load_event("tuning-deleting"))
    assert sagemaker.describe_tuning_job(JOB).status == "Completed"
    # A newer terminal state does replace it
    observe(sagemaker, later(completed, 120, HyperParameterTuningJobStatus="Stopped"))
    assert sagemaker.describe_tuning_job(JOB).status == "Stopped"


def test_a_newer_event_replaces_the_state_whatever_the_line_order(sagemaker: EventSourcedSageMaker) -> None:
    observe(sagemaker, load_event("tuning-stopping"), load_event("tuning-inprogress"))
    assert sagemaker.describe_tuning_job(JOB).status == "Stopping"


def test_trials_list_tuned_hyperparameters_objective_and_status(sagemaker: EventSourcedSageMaker) -> None:
    observe(
        sagemaker,
        load_event("tuning-inprogress"),
        load_event("training-completed"),
        load_event("training-failed"),
        load_event("training-inprogress"),
        load_event("training-standalone-inprogress"),  # not a trial of the job
    )
    listed = sagemaker.list_trials(JOB)
    assert [t.training_job_name.split("-")[-2] for t in listed] == ["003", "011", "017"]  # by name
    trials = {t.training_job_name: t for t in listed}
    best = trials["xgb-churn-hb-20261130-017-0753ec82"]
    # Tuned = named in ParameterRanges; the static ones (num_round, objective...) are not.
    assert set(best.tuned_hyper_parameters) == {"alpha", "eta", "max_depth", "min_child_weight", "subsample"}
    assert best.tuned_hyper_parameters["eta"] == "0.11851264970021547"
    metric = best.final_hyper_parameter_tuning_job_objective_metric
    assert metric is not None
    assert (metric.metric_name, metric.value, best.objective_status) == ("validation:auc", 0.934712, "Succeeded")
    failed = trials["xgb-churn-hb-20261130-003-9b412396"]
    assert (failed.training_job_status, failed.objective_status) == ("Failed", "Failed")
    assert failed.final_hyper_parameter_tuning_job_objective_metric is None
    assert trials["xgb-churn-hb-20261130-011-082ec244"].objective_status == "Pending"


def test_stop_is_recorded_once_and_refused_for_ended_jobs(sagemaker: EventSourcedSageMaker) -> None:
    assert sagemaker.stop_tuning_job(JOB) == "not-found"
    observe(sagemaker, load_event("tuning-inprogress"))
    assert sagemaker.stop_tuning_job(JOB) == "stop-requested"
    assert sagemaker.stop_tuning_job(JOB) == "already-stopping"
    assert [(s.job, s.at) for s in sagemaker.stops] == [(JOB, NOW)]
    other = EventSourcedSageMaker(clock=lambda: NOW)
    observe(other, load_event("tuning-completed"))
    assert other.stop_tuning_job(JOB) == "already-ended"
    assert other.stops == []


def test_running_jobs_and_available_warm_pools_are_listed(sagemaker: EventSourcedSageMaker) -> None:
    pool = load_event("training-warm-pool-completed")
    available = later(pool, 0, WarmPoolStatus={"Status": "Available"})
    observe(sagemaker, load_event("tuning-inprogress"), load_event("tuning-multi-definition-inprogress"), available)
    names = {j["HyperParameterTuningJobName"] for j in sagemaker.list_tuning_jobs("InProgress")}
    assert names == {JOB, "Churn-MultiDef-20261130"}
    modified = datetime.fromtimestamp(int(available["detail"]["LastModifiedTime"]) / 1000, tz=UTC)
    listed = sagemaker.list_warm_pools(modified_after=modified - timedelta(seconds=1))
    assert [p["TrainingJobName"] for p in listed] == [pool["detail"]["TrainingJobName"]]
    # A pool whose job has not changed since the bound is not listed, as with LastModifiedTimeAfter
    assert sagemaker.list_warm_pools(modified_after=modified) == []
    observe(sagemaker, later(pool, 60))  # Terminated
    assert sagemaker.list_warm_pools(modified_after=modified - timedelta(seconds=1)) == []


def test_unknown_jobs_are_not_found(sagemaker: EventSourcedSageMaker) -> None:
    with pytest.raises(JobNotFound):
        sagemaker.describe_training_job("nope")
    with pytest.raises(JobNotFound):
        sagemaker.describe_tuning_job("nope")
    with pytest.raises(JobNotFound):
        sagemaker.list_tags("arn:aws:sagemaker:us-east-1:123456789012:training-job/nope")


def test_jobs_are_known_by_their_own_events_or_their_trials(sagemaker: EventSourcedSageMaker) -> None:
    observe(
        sagemaker, load_event("training-instance-groups-completed"), load_event("tuning-multi-definition-inprogress")
    )
    assert sagemaker.job_keys() == ["pt-churn-hetero-20261130", "churn-multidef-20261130"]
    assert sagemaker.job_name("churn-multidef-20261130") == "Churn-MultiDef-20261130"
    assert sagemaker.job_name("pt-churn-hetero-20261130") == "pt-churn-hetero-20261130"
    assert sagemaker.tuning_job("pt-churn-hetero-20261130") is None


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{", "not valid JSON"),
        ("null", "null, not an event object"),
        ("12", "a number, not an event object"),
        ('{"source": "aws.sagemaker", "detail-type": 3}', "detail-type 3 is not"),
        ('{"detail-type": "SageMaker Training Job State Change"}', "source null is not aws.sagemaker"),
    ],
)
def test_lines_that_are_not_events_say_why(line: str, reason: str) -> None:
    with pytest.raises(RejectedEvent) as rejected:
        parse_line(line)
    assert reason in rejected.value.reason


def test_a_long_reason_is_cut_to_one_short_line() -> None:
    event = load_event("training-completed")
    event["detail"]["TrainingJobStatus"] = None
    event["detail"]["TrainingJobName"] = None
    event["detail"]["CreationTime"] = "x" * 2000
    with pytest.raises(RejectedEvent) as rejected:
        parse_line(json.dumps(event))
    assert len(rejected.value.reason) <= 300
    assert "\n" not in rejected.value.reason
    assert "detail.TrainingJobName" in rejected.value.reason


def test_state_times_fall_back_to_the_envelope(sagemaker: EventSourcedSageMaker) -> None:
    event = load_event("tuning-inprogress")
    del event["detail"]["LastModifiedTime"]
    newer = copy.deepcopy(event)
    newer["time"] = (datetime(2026, 11, 30, 9, 28, 42, tzinfo=UTC) + timedelta(minutes=5)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    newer["detail"]["HyperParameterTuningJobStatus"] = "Stopping"
    observe(sagemaker, newer, event)
    assert sagemaker.describe_tuning_job(JOB).status == "Stopping"
