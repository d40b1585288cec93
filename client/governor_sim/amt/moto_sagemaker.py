"""moto's SageMaker backend, extended with the simulation, plus the response handlers moto lacks.

Installation swaps the backend class that ``moto.sagemaker.models.sagemaker_backends`` instantiates and
adds handlers for StopHyperParameterTuningJob, StopTrainingJob and
ListTrainingJobsForHyperParameterTuningJob to ``SageMakerResponse``, and replaces its ListTrainingJobs
handler with one that filters as AWS does — so plain ``boto3.client("sagemaker")``
calls under ``mock_aws()`` reach the simulation. Everything is undone by the returned callable.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import Any, ClassVar, cast, override

from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker.exceptions import AWSValidationException, ResourceNotFound
from moto.sagemaker.models import FakeTrainingJob, SageMakerModelBackend, sagemaker_backends
from moto.sagemaker.responses import SageMakerResponse

from ._patching import Patches
from .engine import SimulationEngine
from .jobs import SimTrainingJob, SimTuningJob

TRAINING_JOB_STATUSES = ("InProgress", "Completed", "Failed", "Stopping", "Stopped")
TRAINING_JOB_SORT_KEYS = ("Name", "CreationTime", "Status", "FinalObjectiveMetricValue")
TRAINING_JOB_LIST_SORT_KEYS = ("Name", "CreationTime", "Status")
WARM_POOL_STATUSES = ("Available", "Terminated", "Reused", "InUse")
SORT_ORDERS = ("Ascending", "Descending")


class GovernedSageMakerBackend(SageMakerModelBackend):
    """moto's SageMaker backend whose tuning and training jobs run on the stand-in's engine.

    With no engine installed (after uninstall) creates fall back to moto's static behaviour; jobs created
    while installed keep their last state.
    """

    engine: ClassVar[SimulationEngine | None] = None

    @property
    def _url_module(self) -> ModuleType:
        # moto derives the URL module from the backend's module name; ours lives outside moto.
        return importlib.import_module("moto.sagemaker.urls")

    def _catch_up(self) -> None:
        if self.engine is not None:
            self.engine.catch_up()

    # -- training jobs -----------------------------------------------------------------------------------

    @override
    def create_training_job(
        self,
        training_job_name: str,
        hyper_parameters: dict[str, str],
        algorithm_specification: dict[str, Any],
        role_arn: str,
        input_data_config: list[dict[str, Any]],
        output_data_config: dict[str, str],
        resource_config: dict[str, Any],
        vpc_config: dict[str, list[str]],
        stopping_condition: dict[str, int],
        tags: list[dict[str, str]],
        enable_network_isolation: bool,
        enable_inter_container_traffic_encryption: bool,
        enable_managed_spot_training: bool,
        checkpoint_config: dict[str, str],
        debug_hook_config: dict[str, Any],
        debug_rule_configurations: list[dict[str, Any]],
        tensor_board_output_config: dict[str, str],
        experiment_config: dict[str, str],
    ) -> FakeTrainingJob:
        if self.engine is None:
            return super().create_training_job(
                training_job_name,
                hyper_parameters,
                algorithm_specification,
                role_arn,
                input_data_config,
                output_data_config,
                resource_config,
                vpc_config,
                stopping_condition,
                tags,
                enable_network_isolation,
                enable_inter_container_traffic_encryption,
                enable_managed_spot_training,
                checkpoint_config,
                debug_hook_config,
                debug_rule_configurations,
                tensor_board_output_config,
                experiment_config,
            )
        self.engine.catch_up()
        request = {
            "TrainingJobName": training_job_name,
            "HyperParameters": hyper_parameters,
            "AlgorithmSpecification": algorithm_specification,
            "RoleArn": role_arn,
            "InputDataConfig": input_data_config,
            "OutputDataConfig": output_data_config,
            "ResourceConfig": resource_config,
            "VpcConfig": vpc_config,
            "StoppingCondition": stopping_condition,
            "Tags": tags,
            "EnableNetworkIsolation": enable_network_isolation,
            "EnableInterContainerTrafficEncryption": enable_inter_container_traffic_encryption,
            "EnableManagedSpotTraining": enable_managed_spot_training,
            "CheckpointConfig": checkpoint_config,
            "DebugHookConfig": debug_hook_config,
            "ExperimentConfig": experiment_config,
        }
        return self.engine.create_training_job(self, {k: v for k, v in request.items() if v is not None})

    def describe_training_job(self, training_job_name: str) -> dict[str, Any]:
        self._catch_up()
        return super().describe_training_job(training_job_name)

    def list_training_jobs_page(self, query: TrainingJobQuery) -> tuple[list[dict[str, Any]], str | None]:
        """One page of ListTrainingJobs as AWS pages it, and the token of the next page.

        The name and time filters select the jobs that are paged through; ``StatusEquals`` and
        ``WarmPoolStatusEquals`` filter each page after ``MaxResults`` jobs were taken (AWS documents this
        for StatusEquals; for WarmPoolStatusEquals it is [inferred], the same kind of filter), so a
        filtered page may be short, or empty with a token.
        """
        self._catch_up()
        jobs = [job for job in self.training_jobs.values() if query.selects(job)]
        jobs.sort(key=query.sort_key, reverse=query.sort_order == "Descending")
        offset = _decode_token(query.next_token) if query.next_token else 0
        page = jobs[offset : offset + query.max_results]
        token = _encode_token(offset + query.max_results) if offset + query.max_results < len(jobs) else None
        return [_training_summary(job) for job in page if query.keeps(job)], token

    def stop_training_job(self, training_job_name: str) -> None:
        """StopTrainingJob (see :meth:`SimulationEngine.stop_training_job`)."""
        self._catch_up()
        job = self.training_jobs.get(training_job_name)
        if job is None:
            raise ResourceNotFound(message=f"Requested resource not found: training job '{training_job_name}'.")
        if not isinstance(job, SimTrainingJob) or self.engine is None:
            raise NotImplementedError("StopTrainingJob is only simulated for jobs created under the AMT stand-in")
        self.engine.stop_training_job(job)

    # -- tuning jobs -------------------------------------------------------------------------------------

    @override
    def create_hyper_parameter_tuning_job(
        self,
        hyper_parameter_tuning_job_name: str,
        hyper_parameter_tuning_job_config: dict[str, Any],
        training_job_definition: dict[str, Any] | None,
        training_job_definitions: list[dict[str, Any]] | None,
        warm_start_config: dict[str, Any] | None,
        tags: list[dict[str, str]] | None,
        autotune: dict[str, Any] | None,
    ) -> str:
        kwargs: dict[str, Any] = {
            "hyper_parameter_tuning_job_name": hyper_parameter_tuning_job_name,
            "hyper_parameter_tuning_job_config": hyper_parameter_tuning_job_config,
            "training_job_definition": training_job_definition,
            "training_job_definitions": training_job_definitions,
            "warm_start_config": warm_start_config,
            "tags": tags,
            "autotune": autotune,
        }
        if self.engine is None:
            return super().create_hyper_parameter_tuning_job(**kwargs)
        self.engine.catch_up()
        return self.engine.create_tuning_job(self, **kwargs).arn

    def describe_hyper_parameter_tuning_job(self, hyper_parameter_tuning_job_name: str) -> dict[str, Any]:
        self._catch_up()
        return super().describe_hyper_parameter_tuning_job(hyper_parameter_tuning_job_name)

    def list_hyper_parameter_tuning_jobs(self, *args: Any, **kwargs: Any) -> Any:
        self._catch_up()
        return super().list_hyper_parameter_tuning_jobs(*args, **kwargs)

    def list_tags(self, *args: Any, **kwargs: Any) -> tuple[list[dict[str, str]], str | None]:
        # AWS answers ListTags on a resource it does not know (deleted, or never there) with a
        # ValidationException (aws/amazon-sagemaker-feedback#108); moto raises AttributeError.
        arn = kwargs.get("arn", args[0] if args else "")
        if self._get_resource_from_arn(arn) is None:
            raise AWSValidationException(f"Could not find resource {arn}")
        return super().list_tags(*args, **kwargs)

    def _sim_tuning_job(self, name: str) -> SimTuningJob:
        job = self.hyper_parameter_tuning_jobs.get(name)
        if job is None:
            raise ResourceNotFound(message=f"Amazon SageMaker can't find a tuning job with name {name}")
        if not isinstance(job, SimTuningJob) or self.engine is None:
            raise NotImplementedError("only tuning jobs created under the AMT stand-in are simulated")
        return job

    def stop_hyper_parameter_tuning_job(self, hyper_parameter_tuning_job_name: str) -> None:
        """StopHyperParameterTuningJob (see :meth:`SimulationEngine.stop_tuning_job`)."""
        self._catch_up()
        job = self._sim_tuning_job(hyper_parameter_tuning_job_name)
        assert self.engine is not None
        self.engine.stop_tuning_job(job)

    def list_training_jobs_for_hyper_parameter_tuning_job(
        self,
        hyper_parameter_tuning_job_name: str,
        *,
        next_token: str | None,
        max_results: int | None,
        sort_by: str | None,
        sort_order: str | None,
        status_equals: str | None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of HyperParameterTrainingJobSummary items and the token of the next page.

        Pagination is by offset into the sorted, filtered list (the token is opaque to callers).
        """
        self._catch_up()
        job = self._sim_tuning_job(hyper_parameter_tuning_job_name)
        objective_type = (job.objective or {}).get("Type")
        trials = list(job.trials)
        if status_equals:
            trials = [t for t in trials if t.training_job_status == status_equals]
        sort_by = sort_by or "Name"
        descending = sort_order == "Descending"
        if sort_by == "FinalObjectiveMetricValue":
            # AWS drops trials without a final objective when sorting by it.
            trials = [t for t in trials if t.objective_value is not None]
            trials.sort(key=lambda t: (t.objective_value or 0.0, t.training_job_name), reverse=descending)
        else:
            keys: dict[str, Callable[[SimTrainingJob], Any]] = {
                "Name": lambda t: t.training_job_name,
                "CreationTime": lambda t: (t.creation_time, t.training_job_name),
                "Status": lambda t: (t.training_job_status, t.training_job_name),
            }
            trials.sort(key=keys[sort_by], reverse=descending)
        offset = _decode_token(next_token) if next_token else 0
        page_size = max_results or 10
        page = trials[offset : offset + page_size]
        more = offset + page_size < len(trials)
        token = _encode_token(offset + page_size) if more else None
        return [t.tuning_summary(objective_type) for t in page], token


