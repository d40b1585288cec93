"""The submission queue's consumer: a Lambda SQS event (a batch of submissions) recorded and admitted,
or a job's end / the schedule running admission (``process_queue_event``); and ``admit_after_release``,
the never-raising pass the simulator runs after its sweeps.

Each record is one submission: a record that cannot be read or whose sender is no listed submitter
is dropped (logged and counted: retrying cannot help, there is nobody to tell); a transient failure
(throttling, a contended ledger) leaves the record in the queue (``batchItemFailures``, the event
source mapping's ReportBatchItemFailures), so SQS delivers it again and, after maxReceiveCount,
moves it to the dead-letter queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.app.envelope import parse_event, placed
from tuning_governor.app.queue.admission import QueueServices, admit_waiting, submit
from tuning_governor.app.queue.requests import read_record
from tuning_governor.domain.job import iso_time
from tuning_governor.errors import Disposition, disposition
from tuning_governor.governance.ports import EngineServices
from tuning_governor.models.events import TuningJobStateChange
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.observability import logger, metrics

if TYPE_CHECKING:
    from tuning_governor.ports.uses import QueueingStore


def process_submissions(
    event: dict[str, Any], services: EngineServices[QueueingStore], queue: QueueServices
) -> dict[str, Any]:
    """Every record of the batch submitted; the ids of those to be delivered again."""
    failures: list[dict[str, str]] = []
    for record in event.get("Records") or []:
        try:
            submit(read_record(record), services, queue)
        except Exception as exc:
            if disposition(exc) is Disposition.DROP:
                logger.warning("submission dropped", extra={"message_id": record.get("messageId"), "reason": str(exc)})
                metrics.add_metric(name="SubmissionsDropped", unit=MetricUnit.Count, value=1)
                continue
            logger.exception(
                "submission failed; SQS will deliver it again", extra={"message_id": record.get("messageId")}
            )
            failures.append({"itemIdentifier": str(record.get("messageId"))})
    return {"batchItemFailures": failures}


def process_queue_event(
    event: dict[str, Any], services: EngineServices[QueueingStore], queue: QueueServices
) -> dict[str, Any]:
    """The consumer's one entry: an SQS batch (submissions), or an EventBridge event saying capacity
    may have freed (a tuning job or a training job ended, or the schedule: docs/explanation/queue.md, "When
    admission runs"). For a tuning job's end, its reservation is released first, at its end in SageMaker's time
    (idempotent: the tuning-events function releases it too, whichever comes first), so the queue
    does not wait for that function to have run."""
    if "Records" in event:
        return process_submissions(event, services, queue)
    detail = event.get("detail") or {}
    if detail.get("TrainingJobName"):  # a training job ended: what a standalone one held is free
        return {"admitted": admit_waiting(services, queue)}
    name = detail.get("HyperParameterTuningJobName")
    if name and detail.get("HyperParameterTuningJobStatus") in TUNING_TERMINAL:
        parsed = parse_event(event, TuningJobStateChange)
        job = placed(parsed, services.home)
        ended = job.end_time or job.last_modified_time or parsed.time
        services.at(job.place).store.release_reservation(job.key, iso_time(ended))
        # The queue launches in the home place: only a home job's stop is queued again.
        if detail.get("HyperParameterTuningJobStatus") == "Stopped" and job.place is None:
            # A preemption, or on_over_capacity: requeue.
            from tuning_governor.app.queue.requeue import requeue_stopped  # noqa: PLC0415 - a Stopped job only

            requeue_stopped(str(name), services, queue.stopped_jobs, lambda: queue.name_key)
    return {"admitted": admit_waiting(services, queue)}


def admit_after_release(services: EngineServices[QueueingStore], queue: QueueServices) -> list[dict[str, Any]]:
    """Capacity freed (the sweep released reservations): admit what now fits. Never raises: the caller's
    own step must not fail for the queue; a request left waiting is admitted by the next release,
    submission or sweep. (Deployed, the consumer's schedule rule runs ``process_queue_event`` instead.)"""
    try:
        return admit_waiting(services, queue)
    except Exception:
        logger.exception("queue admission after a release failed; the next release or sweep retries it")
        metrics.add_metric(name="QueueAdmissionFailures", unit=MetricUnit.Count, value=1)
        return []
