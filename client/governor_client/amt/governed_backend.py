"""moto's SageMaker backend whose tuning and training jobs run on the stand-in's engine."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, ClassVar, override

from moto.sagemaker.exceptions import AWSValidationException, ResourceNotFound
from moto.sagemaker.models import FakeTrainingJob, SageMakerModelBackend

from .engine import SimulationEngine
from .events import render_tag_call
from .listing import TrainingJobQuery, decode_token, encode_token, sort_trials, training_summary
from .training_job import SimTrainingJob
from .tuning_job import SimTuningJob


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

    # Long: moto's 18-parameter signature, named once for moto's fallback and once for the AWS request.
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
        offset = decode_token(query.next_token) if query.next_token else 0
        page = jobs[offset : offset + query.max_results]
        token = encode_token(offset + query.max_results) if offset + query.max_results < len(jobs) else None
        return [training_summary(job) for job in page if query.keeps(job)], token

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

    def add_tags(self, arn: str, tags: list[dict[str, str]]) -> list[dict[str, str]]:
        """AddTags as AWS does it: a key already there gets the new value (moto appends a duplicate);
        CloudTrail's event for the call reaches EventBridge (the stand-in assumes a trail)."""
        resource = self._get_resource_from_arn(arn)
        new = {tag["Key"] for tag in tags}
        kept: list[dict[str, str]] = [tag for tag in resource.tags if tag["Key"] not in new] + list(tags)
        resource.tags = kept
        request = {"resourceArn": arn, "tags": [{"key": t["Key"], "value": t.get("Value", "")} for t in tags]}
        self._emit_tag_call("AddTags", request)
        return kept

    def delete_tags(self, arn: str, tag_keys: list[str]) -> None:
        super().delete_tags(arn, tag_keys)
        self._emit_tag_call("DeleteTags", {"resourceArn": arn, "tagKeys": list(tag_keys)})

    def _emit_tag_call(self, operation: str, request: dict[str, Any]) -> None:
        if self.engine is None:
            return
        self.engine.on_event(
            render_tag_call(
                operation=operation,
                account=self.account_id,
                region=self.region_name,
                request=request,
                at=self.engine.now(),
                event_id=self.engine.new_event_id(),
            )
        )

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
        trials = sort_trials(trials, sort_by, descending)
        offset = decode_token(next_token) if next_token else 0
        page_size = max_results or 10
        page = trials[offset : offset + page_size]
        more = offset + page_size < len(trials)
        token = encode_token(offset + page_size) if more else None
        return [t.tuning_summary(objective_type) for t in page], token
