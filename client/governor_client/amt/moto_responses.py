"""Response handlers added to (or replacing) moto's ``SageMakerResponse`` while the stand-in is installed.

StopHyperParameterTuningJob, StopTrainingJob and ListTrainingJobsForHyperParameterTuningJob, which moto
lacks, and a ListTrainingJobs that filters as AWS does. Each validates its request as AWS does and
calls :class:`~.governed_backend.GovernedSageMakerBackend`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker.exceptions import AWSValidationException
from moto.sagemaker.responses import SageMakerResponse

from .governed_backend import GovernedSageMakerBackend
from .listing import TrainingJobQuery, aware

TRAINING_JOB_STATUSES = ("InProgress", "Completed", "Failed", "Stopping", "Stopped")
TRAINING_JOB_SORT_KEYS = ("Name", "CreationTime", "Status", "FinalObjectiveMetricValue")
TRAINING_JOB_LIST_SORT_KEYS = ("Name", "CreationTime", "Status")
WARM_POOL_STATUSES = ("Available", "Terminated", "Reused", "InUse")
SORT_ORDERS = ("Ascending", "Descending")


def _governed_backend(response: SageMakerResponse) -> GovernedSageMakerBackend:
    backend = response.sagemaker_backend
    if not isinstance(backend, GovernedSageMakerBackend):
        raise NotImplementedError("the AMT stand-in is not installed for this backend")
    return backend


def _handle_stop_hyper_parameter_tuning_job(self: SageMakerResponse) -> ActionResult:
    _governed_backend(self).stop_hyper_parameter_tuning_job(self._get_param("HyperParameterTuningJobName"))
    return EmptyResult()


def _handle_stop_training_job(self: SageMakerResponse) -> ActionResult:
    _governed_backend(self).stop_training_job(self._get_param("TrainingJobName"))
    return EmptyResult()


def _handle_list_training_jobs_for_hyper_parameter_tuning_job(self: SageMakerResponse) -> ActionResult:
    max_results = self._get_param("MaxResults")
    sort_by = self._get_param("SortBy")
    sort_order = self._get_param("SortOrder")
    status_equals = self._get_param("StatusEquals")
    errors = _max_results_errors(max_results)
    if sort_by is not None and sort_by not in TRAINING_JOB_SORT_KEYS:
        errors.append(_enum_error(sort_by, "sortBy", TRAINING_JOB_SORT_KEYS))
    if sort_order is not None and sort_order not in SORT_ORDERS:
        errors.append(_enum_error(sort_order, "sortOrder", SORT_ORDERS))
    if status_equals is not None and status_equals not in TRAINING_JOB_STATUSES:
        errors.append(_enum_error(status_equals, "statusEquals", TRAINING_JOB_STATUSES))
    _raise_if_any(errors)
    summaries, token = _governed_backend(self).list_training_jobs_for_hyper_parameter_tuning_job(
        hyper_parameter_tuning_job_name=self._get_param("HyperParameterTuningJobName"),
        next_token=self._get_param("NextToken"),
        max_results=int(max_results) if max_results is not None else None,
        sort_by=sort_by,
        sort_order=sort_order,
        status_equals=status_equals,
    )
    return _summaries_result(summaries, token)


def _handle_list_training_jobs(self: SageMakerResponse) -> ActionResult:
    """ListTrainingJobs with AWS's filters: moto pages before filtering by name and time, compares a
    request's epoch-seconds timestamps with datetimes, and ignores WarmPoolStatusEquals."""
    max_results = self._get_param("MaxResults")
    sort_by = self._get_param("SortBy") or "CreationTime"
    sort_order = self._get_param("SortOrder") or "Ascending"
    status_equals = self._get_param("StatusEquals")
    warm_pool_status = self._get_param("WarmPoolStatusEquals")
    errors = _max_results_errors(max_results)
    if sort_by not in TRAINING_JOB_LIST_SORT_KEYS:
        errors.append(_enum_error(sort_by, "sortBy", TRAINING_JOB_LIST_SORT_KEYS))
    if sort_order not in SORT_ORDERS:
        errors.append(_enum_error(sort_order, "sortOrder", SORT_ORDERS))
    if status_equals is not None and status_equals not in TRAINING_JOB_STATUSES:
        errors.append(_enum_error(status_equals, "statusEquals", TRAINING_JOB_STATUSES))
    if warm_pool_status is not None and warm_pool_status not in WARM_POOL_STATUSES:
        errors.append(_enum_error(warm_pool_status, "warmPoolStatusEquals", WARM_POOL_STATUSES))
    _raise_if_any(errors)
    query = TrainingJobQuery(
        max_results=int(max_results) if max_results is not None else 10,
        next_token=self._get_param("NextToken"),
        creation_time_after=_request_time(self._get_param("CreationTimeAfter")),
        creation_time_before=_request_time(self._get_param("CreationTimeBefore")),
        last_modified_time_after=_request_time(self._get_param("LastModifiedTimeAfter")),
        last_modified_time_before=_request_time(self._get_param("LastModifiedTimeBefore")),
        name_contains=self._get_param("NameContains"),
        status_equals=status_equals,
        warm_pool_status_equals=warm_pool_status,
        sort_by=sort_by,
        sort_order=sort_order,
    )
    summaries, token = _governed_backend(self).list_training_jobs_page(query)
    return _summaries_result(summaries, token)


def _request_time(value: Any) -> datetime | None:
    """A JSON-protocol timestamp as boto3 sends it (epoch seconds), or an ISO-8601 string."""
    if value is None:
        return None
    if isinstance(value, int | float) or str(value).replace(".", "", 1).isdigit():
        return datetime.fromtimestamp(float(value), tz=UTC)
    return aware(value)


def _enum_error(value: str, attribute: str, allowed: tuple[str, ...]) -> str:
    return (
        f"Value '{value}' at '{attribute}' failed to satisfy constraint: "
        f"Member must satisfy enum value set: [{', '.join(allowed)}]"
    )


def _max_results_errors(max_results: Any) -> list[str]:
    if max_results is not None and not 1 <= int(max_results) <= 100:
        bound = "less than or equal to 100" if int(max_results) > 100 else "greater than or equal to 1"
        return [f"Value '{max_results}' at 'maxResults' failed to satisfy constraint: Member must have value {bound}"]
    return []


def _raise_if_any(errors: list[str]) -> None:
    if errors:
        noun = "error" if len(errors) == 1 else "errors"
        raise AWSValidationException(f"{len(errors)} validation {noun} detected: {'; '.join(errors)}")


def _summaries_result(summaries: list[dict[str, Any]], token: str | None) -> ActionResult:
    result: dict[str, Any] = {"TrainingJobSummaries": summaries}
    if token:
        result["NextToken"] = token
    return ActionResult(result)


HANDLERS: dict[str, Callable[[SageMakerResponse], ActionResult]] = {
    "list_training_jobs": _handle_list_training_jobs,
    "stop_hyper_parameter_tuning_job": _handle_stop_hyper_parameter_tuning_job,
    "stop_training_job": _handle_stop_training_job,
    "list_training_jobs_for_hyper_parameter_tuning_job": _handle_list_training_jobs_for_hyper_parameter_tuning_job,
}
