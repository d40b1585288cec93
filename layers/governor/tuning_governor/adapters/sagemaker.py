"""SageMaker reads the governor needs, translated into domain models and domain errors."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from botocore.exceptions import ClientError
from pydantic import BaseModel, ValidationError

from tuning_governor.errors import JobNotFound, PlaceDenied, RejectedEvent, TransientError
from tuning_governor.models.limits import clean_tags, validation_problems
from tuning_governor.models.place import Place
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TrialSummary, TuningJob
from tuning_governor.ports.sagemaker import StopResult

if TYPE_CHECKING:
    from mypy_boto3_sagemaker import SageMakerClient

NOT_FOUND = frozenset({"ResourceNotFound", "ResourceNotFoundException"})
# DescribeTrainingJob answers an unknown name with ValidationException (moto, and AWS as reported).
NOT_FOUND_ON_DESCRIBE = NOT_FOUND | {"ValidationException"}
TRANSIENT = frozenset(
    {"ThrottlingException", "Throttling", "RequestLimitExceeded", "ServiceUnavailable", "InternalFailure"}
)
# AWS's common error for a call the caller's policy does not allow (AccessDenied: the query protocol's).
DENIED = frozenset({"AccessDeniedException", "AccessDenied"})
PAGE_SIZE = 100  # the API maximum: finalising N trials takes ceil(N / 100) list calls
STOP_ATTEMPTS = 4  # a throttled stop is retried here first, then by EventBridge (TransientError)


def _translate(exc: ClientError, name: str, not_found: frozenset[str], place: Place | None = None) -> Exception:
    code = exc.response.get("Error", {}).get("Code", "")
    if code in DENIED and place is not None:
        # A member's role refusing a call: the member is unmanaged until its role is fixed (never a
        # crash, never dropped); at home a denial is the stack's own bug and stays a plain ClientError.
        operation = exc.operation_name or name
        return PlaceDenied(place.account, place.region, f"{code} on {operation}")
    if code in not_found:
        return JobNotFound(f"{name}: {code}")
    if code in TRANSIENT:
        return TransientError(f"{name}: {code}")
    return exc


def _read[M: BaseModel](model: type[M], response: Any, what: str) -> M:
    """A response is input too: values the models refuse reject the event, they are not retried."""
    try:
        return model.model_validate(response)
    except ValidationError as exc:
        raise RejectedEvent(f"{what}: {validation_problems(exc)}") from None


class SageMakerGateway:
    """Reads and the one write (stop) the governor makes; ``permissions`` lists their IAM actions."""

    permissions: ClassVar[dict[str, str]] = {
        "describe_training_job": "sagemaker:DescribeTrainingJob",
        "describe_tuning_job": "sagemaker:DescribeHyperParameterTuningJob",
        "list_trials": "sagemaker:ListTrainingJobsForHyperParameterTuningJob",
        "list_tuning_jobs": "sagemaker:ListHyperParameterTuningJobs",
        "list_warm_pools": "sagemaker:ListTrainingJobs",
        "stop_tuning_job": "sagemaker:StopHyperParameterTuningJob",
        "list_tags": "sagemaker:ListTags",
    }
    fallbacks: ClassVar[dict[str, tuple[str, ...]]] = {
        # A stop SageMaker refuses (the job is no longer running) is explained by a Describe.
        "stop_tuning_job": ("describe_tuning_job",),
    }
    """The other calls a method may make on some path: a function granted the method needs them too."""

    def __init__(
        self, client: SageMakerClient, sleep: Callable[[float], None] = time.sleep, place: Place | None = None
    ) -> None:
        self._client = client
        self._sleep = sleep
        self.place = place
        """Where the client acts (None: the home place); every job it describes carries it."""

    def describe_training_job(self, name: str) -> TrainingJob:
        try:
            response: Any = self._client.describe_training_job(TrainingJobName=name)
        except ClientError as exc:
            raise _translate(exc, name, NOT_FOUND_ON_DESCRIBE, self.place) from exc
        return _read(TrainingJob, response, f"DescribeTrainingJob {name}").at(self.place)

    def describe_tuning_job(self, name: str) -> TuningJob:
        try:
            response: Any = self._client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        except ClientError as exc:
            raise _translate(exc, name, NOT_FOUND, self.place) from exc
        return _read(TuningJob, response, f"DescribeHyperParameterTuningJob {name}").at(self.place)

    def list_trials(self, tuning_job_name: str) -> list[TrialSummary]:
        """Every trial of a tuning job, 100 per call."""
        paginator = self._client.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job")
        trials: list[TrialSummary] = []
        try:
            for page in paginator.paginate(
                HyperParameterTuningJobName=tuning_job_name, PaginationConfig={"PageSize": PAGE_SIZE}
            ):
                trials.extend(
                    _read(TrialSummary, item, f"ListTrainingJobsForHyperParameterTuningJob {tuning_job_name}")
                    for item in page["TrainingJobSummaries"]
                )
        except ClientError as exc:
            raise _translate(exc, tuning_job_name, NOT_FOUND, self.place) from exc
        return trials

    def list_tuning_jobs(self, status: str) -> list[dict[str, Any]]:
        """Summaries of every tuning job in ``status`` (100 per call)."""
        paginator = self._client.get_paginator("list_hyper_parameter_tuning_jobs")
        out: list[dict[str, Any]] = []
        try:
            pages: Any = paginator.paginate(StatusEquals=status, PaginationConfig={"PageSize": PAGE_SIZE})  # type: ignore[arg-type]
            for page in pages:
                out.extend(page["HyperParameterTuningJobSummaries"])
        except ClientError as exc:
            raise _translate(exc, "list tuning jobs", frozenset(), self.place) from exc
        return out

    def list_warm_pools(self, modified_after: datetime) -> list[dict[str, Any]]:
        """Training jobs modified after ``modified_after`` whose warm pool is Available (it holds
        instances), 100 per call: ceil(jobs modified since then / 100) calls, whatever the account's
        history (the warm-pool filter applies to each page, after MaxResults; the time bound before)."""
        paginator = self._client.get_paginator("list_training_jobs")
        out: list[dict[str, Any]] = []
        try:
            pages = paginator.paginate(
                WarmPoolStatusEquals="Available",
                LastModifiedTimeAfter=modified_after,
                PaginationConfig={"PageSize": PAGE_SIZE},
            )
            for page in pages:
                # Filter again: the filter applies after MaxResults (see ListTrainingJobs docs).
                summaries: list[Any] = list(page["TrainingJobSummaries"])
                out.extend(s for s in summaries if s.get("WarmPoolStatus", {}).get("Status") == "Available")
        except ClientError as exc:
            raise _translate(exc, "list training jobs", frozenset(), self.place) from exc
        return out

    def stop_tuning_job(self, name: str) -> StopResult:
        """Ask SageMaker to stop a tuning job. Idempotent: a job already stopping or ended counts as done."""
        for attempt in range(STOP_ATTEMPTS):
            try:
                self._client.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code in NOT_FOUND:
                    return "not-found"
                if code in TRANSIENT:
                    if attempt + 1 < STOP_ATTEMPTS:
                        self._sleep(0.2 * 2**attempt)
                        continue
                    raise TransientError(f"{name}: stop throttled {STOP_ATTEMPTS} times") from exc
                if code == "ValidationException":
                    # Stopping a job that is no longer running is refused; check what it is now.
                    status = self.describe_tuning_job(name).status
                    if status == "Stopping":
                        return "already-stopping"
                    if status in TUNING_TERMINAL:
                        return "already-ended"
                if code in DENIED and self.place is not None:
                    raise _translate(exc, name, NOT_FOUND, self.place) from exc
                raise
            return "stop-requested"
        raise TransientError(f"{name}: stop not accepted")  # unreachable: the loop returns or raises

    def list_tags(self, arn: str) -> dict[str, str]:
        """A resource's tags as a flat map (Describe responses carry none; events do).

        Tags that break AWS's tagging rules are dropped with a warning, as in events.
        """
        pairs: list[Any] = []
        try:
            for page in self._client.get_paginator("list_tags").paginate(ResourceArn=arn):
                pairs.extend(page.get("Tags", []))
        except ClientError as exc:
            # A resource ListTags does not know is a ValidationException (as DescribeTrainingJob's is):
            # retrying cannot make it appear.
            raise _translate(exc, arn, NOT_FOUND_ON_DESCRIBE, self.place) from exc
        return clean_tags(pairs, source="ListTags")
