"""Installing into moto is reversible and isolated."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto.sagemaker.models import SageMakerModelBackend, sagemaker_backends
from moto.sagemaker.responses import SageMakerResponse
from moto.servicequotas.models import ServiceQuotasBackend, servicequotas_backends

from governor_client.amt import AmtStandIn

from .builders import seed_job, training_job


def test_uninstall_restores_moto_exactly(mocked_aws: None, sm: Any) -> None:
    with AmtStandIn(seed=1) as amt:
        sm.create_hyper_parameter_tuning_job(**seed_job("while-installed"))
        assert amt.installed
        assert hasattr(SageMakerResponse, "stop_training_job")

    assert not amt.installed
    assert sagemaker_backends.backend is SageMakerModelBackend
    assert servicequotas_backends.backend is ServiceQuotasBackend
    assert not hasattr(SageMakerResponse, "stop_training_job")
    with pytest.raises(NotImplementedError):
        sm.stop_training_job(TrainingJobName="anything")
    # The job created while installed keeps its last state; nothing advances it any more.
    status = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="while-installed")
    assert status["HyperParameterTuningJobStatus"] == "InProgress"
    assert type(sagemaker_backends["123456789012"]["us-east-1"]) is SageMakerModelBackend


def test_moto_is_static_again_after_uninstall(mocked_aws: None, sm: Any) -> None:
    with AmtStandIn(seed=1):
        pass
    sm.create_hyper_parameter_tuning_job(**seed_job("plain-moto"))
    status = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="plain-moto")
    assert status["HyperParameterTuningJobStatus"] == "Completed"  # moto's own fake


def test_installing_after_sagemaker_was_used_keeps_existing_data(mocked_aws: None, sm: Any) -> None:
    sm.create_training_job(**training_job("before"))  # plain moto: Completed at once
    with AmtStandIn(seed=1) as amt:
        assert sm.describe_training_job(TrainingJobName="before")["TrainingJobStatus"] == "Completed"
        sm.create_training_job(**training_job("after"))
        assert sm.describe_training_job(TrainingJobName="after")["TrainingJobStatus"] == "InProgress"
        amt.run_until_idle()
        assert sm.describe_training_job(TrainingJobName="after")["TrainingJobStatus"] == "Completed"
    assert type(sagemaker_backends["123456789012"]["us-east-1"]) is SageMakerModelBackend


def test_only_one_stand_in_at_a_time(mocked_aws: None) -> None:
    with AmtStandIn(seed=1), pytest.raises(RuntimeError):
        AmtStandIn(seed=2).install()
    with AmtStandIn(seed=3) as again:  # the failed attempt left nothing behind
        assert again.installed


def test_other_regions_are_simulated_too(amt: AmtStandIn) -> None:
    west = boto3.client("sagemaker", region_name="us-west-2")
    west.create_training_job(**training_job("west-job"))
    assert west.describe_training_job(TrainingJobName="west-job")["TrainingJobStatus"] == "InProgress"
    amt.run_until_idle()
    job = west.describe_training_job(TrainingJobName="west-job")
    assert job["TrainingJobStatus"] == "Completed"
    assert job["TrainingJobArn"].startswith("arn:aws:sagemaker:us-west-2:")
    assert {e["region"] for e in amt.events} == {"us-west-2"}


def test_moving_the_clock_directly_is_caught_up_on_the_next_call(amt: AmtStandIn, sm: Any) -> None:
    sm.create_training_job(**training_job("lazy"))
    amt.clock.advance(24 * 3600)
    assert sm.describe_training_job(TrainingJobName="lazy")["TrainingJobStatus"] == "Completed"
    times = [e["time"] for e in amt.events]
    assert times == sorted(times)
