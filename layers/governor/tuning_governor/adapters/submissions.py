"""IAM and SageMaker adapters of the submission path (``ports.submissions``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from botocore.exceptions import ClientError, ParamValidationError
from botocore.validate import validate_parameters

from tuning_governor.adapters.sagemaker import TRANSIENT
from tuning_governor.errors import RejectedEvent, TransientError
from tuning_governor.observability import logger
from tuning_governor.ports.submissions import CreateResult, JobTags, Principals, StoppedJobs, TuningJobLauncher

if TYPE_CHECKING:
    from mypy_boto3_sagemaker import SageMakerClient


#: GetRole answers that retrying cannot change: the role matches no sender.
_UNRESOLVABLE = frozenset({"NoSuchEntity", "AccessDenied", "AccessDeniedException"})


class IamPrincipals:
    """Role unique ids from IAM (GetRole), each ARN resolved once per instance (a cold start): a role
    deleted and re-created under its name gets a new id, refused until resolved again. A listed role
    IAM will not describe (another account's, or outside the consumer's iam:GetRole resources) matches
    no sender, and is logged: it must not hold up the senders listed after it."""

    permissions: ClassVar[dict[str, str]] = {"role_arn": "iam:GetRole"}

    def __init__(self, client: Any) -> None:
        """``client``: a boto3 IAM client (no type stubs are installed for IAM)."""
        self._client = client
        self._ids: dict[str, str | None] = {}

    def _role_id(self, arn: str) -> str | None:
        if arn not in self._ids:
            try:
                role = self._client.get_role(RoleName=arn.rsplit("/", 1)[-1])["Role"]
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code not in _UNRESOLVABLE:
                    raise TransientError(f"iam:GetRole {arn}") from exc
                if code != "NoSuchEntity":
                    logger.warning("listed submitter role not readable", extra={"role": arn, "code": code})
                self._ids[arn] = None
            else:
                # Same name, other path (or account) is another role: the ARN must match too.
                self._ids[arn] = role["RoleId"] if role["Arn"].casefold() == arn.casefold() else None
        return self._ids[arn]

    def role_arn(self, sender_id: str, candidates: Iterable[str]) -> str | None:
        unique_id = sender_id.split(":", 1)[0]
        return next((arn for arn in sorted(candidates) if self._role_id(arn) == unique_id), None)


class SageMakerLauncher:
    """CreateHyperParameterTuningJob, idempotent by name."""

    permissions: ClassVar[dict[str, str]] = {
        "create_tuning_job": "sagemaker:CreateHyperParameterTuningJob",
        "describe_tuning_job": "sagemaker:DescribeHyperParameterTuningJob",
        "list_tags": "sagemaker:ListTags",
    }
    """Per SageMaker call; ``job_tags`` and ``describe_for_resume`` make the last two."""

    def __init__(self, client: SageMakerClient) -> None:
        self._client = client

    def request_problem(self, request: dict[str, Any]) -> str | None:
        """Why SageMaker's API model (botocore's, offline: no call) refuses ``request``; None when it accepts it."""
        shape = self._client.meta.service_model.operation_model("CreateHyperParameterTuningJob").input_shape
        try:
            if shape is not None:
                validate_parameters(request, shape)
        except ParamValidationError as exc:
            return f"SageMaker's API model refuses the request: {' '.join(str(exc.kwargs['report']).split())}"
        return None

    def create_tuning_job(self, request: dict[str, Any]) -> CreateResult:
        try:
            self._client.create_hyper_parameter_tuning_job(**request)
        except ParamValidationError as exc:  # botocore's own check, before any call: never worth retrying
            raise RejectedEvent(f"SageMaker's API model refuses the request: {exc.kwargs['report']}") from exc
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in {"ResourceInUse", "ResourceInUseException"}:
                return "exists"
            if code in TRANSIENT or code == "ResourceLimitExceeded":
                raise TransientError(f"CreateHyperParameterTuningJob: {code}") from exc
            raise RejectedEvent(
                f"SageMaker refused the request: {code}: {exc.response['Error'].get('Message', '')}"
            ) from exc
        return "created"

    def _describe(self, name: str) -> dict[str, Any] | None:
        try:
            describe = dict(self._client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in {"ResourceNotFound", "ResourceNotFoundException", "ValidationException"}:
                return None  # SageMaker answers an unknown tuning job with ResourceNotFound
            if code in TRANSIENT:
                raise TransientError(f"DescribeHyperParameterTuningJob: {code}") from exc
            raise
        describe.pop("ResponseMetadata", None)
        return describe

    def _tags(self, arn: str) -> dict[str, str]:
        tags: dict[str, str] = {}
        for page in self._client.get_paginator("list_tags").paginate(ResourceArn=arn):
            tags |= {t["Key"]: t["Value"] for t in page.get("Tags", [])}
        return tags

    def job_tags(self, name: str) -> dict[str, str] | None:
        """The job's tags now (``ports.submissions.JobTags``); None when SageMaker has no such job."""
        describe = self._describe(name)
        return None if describe is None else self._tags(str(describe["HyperParameterTuningJobArn"]))

    def describe_for_resume(self, name: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The stopped job's Describe and tags (``ports.submissions.StoppedJobs``)."""
        describe = self._describe(name)
        if describe is None:
            raise RejectedEvent(f"tuning job {name} does not exist")
        return describe, self._tags(str(describe["HyperParameterTuningJobArn"]))


class SecretNameKey:
    """The stack's secret name key (``QueueServices.name_key``), from its Secrets Manager secret. Read
    once per cold start: a key that cannot be read stops the consumer (the submission is delivered
    again) rather than naming jobs by the open recipe, which would also give a redelivered submission
    another name than its entry's."""

    permissions: ClassVar[dict[str, str]] = {"read": "secretsmanager:GetSecretValue"}

    def __init__(self, client: Any, secret_id: str) -> None:
        """``client``: a boto3 Secrets Manager client; ``secret_id``: the secret's ARN."""
        self._client = client
        self._secret_id = secret_id

    def read(self) -> str:
        try:
            value = str(self._client.get_secret_value(SecretId=self._secret_id).get("SecretString") or "")
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            raise TransientError(f"the queue's name key {self._secret_id} could not be read: {code}") from exc
        if len(value) < 32:
            raise TransientError(f"the queue's name key {self._secret_id} holds fewer than 32 characters")
        return value


# mypy checks that the adapters implement their ports.
_PRINCIPALS: type[Principals] = IamPrincipals
_LAUNCHER: type[TuningJobLauncher] = SageMakerLauncher
_STOPPED: type[StoppedJobs] = SageMakerLauncher
_TAGS: type[JobTags] = SageMakerLauncher
