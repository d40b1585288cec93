"""The tuning jobs' tags as they are now, re-read with one ListTags: for a tag event (``app.events.tags``)
and by the sweep's step for the jobs a lost tag event would matter to (docs/reference/policy.md, "Tags as they
are now"). Apart from the tag event's use case so the sweep loads neither the tag models nor the
tuning-events use case."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.job import JobState, time_of
from tuning_governor.models.place import place_in_key
from tuning_governor.observability import logger, metrics

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import JobDecisionStore


def reread_job_tags(
    job: JobState, services: AppServices[JobDecisionStore], arn: str | None = None
) -> dict[str, str] | None:
    """The job's tags from ListTags, stored with its owner; None when a later read is already stored
    (or the job's ARN is unknown)."""
    arn = str(job.item.get("arn") or arn or "")
    if not arn:
        return None
    tags = services.sagemaker_for(place_in_key(job.key)).list_tags(arn)
    metrics.add_metric(name="TagRereads", unit=MetricUnit.Count, value=1)
    owner = tags.get(services.settings.owner_tag)
    if not services.store.refresh_tags(job.key, tags=tags, owner=owner, read_at=services.clock()):
        return None
    team = services.policy().team_of(tags, job.roles)
    if team != job.team:
        # A team is fixed for the job's run: its spend so far is in that team's month (docs/reference/policy.md).
        logger.warning("team tag change not honoured while the job runs", extra={"team": job.team, "tagged": team})
    return tags


def reread_tags(
    services: AppServices[JobDecisionStore],
    now: datetime,
    running: Mapping[str, JobState],
    attempt: Callable[[str, str, Callable[[], Any]], None],
) -> list[str]:
    """The sweep's step: one ListTags per running job under a grace notice or with a one-time check
    pending, before the sweep judges it (a tag event may be lost, or never sent without a trail).
    The jobs re-read, by key."""
    graced = bool(services.policy().defaults.grace_minutes)
    done: list[str] = []
    for key, job in sorted(running.items()):
        if not (_check_pending(job, now) or (graced and _under_notice(key, services))):
            continue

        def reread(job: JobState = job) -> None:
            if reread_job_tags(job, services) is not None:
                done.append(job.key)

        attempt(key, "reread-tags", reread)
    return done


#: A one-time check this long past is still treated as pending (it may be running, or be retried).
CHECK_SLACK = timedelta(minutes=10)


def _check_pending(job: JobState, now: datetime) -> bool:
    """A one-time judgement is asked for (a projected crossing, or a notice's stop time) and not long past."""
    at = time_of(job.budget_check_at)
    return at is not None and at >= now - CHECK_SLACK


def _under_notice(key: str, services: AppServices[JobDecisionStore]) -> bool:
    return any(d.get("verdict") == "grace" for d in services.store.decisions(key))
