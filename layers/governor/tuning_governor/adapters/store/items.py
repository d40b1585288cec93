"""The items of a job's partition and of a team's, as values: what both store adapters write and read back.

Keys and expiries are in :mod:`tuning_governor.adapters.store.keys`; the arithmetic of the running
totals (what a trial adds) in :mod:`tuning_governor.domain.totals`. Nothing here talks to AWS.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tuning_governor.adapters.store.keys import (
    CLAIM_RETENTION,
    EXPIRY_ATTRIBUTE,
    PENDING_STEPS,
    PENDING_TEAM_STEPS,
    decision_sk,
    delivery_sk,
    expires_at,
    iso,
    job_pk,
    team_decision_sk,
    team_pk,
    trial_sk,
)
from tuning_governor.domain.large_batch.arrival import checked_request
from tuning_governor.domain.spend import MONTH_PREFIX

if TYPE_CHECKING:
    from tuning_governor.models.decisions import Decision
    from tuning_governor.models.records import JobSummary, TrialRecord
    from tuning_governor.models.tuning_job import TuningJob


# -- tuning jobs ---------------------------------------------------------------------------------------------
def job_modified(job: TuningJob, event_time: datetime) -> str:
    """The time an upsert is ordered by: the job's LastModifiedTime, else the event's time."""
    return iso(job.last_modified_time or event_time)


def job_attributes(
    job: TuningJob, *, region: str, team: str | None, owner: str | None, event_time: datetime
) -> dict[str, Any]:
    """What ``upsert_job`` sets on the job's META item (attributes whose value is None are left alone)."""
    created = iso(job.creation_time or event_time)
    attributes: dict[str, Any] = {
        "job_name": job.name,
        "region": region,
        "status": job.status,
        "last_modified": job_modified(job, event_time),
        "creation_time": created,
        "max_parallel": job.max_parallel,
        "demand": job.demand(),
        "admission": job.admission_options(),
        # Whether admission was judged without the configuration (a thin event Describe did not complete).
        "arrival_facts": "incomplete" if job.lacks_arrival_facts() else "complete",
        # Whether its trials run on managed spot (None when definitions disagree or are unknown):
        # a running trial whose event lacks EnableManagedSpotTraining is judged by this.
        "spot_training": spot_training(job),
        "tags": dict(job.tags),
        # The objective per definition (a trial is judged on its own definition's direction).
        "objectives": [o.model_dump() for o in job.objectives()] or None,
        "gsi1pk": f"STATUS#{job.status}",
        "gsi1sk": created,
        "max_trials": job.max_trials,
        "strategy": job.config.strategy if job.config else None,
        "objective_name": job.objective.metric_name if job.objective else None,
        "objective_type": job.objective.type if job.objective else None,
        "arn": job.arn,
        "team": team,
        "owner": owner,
        # The execution roles its trials run as: a team listing them is the job's team (policy.identity).
        "roles": job.role_arns() or None,
        # What the large-batch rule judges on arrival (absent for a job it has nothing to judge on).
        "batch_request": checked_request(job) or None,
    }
    return {name: value for name, value in attributes.items() if value is not None}


def spot_training(job: TuningJob) -> bool | None:
    flags = {definition.enable_managed_spot_training for definition in job.definitions()}
    return flags.pop() if len(flags) == 1 else None


def summary_item(summary: JobSummary) -> dict[str, Any]:
    return {"pk": job_pk(summary.job_key), "sk": "SUMMARY", "type": "summary"} | summary.model_dump(mode="python")


def summary_job_attributes(summary: JobSummary) -> dict[str, Any]:
    """What writing the summary sets on the job's META item: the job is terminal from then on."""
    return {
        "status": summary.status,
        "job_name": summary.job_name,
        "gsi1pk": f"STATUS#{summary.status}",
        "finalised_at": summary.finalised_at,
        "region": summary.region,
    }


def gaps_item(job_key: str, *, job_name: str, region: str, ended_at: datetime, missing: list[str]) -> dict[str, Any]:
    return {
        "pk": job_pk(job_key),
        "sk": "GAPS",
        "type": "summary-gaps",
        "gsi1pk": "GAPS",
        "gsi1sk": iso(ended_at),
        "job_name": job_name,
        "region": region,
        "ended_at": ended_at,
        "missing": sorted(missing),
    }