@dataclass(frozen=True)
class TrainingJobQuery:
    """A ListTrainingJobs request, validated (times as aware datetimes)."""

    max_results: int = 10
    next_token: str | None = None
    creation_time_after: datetime | None = None
    creation_time_before: datetime | None = None
    last_modified_time_after: datetime | None = None
    last_modified_time_before: datetime | None = None
    name_contains: str | None = None
    status_equals: str | None = None
    warm_pool_status_equals: str | None = None
    sort_by: str = "CreationTime"
    sort_order: str = "Ascending"

    def selects(self, job: FakeTrainingJob) -> bool:
        """Whether ``job`` is among the jobs paged through (name and time filters, strict bounds)."""
        created, modified = _aware(job.creation_time), _aware(job.last_modified_time)
        return (
            (self.name_contains is None or self.name_contains in job.training_job_name)
            and (self.creation_time_after is None or created > self.creation_time_after)
            and (self.creation_time_before is None or created < self.creation_time_before)
            and (self.last_modified_time_after is None or modified > self.last_modified_time_after)
            and (self.last_modified_time_before is None or modified < self.last_modified_time_before)
        )

    def keeps(self, job: FakeTrainingJob) -> bool:
        """Whether a job of a page is returned (the status filters, applied after MaxResults)."""
        warm = getattr(job, "warm_pool_status", None) or {}
        return (self.status_equals is None or job.training_job_status == self.status_equals) and (
            self.warm_pool_status_equals is None or warm.get("Status") == self.warm_pool_status_equals
        )

    def sort_key(self, job: FakeTrainingJob) -> tuple[Any, ...]:
        if self.sort_by == "Name":
            return (job.training_job_name,)
        if self.sort_by == "Status":
            return (job.training_job_status, job.training_job_name)
        return (_aware(job.creation_time), job.training_job_name)


