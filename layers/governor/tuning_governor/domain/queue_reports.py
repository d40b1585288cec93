"""Reports to a queued request's owner: queued (with its position), admitted, expired, refused. Pure."""

from __future__ import annotations

from typing import Literal

from tuning_governor.domain.reports import Report, clean_owner
from tuning_governor.models.queue import QueuedRequest

QueueEvent = Literal["queued", "admitted", "expired", "refused", "preempted", "conflict"]
_HEADLINES = {
    "conflict": "not queued: this client_token already names another request",
    "queued": "queued, position {position}",
    "admitted": "admitted: the tuning job was created",
    "expired": "expired: not admitted within its maximum wait",
    "refused": "refused",
    "preempted": "preempted: stopped to give a lender its share back",
}


def queue_report(
    entry: QueuedRequest, event: QueueEvent, reason: str, *, position: int | None = None, once_per: str | None = None
) -> Report:
    """One report on ``entry``: its job name, team, what happened and why (``reason``). Sent once per
    channel for the job and kind; ``once_per`` (e.g. an SQS message id) makes it once per that instead."""
    headline = _HEADLINES[event].format(position=position)
    subject = f"[tuning-governor] {entry.job_name} ({entry.team}): {headline}"[:100]
    # The token is the submitter's own name for the request (the job name is a hash of it): how they
    # tell their submissions apart.
    text = (
        f"{entry.job_name} (submission {entry.client_token}) for team {entry.team}, submitted by"
        f" {entry.submitter}: {headline}. {reason}"
    )
    attributes = {"kind": f"queue-{event}", "team": entry.team, "client_token": entry.client_token}
    owner = clean_owner(entry.owner)
    if owner:
        attributes["owner"] = owner
    return Report(
        kind=f"queue-{event}#{once_per}" if once_per else f"queue-{event}",
        job_key=entry.job_name.lower(),
        subject=subject,
        text=text,
        attributes=attributes,
        paragraphs=(text,),
        team=entry.team,
        owner=owner,
    )
