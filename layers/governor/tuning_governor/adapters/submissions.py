"""IAM and SageMaker adapters of the submission path (``ports.submissions``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from botocore.exceptions import ClientError, ParamValidationError
from botocore.validate import validate_parameters

from tuning_governor.adapters.sagemaker import TRANSIENT
from tuning_governor.errors import RejectedEvent, TransientError
from tuning_governor.observability import logger
from tuning_governor.ports.submissions import CreateResult, Principals, StoppedJobs, TuningJobLauncher

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

    permissions: ClassVar[dict[str, str]] = {"create_tuning_job": "sagemaker:CreateHyperParameterTuningJob"}

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

    def describe_for_resume(self, name: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The stopped job's Describe and tags (``ports.submissions.StoppedJobs``)."""
        describe = dict(self._client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name))
        describe.pop("ResponseMetadata", None)
        arn = str(describe["HyperParameterTuningJobArn"])
        tags: dict[str, str] = {}
        for page in self._client.get_paginator("list_tags").paginate(ResourceArn=arn):
            tags |= {t["Key"]: t["Value"] for t in page.get("Tags", [])}
        return describe, tags


# mypy checks that the adapters implement their ports.
_PRINCIPALS: type[Principals] = IamPrincipals
_LAUNCHER: type[TuningJobLauncher] = SageMakerLauncher
_STOPPED: type[StoppedJobs] = SageMakerLauncher