def _aware(value: Any) -> datetime:
    """A moto or stand-in timestamp (datetime, naive meaning UTC, or its string) as an aware datetime."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _training_summary(job: FakeTrainingJob) -> dict[str, Any]:
    """A TrainingJobSummary; SecondaryStatus and WarmPoolStatus (moto lacks them) from the stand-in's jobs."""
    summary: dict[str, Any] = {
        "TrainingJobName": job.training_job_name,
        "TrainingJobArn": job.arn,
        "CreationTime": job.creation_time,
        "LastModifiedTime": job.last_modified_time,
        "TrainingJobStatus": job.training_job_status,
    }
    if job.training_end_time:
        summary["TrainingEndTime"] = job.training_end_time
    if isinstance(job, SimTrainingJob):
        summary["SecondaryStatus"] = job.secondary_status
        if job.warm_pool_status:
            summary["WarmPoolStatus"] = dict(job.warm_pool_status)
    return summary


def _encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _decode_token(token: str) -> int:
    try:
        offset = int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"])
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise AWSValidationException("Invalid pagination token.") from exc
    if offset < 0:
        raise AWSValidationException("Invalid pagination token.")
    return offset


# -- response handlers added to moto's SageMakerResponse ---------------------------------------------------


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
    errors = []
    if max_results is not None and not 1 <= int(max_results) <= 100:
        bound = "less than or equal to 100" if int(max_results) > 100 else "greater than or equal to 1"
        errors.append(
            f"Value '{max_results}' at 'maxResults' failed to satisfy constraint: Member must have value {bound}"
        )
    if sort_by is not None and sort_by not in TRAINING_JOB_SORT_KEYS:
        errors.append(_enum_error(sort_by, "sortBy", TRAINING_JOB_SORT_KEYS))
    if sort_order is not None and sort_order not in SORT_ORDERS:
        errors.append(_enum_error(sort_order, "sortOrder", SORT_ORDERS))
    if status_equals is not None and status_equals not in TRAINING_JOB_STATUSES:
        errors.append(_enum_error(status_equals, "statusEquals", TRAINING_JOB_STATUSES))
    if errors:
        noun = "error" if len(errors) == 1 else "errors"
        raise AWSValidationException(f"{len(errors)} validation {noun} detected: {'; '.join(errors)}")
    summaries, token = _governed_backend(self).list_training_jobs_for_hyper_parameter_tuning_job(
        hyper_parameter_tuning_job_name=self._get_param("HyperParameterTuningJobName"),
        next_token=self._get_param("NextToken"),
        max_results=int(max_results) if max_results is not None else None,
        sort_by=sort_by,
        sort_order=sort_order,
        status_equals=status_equals,
    )
    result: dict[str, Any] = {"TrainingJobSummaries": summaries}
    if token:
        result["NextToken"] = token
    return ActionResult(result)


