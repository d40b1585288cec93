"""The items of the governor's table, as values: what each store adapter writes and reads back.

The key design and access patterns are in :mod:`tuning_governor.adapters.store` (the DynamoDB adapter,
which owns the table). This module holds what both store adapters share, so they write the same item
shapes: keys, the attributes of each item, what recording a trial adds to the running totals (its
job's and its team's month totals, the ``month#<YYYY-MM>#<total>`` attributes of the team's ``RUNNING``
item), and the retention of each kind of row. Nothing here talks to AWS.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tuning_governor.domain.cost import usd
from tuning_governor.governance.capacity import Ledger, Reservation
from tuning_governor.governance.spend import MONTH_PREFIX, month_key, split_by_month
from tuning_governor.models.sagemaker import TRAINING_RUNNING

if TYPE_CHECKING:
    from tuning_governor.domain.pricing import RegionCatalog
    from tuning_governor.governance.rules import Decision
    from tuning_governor.models.records import JobSummary, TrialRecord
    from tuning_governor.models.training_job import TrainingJob
    from tuning_governor.models.tuning_job import TuningJob

# A delivery claim older than this is presumed abandoned by a crashed invocation.
CLAIM_TIMEOUT = timedelta(minutes=5)
# The sparse gsi1 partition of decisions with a step still to do (see ``decision_claim``).
PENDING_STEPS = "STEP#pending"
# The table's TTL attribute (template.yaml TimeToLiveSpecification): epoch seconds, a DynamoDB Number.
EXPIRY_ATTRIBUTE = "expires_at"
# Delivery and decision rows only stop a report or a decision being made twice; a tuning job cannot run
# longer than 182.5 days, but its reports and decisions are made within days of the event that claims
# them, so after 90 days they have done their work. A monitor-mode decision on a job still running after
# that is reported once more (a reminder), never acted on twice (stops are requested once per job).
CLAIM_RETENTION = timedelta(days=90)
# A trial row makes its counting exactly-once for as long as events about it can arrive: while its job
# runs (ResourceLimits.MaxRuntimeInSeconds <= 15,768,000 s = 182.5 days), so a shorter retention is refused.
MIN_TRIAL_RETENTION_DAYS = 200
# The capacity ledger: one item holding every admitted tuning job's reservation and a version.
LEDGER_KEY = {"pk": "CAPACITY", "sk": "LEDGER"}


def expires_at(start: datetime, retention: timedelta) -> int:
    """The TTL value for a row that may go ``retention`` after ``start``: whole epoch seconds."""
    return int((start + retention).timestamp())


def iso(value: datetime) -> str:
    """Fixed-width UTC ISO time, so string order is time order in condition expressions."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds")


def plain(value: Any) -> Any:
    """Make a JSON-ish value storable: floats become Decimal, datetimes ISO strings (None stays NULL)."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def job_pk(job_key: str) -> str:
    return f"JOB#{job_key}"


def team_pk(team: str) -> str:
    return f"TEAM#{team}"


def trial_sk(training_job_name: str) -> str:
    return f"TRIAL#{training_job_name.lower()}"


def decision_sk(rule: str, verdict: str) -> str:
    return f"DECISION#{rule}#{verdict}"


def job_partition(
    items: list[dict[str, Any]],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """A job's items (``Store.items``) as its META item, its trial items and its decision items."""
    meta = next((item for item in items if item.get("sk") == "META"), None)
    trials = [item for item in items if str(item.get("sk", "")).startswith("TRIAL#")]
    decisions = [item for item in items if str(item.get("sk", "")).startswith("DECISION#")]
    return meta, trials, decisions


def team_decision_sk(rule: str, verdict: str, month: str) -> str:
    return f"DECISION#{rule}#{verdict}#{month}"


def delivery_sk(kind: str, channel: str) -> str:
    return f"DELIVERY#{kind}#{channel}"


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


def trial_deltas(record: TrialRecord) -> dict[str, Any]:
    """What recording ``record`` ADDs to its job item, per attribute (numbers, or sets of types)."""
    deltas: dict[str, Any] = {
        "trials_recorded": 1,
        f"trials_{record.status.lower()}": 1,
        "billable_instance_seconds": record.billable_instance_seconds,
        "warm_pool_instance_seconds": record.warm_pool_instance_seconds,
    }
    if record.cost_usd is not None:
        deltas["cost_usd"] = record.cost_usd + (record.warm_pool_cost_usd or Decimal(0))
        deltas["spot_savings_usd"] = record.spot_savings_usd or Decimal(0)
        if record.spot:
            # The discount running spot trials of this job accrue at: billed / on-demand equivalent.
            deltas["spot_billed_usd"] = record.cost_usd
            deltas["spot_on_demand_usd"] = record.cost_usd + (record.spot_savings_usd or Decimal(0))
    else:
        deltas["unpriced_trials"] = 1
        deltas["unpriced_types"] = set(record.unpriced_types) or {"unknown"}
    if record.approximate_types:
        # Priced on the fallback (highest price in another region): the pricing rule reports it.
        deltas["approximate_types"] = set(record.approximate_types)
    return deltas


def job_after_trial(job: dict[str, Any] | None, record: TrialRecord) -> dict[str, Any]:
    """The job item ``job`` (as read; None: none yet) once ``record`` is recorded on it: its totals
    grown by :func:`trial_deltas` and the trial out of its running trials, as DynamoDB applies them."""
    after = dict(job or {"pk": job_pk(record.job_key), "sk": "META"})
    for attribute, delta in trial_deltas(record).items():
        if isinstance(delta, set):
            after[attribute] = set(after.get(attribute) or set()) | delta
        else:
            after[attribute] = Decimal(str(after.get(attribute) or 0)) + Decimal(str(delta))
    running = dict(after.get("running") or {})
    running.pop(record.training_job_name.lower(), None)
    after["running"] = running
    return after


