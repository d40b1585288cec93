"""The submission queue in a simulation (docs/explanation/queue.md): ``SubmitTuningJob`` actions go through the
real submission use case instead of CreateHyperParameterTuningJob, and admission runs where the
deployed consumer would run it: when a tuning job's end is delivered (the consumer's own entry,
``process_queue_event``: a job the governor stopped to make room is queued again as a warm start
first), and on every sweep.

The sender's identity is what SQS would report for a session of the action's ``submitter`` role (a
made-up role unique id per role, resolved without IAM); the job is created on the AMT stand-in.
Scenarios without submissions are untouched: the queue only runs once something was submitted, or
when the policy says ``defaults.on_over_capacity: requeue``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from governor_client.submit.submissions import StaticPrincipals
from tuning_governor.adapters.submissions import SageMakerLauncher
from tuning_governor.app.queue.admission import QueueServices, submit
from tuning_governor.app.queue.consumer import admit_after_release, process_queue_event
from tuning_governor.app.queue.requests import Submission
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.observability import logger

if TYPE_CHECKING:
    from governor_client.offline.environment import OfflineEnvironment
    from governor_client.simulator.simulation.scenario import SubmitTuningJob


class SimulatedQueue:
    """Submissions and admissions of one simulation run."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._queue: QueueServices | None = None
        self.outcomes: list[dict[str, Any]] = []

    def _services(self, env: OfflineEnvironment) -> QueueServices:
        if self._queue is None:
            launcher = SageMakerLauncher(env.sagemaker)
            self._queue = QueueServices(launcher, StaticPrincipals(self._ids), stopped_jobs=launcher)
        return self._queue

    def perform(self, action: SubmitTuningJob, env: OfflineEnvironment) -> None:
        """Submit as a session of ``action.submitter``."""
        unique_id = next((i for i, arn in self._ids.items() if arn == action.submitter), None)
        if unique_id is None:
            unique_id = f"AROASIMULATED{len(self._ids):07d}"
            self._ids[unique_id] = action.submitter
        submission = Submission(
            f"{unique_id}:{action.session}", "", dict(action.request), action.client_token, action.fit_to_share
        )
        self.outcomes.append(submit(submission, env.services, self._services(env)))

    def after(self, event: dict[str, Any] | None, env: OfflineEnvironment) -> None:
        """Admission after a delivered event that ends a tuning job, or after a sweep (``event`` None)."""
        status = ((event or {}).get("detail") or {}).get("HyperParameterTuningJobStatus")
        if event is not None and status not in TUNING_TERMINAL:
            return  # most events: nothing frees, and the policy is not read
        if self._queue is None and env.services.policy().defaults.on_over_capacity != "requeue":
            return
        queue = self._services(env)
        if event is None:
            self.outcomes.extend(admit_after_release(env.services, queue))
        else:
            try:
                self.outcomes.extend(process_queue_event(event, env.services, queue)["admitted"])
            except Exception:  # the deployed consumer's event would be retried; the next release or sweep admits
                logger.exception("simulated queue consumer failed on a job's end")
