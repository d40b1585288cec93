"""A submission read from its SQS record and made into a queue entry: the team and the submitter from
what AWS says (``SenderId``), the request from the body, the governance tags the submitter may not set
taken out (docs/explanation/queue.md, "Submission path")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from tuning_governor.domain.capacity import AdmissionPlan
from tuning_governor.domain.resume import RESUME_TAGS
from tuning_governor.errors import RejectedEvent
from tuning_governor.models.queue import QUEUE_TOKEN_TAG, QueuedRequest, job_name_for, token_tag
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.policy import Policy
from tuning_governor.ports.submissions import JobTags, Principals

MAX_TOKEN = 128


@dataclass(frozen=True)
class Submission:
    """What the SQS record says: ``sender_id`` from SQS (``attributes.SenderId``), the rest from the body."""

    sender_id: str
    message_id: str
    request: dict[str, Any]
    client_token: str
    fit_to_share: bool = False
    """The submitter's consent to a lower MaxParallelTrainingJobs rather than waiting."""


def read_record(record: dict[str, Any]) -> Submission:
    """The submission in one record of a Lambda SQS event; RejectedEvent when it cannot be read."""
    sender = str((record.get("attributes") or {}).get("SenderId") or "")
    if not sender:
        raise RejectedEvent("the SQS record has no SenderId")
    try:
        body = json.loads(record.get("body") or "")
    except json.JSONDecodeError as exc:
        raise RejectedEvent(f"the message body is not JSON: {exc.msg}") from None
    if not isinstance(body, dict) or not isinstance(body.get("request"), dict):
        raise RejectedEvent('the message body must be {"request": {...CreateHyperParameterTuningJob...}}')
    token = str(body.get("client_token") or record.get("messageId") or "")
    if not token or len(token) > MAX_TOKEN:
        raise RejectedEvent(f"client_token must be 1 to {MAX_TOKEN} characters")
    fit = body.get("fit_to_share", False)
    if not isinstance(fit, bool):
        raise RejectedEvent("fit_to_share must be true or false")
    return Submission(sender, str(record.get("messageId") or ""), body["request"], token, fit)


def tuning_job_of(request: dict[str, Any]) -> TuningJob:
    """The request read as SageMaker would describe the job (same field names), for its shape."""
    try:
        return TuningJob.model_validate(request | {"HyperParameterTuningJobStatus": "Pending"})
    except ValidationError as exc:
        raise RejectedEvent(
            f"the request is not a CreateHyperParameterTuningJob request: {exc.errors()[0]['msg']}"
        ) from None


def plans_of(request: dict[str, Any]) -> tuple[list[AdmissionPlan], int]:
    """The plans the job may run on (priority order) and its MaxParallelTrainingJobs."""
    job = tuning_job_of(request)
    return [AdmissionPlan.model_validate(option) for option in job.admission_options()], job.max_parallel


def shape_problem(request: dict[str, Any]) -> str | None:
    """Why the request cannot be read as a tuning job (``tuning_job_of``'s reason); None when it can."""
    try:
        tuning_job_of(request)
    except RejectedEvent as exc:
        return exc.reason
    return None


def demand_of(request: dict[str, Any]) -> dict[str, int]:
    """Training instances per type the job holds at MaxParallel, on its first plan (both markets)."""
    plans, _ = plans_of(request)
    demand: dict[str, int] = {}
    for market in (plans[0].on_demand, plans[0].spot) if plans else ():
        for itype, count in market.items():
            demand[itype] = demand.get(itype, 0) + count
    return demand


def _governed_tags(tags: Any, policy: Policy, team: str, owner: str | None, owner_tag: str) -> list[dict[str, str]]:
    """The request's tags with the team tag set to the submitter's team, the owner tag (the stack's
    ``OwnerTagKey``, the one reports read) to the session, and the exemption and budget tags (which only
    the platform team sets, docs/explanation/security.md) and the resume-chain tags removed, whatever their case: the
    governor creates the job with its own role, which the SCP does not bind."""
    reserved = {t.casefold() for t in (policy.team_tag, policy.exempt_tag, policy.budget_tag, owner_tag, "owner")}
    reserved |= {t.casefold() for t in (*RESUME_TAGS, QUEUE_TOKEN_TAG)}  # the governor's to write
    kept = [t for t in (tags or []) if isinstance(t, dict) and str(t.get("Key", "")).casefold() not in reserved]
    kept.append({"Key": policy.team_tag, "Value": team})
    if owner:
        # A session name may hold ',' (IAM allows [\w+=,.@-]); a tag value may not: SageMaker would refuse.
        kept.append({"Key": owner_tag, "Value": owner[:256].replace(",", "_")})
    return kept