def team_month_deltas(record: TrialRecord) -> dict[str, Any]:
    """What recording ``record`` ADDs to its team's item: per month it ran in (``month#<YYYY-MM>#``
    attributes), its share of the cost; the trial is counted in the month it ended."""
    end = record.end_time or record.event_time
    if record.cost_usd is None:
        months = {month_key(end): Decimal(0)}
    else:
        months = split_by_month(record.start_time, end, record.cost_usd + (record.warm_pool_cost_usd or Decimal(0)))
    share_total = sum(months.values(), Decimal(0))
    deltas: dict[str, Any] = {}
    for month, share in months.items():
        prefix = f"{MONTH_PREFIX}{month}#"
        deltas[f"{prefix}trials"] = 1 if month == month_key(end) else 0
        if record.cost_usd is None:
            deltas[f"{prefix}unpriced_trials"] = 1
            continue
        deltas[f"{prefix}finished_usd"] = share
        if record.spot and share_total:
            fraction = share / share_total
            deltas[f"{prefix}spot_billed_usd"] = usd(record.cost_usd * fraction)
            on_demand = record.cost_usd + (record.spot_savings_usd or Decimal(0))
            deltas[f"{prefix}spot_on_demand_usd"] = usd(on_demand * fraction)
    return deltas


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
    """A team's pending decision for ``month`` (``TEAM#<team>`` / ``DECISION#<rule>#<verdict>#<month>``)."""
    key = {"pk": team_pk(decision.team or ""), "sk": team_decision_sk(decision.rule, decision.verdict, month)}
    return key | _pending(decision, "team-decision", mode, now) | {"month": month, "job_key": decision.job_key}


# -- standalone training jobs and warm pools ------------------------------------------------------------------------
def training_job_attributes(job: TrainingJob, *, team: str | None, event_time: datetime) -> dict[str, Any]:
    """What ``upsert_training_job`` sets on a standalone training job's item."""
    modified = iso(job.last_modified_time or event_time)
    return {
        "status": job.status,
        "last_modified": modified,
        "instances": job.instances(),
        "gsi1pk": "TRAINING#Active" if job.status in TRAINING_RUNNING else "TRAINING#Ended",
        "gsi1sk": modified,
        "job_name": job.name,
        "team": team or "",
    }


def warm_pool_tracked(job: TrainingJob) -> bool:
    """Whether a training job's warm pool has a holder to write or release: it shows a warm-pool status,
    or asked for a pool (KeepAlivePeriodInSeconds > 0). Otherwise ``set_warm_pool`` writes nothing."""
    status = job.warm_pool_status.status if job.warm_pool_status else None
    keep_alive = job.resource_config.keep_alive_period_in_seconds if job.resource_config else None
    return status is not None or bool(keep_alive)


def warm_pool_item(job: TrainingJob, *, team: str | None) -> dict[str, Any] | None:
    """The row of a warm pool that holds its instances (Available); None for any other status."""
    status = job.warm_pool_status.status if job.warm_pool_status else None
    if status != "Available":
        return None
    return {
        "pk": f"WARMPOOL#{job.name.lower()}",
        "sk": "META",
        "gsi1pk": "WARMPOOL#Available",
        "gsi1sk": job.name.lower(),
        "instances": job.instances(),
        "team": team or "",
        "job_name": job.name,
    }


def price_catalog_item(catalog: RegionCatalog) -> dict[str, Any]:
    return {
        "pk": f"PRICES#{catalog.region}",
        "sk": "CATALOG",
        "gsi1pk": "PRICES",
        "gsi1sk": catalog.region,
        "type": "price-catalog",
    } | catalog.model_dump(mode="python")


# -- capacity ledger ---------------------------------------------------------------------------------------------------
def reservation_item(reservation: Reservation) -> dict[str, Any]:
    return {
        "team": reservation.team,
        "on_demand": dict(reservation.on_demand),
        "spot": dict(reservation.spot),
        "plan": reservation.plan,
        "slots": reservation.slots,
        "per_trial_on_demand": dict(reservation.per_trial_on_demand),
        "per_trial_spot": dict(reservation.per_trial_spot),
        "created": reservation.created,
        "over_limit": reservation.over_limit,
        "version": reservation.version,
    }


def new_ledger_item(put: dict[str, Reservation]) -> dict[str, Any]:
    """The ledger item the first commit creates (version 1)."""
    return LEDGER_KEY | {
        "type": "capacity-ledger",
        "version": 1,
        "reservations": {k: reservation_item(r) for k, r in put.items()},
    }


def ledger_from_item(item: dict[str, Any] | None) -> Ledger:
    """The ledger an item holds (version 0 and no reservations when there is none yet)."""
    item = item or {}
    reservations = {
        str(key): reservation_from_item(str(key), value) for key, value in (item.get("reservations") or {}).items()
    }
    return Ledger(version=int(item.get("version") or 0), reservations=reservations)


def reservation_from_item(job_key: str, value: dict[str, Any]) -> Reservation:
    def counts(raw: Any) -> dict[str, int]:
        return {str(k): int(v) for k, v in (raw or {}).items()}

    return Reservation(
        job_key=job_key,
        team=str(value["team"]) if value.get("team") else None,
        on_demand=counts(value.get("on_demand")),
        spot=counts(value.get("spot")),
        plan=str(value.get("plan") or ""),
        slots=int(value.get("slots") or 1),
        per_trial_on_demand=counts(value.get("per_trial_on_demand")),
        per_trial_spot=counts(value.get("per_trial_spot")),
        created=str(value.get("created") or ""),
        over_limit=bool(value.get("over_limit")),
        version=int(value.get("version") or 0),
    )