# -- trials ----------------------------------------------------------------------------------------------------
def trial_item(record: TrialRecord, retention: timedelta | None) -> dict[str, Any]:
    """A finished trial's row (expiring ``retention`` after the trial ended; None: kept)."""
    values: dict[str, Any] = {"pk": job_pk(record.job_key), "sk": trial_sk(record.training_job_name), "type": "trial"}
    values |= record.model_dump(mode="python")
    if retention is not None:
        ended = record.end_time or datetime.now(UTC)
        values[EXPIRY_ATTRIBUTE] = expires_at(ended, retention)
    return values


def month_totals(team_item: dict[str, Any], month: str) -> dict[str, Any]:
    """A team's totals for ``month`` from its item (``{}`` before its first trial of the month)."""
    prefix = f"{MONTH_PREFIX}{month}#"
    totals = {str(k).removeprefix(prefix): v for k, v in team_item.items() if str(k).startswith(prefix)}
    return (totals | {"team": team_item.get("team"), "month": month}) if totals else {}


# -- report deliveries --------------------------------------------------------------------------------------------
def delivery_claim(job_key: str, kind: str, channel: str, now: datetime, token: str | None = None) -> dict[str, Any]:
    """A claim on one report for one channel; ``token`` names the attempt that holds it, so that the
    attempt can take it again when the answer to its own claim was lost (see ``claim_delivery``)."""
    item: dict[str, Any] = {
        "pk": job_pk(job_key),
        "sk": delivery_sk(kind, channel),
        "state": "sending",
        "claimed_at": now,
        EXPIRY_ATTRIBUTE: expires_at(now, CLAIM_RETENTION),
    }
    if token:
        item["claim_token"] = token
    return item


def delivery_sent(job_key: str, kind: str, channel: str, now: datetime) -> dict[str, Any]:
    return {
        "pk": job_pk(job_key),
        "sk": delivery_sk(kind, channel),
        "state": "sent",
        "sent_at": now,
        EXPIRY_ATTRIBUTE: expires_at(now, CLAIM_RETENTION),
    }


# -- decisions -----------------------------------------------------------------------------------------------------
def _pending(decision: Decision, kind: str, mode: str, now: datetime) -> dict[str, Any]:
    """What every pending decision item holds, a job's or a team's: the decision as first claimed."""
    return {
        "type": kind,
        "rule": decision.rule,
        "verdict": decision.verdict,
        "mode": mode,
        "state": "pending",
        "message": decision.message,
        "numbers": decision.numbers,
        "at": decision.at,
        "claimed_at": now,
        "team": decision.team,
        EXPIRY_ATTRIBUTE: expires_at(now, CLAIM_RETENTION),
    }


def decision_claim(decision: Decision, mode: str, now: datetime, *, own_report: bool = True) -> dict[str, Any]:
    """A pending decision item, as ``open_decision`` writes it (claimed here with the ledger commit).

    While pending it is listed under ``gsi1pk = STEP#pending`` (sorted by claim time), so the sweep
    finds the steps a failed invocation left unfinished without a scan; ``finish_decision`` removes it.
    """
    key = {"pk": job_pk(decision.job_key), "sk": decision_sk(decision.rule, decision.verdict)}
    return (
        key
        | _pending(decision, "decision", mode, now)
        | {
            "job_name": decision.job_name,
            # False for a job's part of a team decision: the team's one report covers it.
            "own_report": own_report,
            "gsi1pk": PENDING_STEPS,
            "gsi1sk": f"{iso(now)}#{key['pk']}#{key['sk']}",
        }
    )


def team_decision_claim(decision: Decision, month: str, mode: str, now: datetime) -> dict[str, Any]:
    """A team's pending decision for ``month`` (``TEAM#<team>`` / ``DECISION#<rule>#<verdict>#<month>``).

    While pending it is listed under ``gsi1pk = TEAMSTEP#pending`` (sorted by claim time), so the sweep
    finishes one whose team has no job left to be judged; ``finish_team_decision`` removes it."""
    key = {"pk": team_pk(decision.team or ""), "sk": team_decision_sk(decision.rule, decision.verdict, month)}
    return (
        key
        | _pending(decision, "team-decision", mode, now)
        | {
            "month": month,
            "job_key": decision.job_key,
            "gsi1pk": PENDING_TEAM_STEPS,
            "gsi1sk": f"{iso(now)}#{key['pk']}#{key['sk']}",
        }
    )