def _handle_list_training_jobs(self: SageMakerResponse) -> ActionResult:
    """ListTrainingJobs with AWS's filters: moto pages before filtering by name and time, compares a
    request's epoch-seconds timestamps with datetimes, and ignores WarmPoolStatusEquals."""
    max_results = self._get_param("MaxResults")
    sort_by = self._get_param("SortBy") or "CreationTime"
    sort_order = self._get_param("SortOrder") or "Ascending"
    status_equals = self._get_param("StatusEquals")
    warm_pool_status = self._get_param("WarmPoolStatusEquals")
    errors = []
    if max_results is not None and not 1 <= int(max_results) <= 100:
        bound = "less than or equal to 100" if int(max_results) > 100 else "greater than or equal to 1"
        errors.append(
            f"Value '{max_results}' at 'maxResults' failed to satisfy constraint: Member must have value {bound}"
        )
    if sort_by not in TRAINING_JOB_LIST_SORT_KEYS:
        errors.append(_enum_error(sort_by, "sortBy", TRAINING_JOB_LIST_SORT_KEYS))
    if sort_order not in SORT_ORDERS:
        errors.append(_enum_error(sort_order, "sortOrder", SORT_ORDERS))
    if status_equals is not None and status_equals not in TRAINING_JOB_STATUSES:
        errors.append(_enum_error(status_equals, "statusEquals", TRAINING_JOB_STATUSES))
    if warm_pool_status is not None and warm_pool_status not in WARM_POOL_STATUSES:
        errors.append(_enum_error(warm_pool_status, "warmPoolStatusEquals", WARM_POOL_STATUSES))
    if errors:
        noun = "error" if len(errors) == 1 else "errors"
        raise AWSValidationException(f"{len(errors)} validation {noun} detected: {'; '.join(errors)}")
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
    result: dict[str, Any] = {"TrainingJobSummaries": summaries}
    if token:
        result["NextToken"] = token
    return ActionResult(result)


