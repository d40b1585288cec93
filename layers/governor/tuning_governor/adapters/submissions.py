"""IAM and SageMaker adapters of the submission path (``ports.submissions``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from botocore.exceptions import ClientError

from tuning_governor.adapters.sagemaker import TRANSIENT
from tuning_governor.errors import RejectedEvent, TransientError
from tuning_governor.ports.submissions import CreateResult, Principals, StoppedJobs, TuningJobLauncher

if TYPE_CHECKING:
    from mypy_boto3_sagemaker import SageMakerClient


class IamPrincipals:
    """Role unique ids from IAM (GetRole), each ARN resolved once per instance (a cold start): a role
    deleted and re-created under its name gets a new id, refused until resolved again."""

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
                if exc.response.get("Error", {}).get("Code") != "NoSuchEntity":
                    raise TransientError(f"iam:GetRole {arn}") from exc
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

    def create_tuning_job(self, request: dict[str, Any]) -> CreateResult:
        try:
            self._client.create_hyper_parameter_tuning_job(**request)
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
