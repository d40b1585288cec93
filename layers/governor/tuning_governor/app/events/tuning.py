"""Use case: a SageMaker HyperParameter Tuning Job State Change event (arrival, or the job's end)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.app.envelope import Outcome, handle_errors, parse_event, placed
from tuning_governor.app.membership import admit
from tuning_governor.domain.job import iso_time

# An arrival is admitted on the capacity ledger (governance.engine imports it on an arrival): loaded
# with this use case, not on its first event.
from tuning_governor.governance import admission as _arrivals  # noqa: F401
from tuning_governor.governance.engine import govern
from tuning_governor.models.events import TuningJobStateChange
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.observability import logger, metrics, tracer

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import EventStore


def complete_arrival_facts(job: TuningJob, services: AppServices[EventStore]) -> TuningJob:
    """The job with what arrival is judged on, whatever the event carried.

    AWS's documented tuning-job event has no HyperParameterTuningJobConfig (MaxParallel) and may have
    no Tags: then one DescribeHyperParameterTuningJob (for the configuration and definitions) and one
    ListTags (for the tags) complete it; so does a Describe when the policy knows teams by execution
    role and the event carries none (``teams.<team>.execution_roles``). The event's own status and times are kept, so ordering
    against other events still goes by the event.
    """
    has_tags = "tags" in job.model_fields_set
    # A policy that knows teams by their execution roles needs the job's (the definitions carry them).
    needs_roles = not job.role_arns() and any(team.execution_roles for team in services.policy().teams.values())
    sagemaker = services.sagemaker_for(job.place)
    if job.lacks_arrival_facts() or needs_roles or (not has_tags and not job.arn):
        described = sagemaker.describe_tuning_job(job.name)
        metrics.add_metric(name="ArrivalDescribes", unit=MetricUnit.Count, value=1)
        job = job.model_copy(
            update={
                "config": described.config,
                "training_job_definition": described.training_job_definition,
                "training_job_definitions": described.training_job_definitions,
                "arn": job.arn or described.arn,
                "creation_time": job.creation_time or described.creation_time,
            }
        )
    if not has_tags and job.arn:
        job = job.model_copy(update={"tags": sagemaker.list_tags(job.arn)})
    return job


def _ended(job: TuningJob, parsed: Any, services: AppServices[EventStore]) -> Outcome:
    """A job's end: its summary and reports, its reservation released, a stopped job queued again."""
    # Loaded for a job's end only: an arrival's cold start does not pay for the summary or the queue.
    from tuning_governor.app.finalise import finalise_and_report  # noqa: PLC0415
    from tuning_governor.app.queue.requeue import requeue_stopped  # noqa: PLC0415

    summary, channels = finalise_and_report(
        job.name, region=parsed.region, tags=job.tags, services=services, place=job.place
    )
    # The job holds no instances any more: its reservation goes back to the capacity ledger,
    # marked ended at its end in SageMaker's time (a job created before that still counts it).
    ended = job.end_time or job.last_modified_time or parsed.time
    services.at(job.place).store.release_reservation(job.key, iso_time(ended))
    # In case the queue consumer's copy of the event is lost (the queue launches at home only).
    if job.status == "Stopped" and job.place is None:
        requeue_stopped(job.name, services, services.stopped_jobs, services.queue_name_key)
    return {"outcome": "finalised", "job": job.key, "status": summary.status, "reports": channels}


@tracer.capture_method
def process_tuning_event(event: Any, services: AppServices[EventStore]) -> Outcome:
    """InProgress/Stopping: record the job and its demand. Completed/Stopped/Failed: finalise and report."""

    def run() -> Outcome:
        nonlocal services  # an ungoverned account is rejected here; a monitored member is judged in monitor mode
        services = admit(event, services)
        parsed = parse_event(event, TuningJobStateChange)
        job = placed(parsed, services.home)
        logger.append_keys(tuning_job=job.name)
        if job.status in TUNING_TERMINAL:
            return _ended(job, parsed, services)
        if job.status in {"Deleting", "DeleteFailed"}:
            return {"outcome": "ignored", "reason": f"status {job.status}"}
        job = complete_arrival_facts(job, services)
        fresh = services.store.upsert_job(
            job,
            region=parsed.region,
            team=services.policy().team_of(job.tags, job.role_arns()),
            owner=job.tags.get(services.settings.owner_tag),
            event_time=parsed.time,
        )
        if not fresh:
            metrics.add_metric(name="StaleEvents", unit=MetricUnit.Count, value=1)
            return {"outcome": "stale", "job": job.key, "status": job.status}
        decisions: list[dict[str, Any]] = []
        if job.status == "InProgress":
            # Judged through the capacity ledger: a job already reserved, or whose decision is already
            # claimed, is not judged again; a retry after a failure finishes what was started.
            decisions = govern("arrival", job.key, parsed.time, services)
        return {
            "outcome": "recorded",
            "job": job.key,
            "status": job.status,
            "demand": job.demand(),
            "decisions": decisions,
        }

    return handle_errors("tuning", event, run)
