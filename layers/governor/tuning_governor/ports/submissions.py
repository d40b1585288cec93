"""The submission path's ports: who sent a message (IAM), and creating the tuning job (SageMaker).

Adapters: :mod:`tuning_governor.adapters.submissions` (boto3: IAM GetRole, SageMaker
CreateHyperParameterTuningJob; in Lambda and on moto with the AMT stand-in).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable

CreateResult = Literal["created", "exists"]


class Principals(Protocol):
    def role_arn(self, sender_id: str, candidates: Iterable[str]) -> str | None:
        """The ARN among ``candidates`` (role ARNs) of the role whose unique id (``AROA...``) is
        ``sender_id``'s part before ``:`` (SQS's SenderId for a role session); None when none is."""
        ...


class JobTags(Protocol):
    def job_tags(self, name: str) -> dict[str, str] | None:
        """The tags (a flat map) of the tuning job ``name`` as SageMaker has them now
        (DescribeHyperParameterTuningJob for its ARN, then ListTags); None when no such job exists."""
        ...


class TuningJobLauncher(JobTags, Protocol):
    def request_problem(self, request: dict[str, Any]) -> str | None:
        """Why SageMaker would refuse ``request`` on its shape alone (missing or mistyped fields), without
        calling it; None when the shape is valid. Checked at submission, so the owner hears at once."""
        ...

    def create_tuning_job(self, request: dict[str, Any]) -> CreateResult:
        """CreateHyperParameterTuningJob; ``"exists"`` when a job of that name exists already (a retried
        creation, or someone else's job: the caller compares its tags, ``job_tags``). SageMaker refusing the request raises
        ``RejectedEvent`` with its reason; throttling ``TransientError``."""
        ...


class StoppedJobs(Protocol):
    def describe_for_resume(self, name: str) -> tuple[dict[str, Any], dict[str, str]]:
        """DescribeHyperParameterTuningJob's response for ``name`` (as boto3 returns it) and its tags
        (ListTags, a flat map): what ``domain.resume.plan_resume`` reads."""
        ...