def _request_time(value: Any) -> datetime | None:
    """A JSON-protocol timestamp as boto3 sends it (epoch seconds), or an ISO-8601 string."""
    if value is None:
        return None
    if isinstance(value, int | float) or str(value).replace(".", "", 1).isdigit():
        return datetime.fromtimestamp(float(value), tz=UTC)
    return _aware(value)


def _enum_error(value: str, attribute: str, allowed: tuple[str, ...]) -> str:
    return (
        f"Value '{value}' at '{attribute}' failed to satisfy constraint: "
        f"Member must satisfy enum value set: [{', '.join(allowed)}]"
    )


HANDLERS: dict[str, Callable[[SageMakerResponse], ActionResult]] = {
    "list_training_jobs": _handle_list_training_jobs,
    "stop_hyper_parameter_tuning_job": _handle_stop_hyper_parameter_tuning_job,
    "stop_training_job": _handle_stop_training_job,
    "list_training_jobs_for_hyper_parameter_tuning_job": _handle_list_training_jobs_for_hyper_parameter_tuning_job,
}


def install(engine: SimulationEngine) -> Callable[[], None]:
    """Route moto's SageMaker through ``engine``; returns the function that undoes it.

    Backends that already exist (someone called SageMaker before installing) are converted in place, so
    their data stays visible.
    """
    if GovernedSageMakerBackend.engine is not None:
        raise RuntimeError("an AMT stand-in is already installed; uninstall it first")
    patches = Patches()
    patches.set(GovernedSageMakerBackend, "engine", engine)
    patches.set(sagemaker_backends, "backend", GovernedSageMakerBackend)
    for account_backends in sagemaker_backends.values():
        patches.set(account_backends, "backend", GovernedSageMakerBackend)
        for backend in account_backends.values():
            if type(backend) is SageMakerModelBackend:
                patches.set(backend, "__class__", GovernedSageMakerBackend)
    for name, handler in HANDLERS.items():
        patches.set(SageMakerResponse, name, handler)

    def undo() -> None:
        patches.undo()
        # Backends created while installed go back to moto's class too; their jobs keep their last state.
        for account_backends in sagemaker_backends.values():
            for backend in account_backends.values():
                if type(backend) is GovernedSageMakerBackend:
                    cast(Any, backend).__class__ = SageMakerModelBackend

    return undo
