"""Use case: a tuning job's tags as they are now (issue 17, mechanism 8).

A notice's own advice ("tag it governance:exempt=true", or raise its budget tag) must take effect
while the job runs. SageMaker sends no state change when a job is tagged, so two paths bring the
change in (docs/reference/policy.md, "Tags as they are now"):

- **the event**: CloudTrail's ``AddTags``/``DeleteTags`` call on a tuning job (and EventBridge's
  ``Tag Change on Resource``, should SageMaker emit it), routed to the tuning-events function. The
  event only names the job: its tags are re-read with one ListTags (never taken from the event
  body), stored with the owner (the team stays), and the job judged again at once;
- **the sweep** (backstop for a lost event, or no trail): one ListTags per running job that is under
  a grace notice or has a one-time check pending (a projected budget crossing or a notice's stop
  time), before the sweep judges it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tuning_governor.app.envelope import Outcome, handle_errors, parse_event
from tuning_governor.app.events.tuning import process_tuning_event
from tuning_governor.app.membership import admit
from tuning_governor.domain.job import job_state
from tuning_governor.errors import RejectedEvent
from tuning_governor.governance.engine import govern
from tuning_governor.models.events import API_CALL_DETAIL_TYPE
from tuning_governor.models.place import Place, away, job_key
from tuning_governor.observability import logger, tracer

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import EventStore


def is_tag_event(event: Any) -> bool:
    """Whether the tuning-events function got a tag event (template.yaml routes both kinds to it)."""
    if not isinstance(event, Mapping):
        return False
    return event.get("source") == "aws.tag" or event.get("detail-type") == API_CALL_DETAIL_TYPE


def process_job_event(event: Any, services: AppServices[EventStore]) -> Outcome:
    """The tuning-events function's one entry: a tag change on a job, or a job's state change."""
    if is_tag_event(event):
        return process_tag_event(event, services)
    return process_tuning_event(event, services)


@tracer.capture_method
def process_tag_event(event: Any, services: AppServices[EventStore]) -> Outcome:
    """A tag change on a SageMaker resource: for a known running tuning job, its tags re-read (ListTags),
    stored, and the job judged again. Other resources, unknown or ended jobs, and failed calls are
    ``ignored``; an event naming no SageMaker ARN is ``rejected`` with a reason (metric
    ``RejectedEvents``, a warning log line), never retried."""

    # The tag models load with the first tag event: a state change's cold start does not build them.
    from tuning_governor.models.tag_changes import TagApiCall, TagChangeEvent, tagged_resource  # noqa: PLC0415

    def run() -> Outcome:
        nonlocal services  # an ungoverned account is rejected here; a monitored member is judged in monitor mode
        services = admit(event, services)
        parsed = parse_event(event, TagChangeEvent).root
        resource = tagged_resource(parsed.resource_arn())
        if resource is None:
            raise RejectedEvent("names no SageMaker resource ARN (resources[0] or requestParameters.resourceArn)")
        if not resource.is_tuning_job:
            return {"outcome": "ignored", "reason": f"a {resource.resource_type}, not a tuning job"}
        if isinstance(parsed, TagApiCall) and parsed.detail.error_code:
            return {"outcome": "ignored", "reason": f"the call failed ({parsed.detail.error_code[:100]})"}
        logger.append_keys(tuning_job=resource.name)
        try:  # the tagged job's ARN names its account and region: its key is the job's there
            place = away(Place.of_arn(resource.arn), services.home)
        except ValueError as exc:
            raise RejectedEvent(f"tagged resource: {exc}") from None
        return retag(job_key(resource.name, place, None), resource.arn, parsed.time, services)

    return handle_errors("tag change", event, run)


def retag(job_key: str, arn: str, at: datetime, services: AppServices[EventStore]) -> Outcome:
    """Re-read a known running job's tags, store them, and judge the job at ``at``. ``stale``: a read
    made later is already stored (that read's handler judges the job)."""
    job = job_state(services.store.get_job(job_key))
    if job is None or job.ended:
        # An unknown job is recorded (with its tags) by its arrival or by the sweep's discovery.
        return {"outcome": "ignored", "job": job_key, "reason": "unknown job" if job is None else "job has ended"}
    from tuning_governor.app.tag_rereads import reread_job_tags  # noqa: PLC0415 - a tag change only

    tags = reread_job_tags(job, services, arn)
    if tags is None:
        return {"outcome": "stale", "job": job_key}
    decisions = govern("sweep", job_key, at, services)
    return {"outcome": "retagged", "job": job_key, "tags": tags, "decisions": decisions}
