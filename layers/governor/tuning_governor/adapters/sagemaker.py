"""SageMaker reads the governor needs, translated into domain models and domain errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from tuning_governor.errors import JobNotFound, TransientError
from tuning_governor.models.sagemaker import TrainingJob, TrialSummary, TuningJob

if TYPE_CHECKING:
    from mypy_boto3_sagemaker import SageMakerClient

NOT_FOUND = frozenset({"ResourceNotFound", "ResourceNotFoundException"})
# DescribeTrainingJob answers an unknown name with ValidationException (moto, and AWS as reported).
NOT_FOUND_ON_DESCRIBE = NOT_FOUND | {"ValidationException"}
TRANSIENT = frozenset(
    {"ThrottlingException", "Throttling", "RequestLimitExceeded", "ServiceUnavailable", "InternalFailure"}
)
PAGE_SIZE = 100  # the API maximum: finalising N trials takes ceil(N / 100) list calls


def _translate(exc: ClientError, name: str, not_found: frozenset[str]) -> Exception:
    code = exc.response.get("Error", {}).get("Code", "")
    if code in not_found:
        return JobNotFound(f"{name}: {code}")
    if code in TRANSIENT:
        return TransientError(f"{name}: {code}")
    return exc


class SageMakerGateway:
    def __init__(self, client: SageMakerClient) -> None:
        self._client = client

    def describe_training_job(self, name: str) -> TrainingJob:
        try:
            response: Any = self._client.describe_training_job(TrainingJobName=name)
        except ClientError as exc:
            raise _translate(exc, name, NOT_FOUND_ON_DESCRIBE) from exc
        return TrainingJob.model_validate(response)

    def describe_tuning_job(self, name: str) -> TuningJob:
        try:
            response: Any = self._client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        except ClientError as exc:
            raise _translate(exc, name, NOT_FOUND) from exc
        return TuningJob.model_validate(response)

    def list_trials(self, tuning_job_name: str) -> list[TrialSummary]:
        """Every trial of a tuning job, 100 per call."""
        paginator = self._client.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job")
        trials: list[TrialSummary] = []
        try:
            for page in paginator.paginate(
                HyperParameterTuningJobName=tuning_job_name, PaginationConfig={"PageSize": PAGE_SIZE}
            ):
                trials.extend(TrialSummary.model_validate(item) for item in page["TrainingJobSummaries"])
        except ClientError as exc:
            raise _translate(exc, tuning_job_name, NOT_FOUND) from exc
        return trials
