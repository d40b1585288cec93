"""StopHyperParameterTuningJob and StopTrainingJob semantics."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from governor_client.amt import AmtStandIn

from .builders import seed_job, training_job


def _tuning_status(sm: Any, name: str) -> str:
    return str(
        sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)["HyperParameterTuningJobStatus"]
    )


def _training_status(sm: Any, name: str) -> str:
    return str(sm.describe_training_job(TrainingJobName=name)["TrainingJobStatus"])


def test_stopping_a_tuning_job_stops_its_running_trials_on_the_next_advance(amt: AmtStandIn, sm: Any) -> None:
    # Given a tuning job with trials running
    sm.create_hyper_parameter_tuning_job(**seed_job())
    amt.advance(400)
    running = [n for n in amt.training_jobs_of("xgb-churn-hb") if _training_status(sm, n) == "InProgress"]
    finished_before = {n: _training_status(sm, n) for n in amt.training_jobs_of("xgb-churn-hb") if n not in running}
    assert running

    # When it is stopped
    sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-churn-hb")

    # Then it and its running trials are Stopping until the clock moves
    assert _tuning_status(sm, "xgb-churn-hb") == "Stopping"
    assert {_training_status(sm, n) for n in running} == {"Stopping"}
    launched = len(amt.training_jobs_of("xgb-churn-hb"))

    amt.advance(1)

    described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-churn-hb")
    assert described["HyperParameterTuningJobStatus"] == "Stopped"
    assert "HyperParameterTuningEndTime" in described
    assert {_training_status(sm, n) for n in running} == {"Stopped"}
    # Finished trials keep their status and nothing new is launched.
    assert {n: _training_status(sm, n) for n in finished_before} == finished_before
    amt.advance(3600)
    assert len(amt.training_jobs_of("xgb-churn-hb")) == launched
    assert described["TrainingJobStatusCounters"]["InProgress"] == 0
    assert described["TrainingJobStatusCounters"]["Stopped"] >= len(running)


def test_stopping_a_stopping_tuning_job_is_harmless_and_a_finished_one_is_rejected(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())
    sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-churn-hb")
    sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-churn-hb")  # still Stopping: accepted
    assert _tuning_status(sm, "xgb-churn-hb") == "Stopping"
    stopping_events = [e for e in amt.events if e["detail"].get("HyperParameterTuningJobStatus") == "Stopping"]
    assert len(stopping_events) == 1

    amt.advance(1)
    with pytest.raises(ClientError) as excinfo:
        sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-churn-hb")
    assert excinfo.value.response["Error"]["Code"] == "ValidationException"
    assert "Stopped" in excinfo.value.response["Error"]["Message"]


def test_stopping_a_completed_tuning_job_is_a_validation_error(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())
    amt.run_until_idle()

    with pytest.raises(ClientError) as excinfo:
        sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="xgb-churn-hb")

    assert excinfo.value.response["Error"]["Code"] == "ValidationException"
    assert _tuning_status(sm, "xgb-churn-hb") == "Completed"


def test_stopping_an_unknown_tuning_job_is_resource_not_found(amt: AmtStandIn, sm: Any) -> None:
    with pytest.raises(ClientError) as excinfo:
        sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName="no-such-job")
    assert excinfo.value.response["Error"]["Code"] == "ResourceNotFound"


def test_stop_training_job_goes_stopping_then_stopped(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("standalone-1"))
    amt.advance(300)
    assert _training_status(sm, "standalone-1") == "InProgress"

    sm.stop_training_job(TrainingJobName="standalone-1")
    assert sm.describe_training_job(TrainingJobName="standalone-1")["SecondaryStatus"] == "Stopping"
    sm.stop_training_job(TrainingJobName="standalone-1")  # idempotent while Stopping

    amt.advance(1)
    described = sm.describe_training_job(TrainingJobName="standalone-1")
    assert described["TrainingJobStatus"] == "Stopped"
    assert described["SecondaryStatus"] == "Stopped"
    assert described["TrainingEndTime"] > described["TrainingStartTime"]
    assert described["BillableTimeInSeconds"] == described["TrainingTimeInSeconds"]
    assert [t["Status"] for t in described["SecondaryStatusTransitions"]][-2:] == ["Stopping", "Stopped"]

    with pytest.raises(ClientError) as excinfo:
        sm.stop_training_job(TrainingJobName="standalone-1")
    assert excinfo.value.response["Error"]["Code"] == "ValidationException"


def test_stop_training_job_before_it_started_bills_nothing(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("early-stop"))
    sm.stop_training_job(TrainingJobName="early-stop")
    amt.advance(1)

    described = sm.describe_training_job(TrainingJobName="early-stop")
    assert described["TrainingJobStatus"] == "Stopped"
    assert "TrainingStartTime" not in described
    assert "BillableTimeInSeconds" not in described


def test_stop_unknown_training_job_is_resource_not_found(amt: AmtStandIn, sm: Any) -> None:
    with pytest.raises(ClientError) as excinfo:
        sm.stop_training_job(TrainingJobName="ghost")
    assert excinfo.value.response["Error"]["Code"] == "ResourceNotFound"


def test_stopping_one_trial_lets_the_tuning_job_launch_a_replacement(amt: AmtStandIn, sm: Any) -> None:
    sm.create_hyper_parameter_tuning_job(**seed_job())
    first = amt.training_jobs_of("xgb-churn-hb")[0]

    sm.stop_training_job(TrainingJobName=first)
    amt.advance(1)

    assert _training_status(sm, first) == "Stopped"
    assert len(amt.training_jobs_of("xgb-churn-hb")) == 5
    assert _tuning_status(sm, "xgb-churn-hb") == "InProgress"


def test_stop_delay_keeps_jobs_stopping_for_that_long(mocked_aws: None, sm: Any) -> None:
    with AmtStandIn(seed=1, stop_delay_s=90) as amt:
        sm.create_training_job(**training_job("slow-stop"))
        sm.stop_training_job(TrainingJobName="slow-stop")
        amt.advance(89)
        assert _training_status(sm, "slow-stop") == "Stopping"
        amt.advance(1)
        assert _training_status(sm, "slow-stop") == "Stopped"
