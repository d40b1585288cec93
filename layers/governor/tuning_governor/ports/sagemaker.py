"""The SageMaker port: the reads and the one write (stop) the governor makes.

Adapters: :class:`tuning_governor.adapters.sagemaker.SageMakerGateway` (boto3, in Lambda and on moto)
and the replay's event-sourced SageMaker (``governor_client``), which answers from the events it has read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from tuning_governor.models.training_job import TrainingJob
    from tuning_governor.models.tuning_job import TrialSummary, TuningJob

StopResult = Literal["stop-requested", "already-stopping", "already-ended", "not-found"]


class SageMaker(Protocol):
    """What the governor asks SageMaker. Unknown names raise ``JobNotFound``; throttling raises
    ``TransientError``; an answer the models refuse raises ``RejectedEvent``."""

    def describe_training_job(self, name: str) -> TrainingJob: ...

    def describe_tuning_job(self, name: str) -> TuningJob: ...

    def list_trials(self, tuning_job_name: str) -> list[TrialSummary]:
        """Every training job of a tuning job (ceil(N / 100) calls)."""
        ...

    def list_tuning_jobs(self, status: str) -> list[dict[str, Any]]: ...

    def list_warm_pools(self, modified_after: datetime) -> list[dict[str, Any]]: ...

    def stop_tuning_job(self, name: str) -> StopResult: ...

    def list_tags(self, arn: str) -> dict[str, str]: ...