def governed_tags_of(request: dict[str, Any], team_tag: str, owner_tag: str) -> dict[str, str]:
    """The tags the governor set on ``request`` that say whose it is: team, owner (when set), token."""
    keys = {team_tag, owner_tag, QUEUE_TOKEN_TAG}
    return {str(t["Key"]): str(t["Value"]) for t in request.get("Tags") or [] if t.get("Key") in keys}


def with_token(request: dict[str, Any], team: str, client_token: str, name_key: str) -> dict[str, Any]:
    """``request`` with the governor's ``QUEUE_TOKEN_TAG`` for (team, token) in place of any other."""
    tags = [t for t in request.get("Tags") or [] if str(t.get("Key", "")).casefold() != QUEUE_TOKEN_TAG]
    tags.append({"Key": QUEUE_TOKEN_TAG, "Value": token_tag(team, client_token, name_key)})
    return request | {"Tags": tags}


def warm_start_refusal(request: dict[str, Any], team: str, team_tag: str, jobs: JobTags) -> str | None:
    """Why the request's WarmStartConfig may not be used (None: it names only ``team``'s own tuning
    jobs, read from SageMaker: each parent's team tag): a team learns only from its own jobs."""
    warm = request.get("WarmStartConfig")
    parents = (warm or {}).get("ParentHyperParameterTuningJobs") if isinstance(warm, dict) else None
    for parent in parents or []:
        name = str((parent or {}).get("HyperParameterTuningJobName") or "")
        tags = jobs.job_tags(name) if name else None
        if tags is None:
            return f"WarmStartConfig names {name or 'a parent without a name'}, which is no tuning job in this account"
        if tags.get(team_tag) != team:
            other = tags.get(team_tag)
            whose = f"a job of team {other}" if other else "a job of no team"
            return f"WarmStartConfig names {name}, {whose}: a warm start may name only team {team}'s own tuning jobs"
    return None


def queue_terms(policy: Policy, team: str, enqueued_at: datetime) -> tuple[int, datetime | None]:
    """A queued request's priority and the time it expires (None: no limit), from ``teams.<team>``
    (``request_priority``, ``max_wait_minutes``); a team the policy does not list: 0 and no limit."""
    listed = policy.teams.get(team)
    if listed is None:
        return 0, None
    wait = listed.max_wait_minutes
    return listed.request_priority(), enqueued_at + timedelta(minutes=wait) if wait else None


def build_entry(
    submission: Submission,
    policy: Policy,
    principals: Principals,
    now: datetime,
    owner_tag: str = "owner",
    name_key: str = "",
) -> QueuedRequest:
    """The queue entry of a submission; RejectedEvent when the sender is no listed submitter (nobody to
    tell). A listed submitter's request that cannot be read still makes an entry (no demand), which
    ``submit`` refuses with the reason, so the owner hears why (``shape_problem``)."""
    candidates = [arn for team in policy.teams.values() for arn in team.submitters]
    submitter = principals.role_arn(submission.sender_id, candidates)
    team = policy.submitter_team(submitter) if submitter else None
    if submitter is None or team is None:
        raise RejectedEvent(f"sender {submission.sender_id.split(':', 1)[0]} is not a listed submitter")
    owner = submission.sender_id.split(":", 1)[1] if ":" in submission.sender_id else None
    name = job_name_for(team, submission.client_token, name_key)
    request = dict(submission.request) | {"HyperParameterTuningJobName": name}
    request["Tags"] = _governed_tags(request.get("Tags"), policy, team, owner, owner_tag)
    request = with_token(request, team, submission.client_token, name_key)
    demand = demand_of(request) if shape_problem(request) is None else {}
    priority, wait_until = queue_terms(policy, team, now)
    return QueuedRequest(
        client_token=submission.client_token,
        team=team,
        submitter=submitter,
        owner=owner,
        job_name=name,
        request=request,
        demand=demand,
        priority=priority,
        enqueued_at=now,
        fit_to_share=submission.fit_to_share,
        wait_until=wait_until,
    )
