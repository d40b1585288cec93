"""The table's keys, expiries and value normalisation: what every item of the governor's table shares.

The key design and access patterns: docs/reference/table-items.md. Counting is exactly-once: see
:mod:`tuning_governor.adapters.store.trials`.

Expiry (the table's TTL attribute ``expires_at``, epoch seconds): report deliveries and decisions (job
and team) expire 90 days after they were claimed; finished trials ``trial_retention_days`` after they
ended when the stack sets ``TrialRetentionDays`` (0, the default: kept); every other item is kept.

Both tables (DynamoDB's and ``governor_client.memory``'s) hold the keys built here. Nothing here talks to AWS.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

# A delivery claim older than this is presumed abandoned by a crashed invocation.
CLAIM_TIMEOUT = timedelta(minutes=5)
#: How long a decision's steps (or a team decision) belong to the caller that leased them: longer than
#: the longest function timeout (300 s), so a lease runs out only once its owner cannot be running.
DECISION_LEASE = timedelta(minutes=5)
# The sparse gsi1 partition of decisions with a step still to do (see ``decision_claim``).
PENDING_STEPS = "STEP#pending"
# The sparse gsi1 partition of team decisions still to finish (see ``team_decision_claim``).
PENDING_TEAM_STEPS = "TEAMSTEP#pending"
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
SWEPT_PK = "SWEPT"
"""The partition of the sweep's last-swept time per place (sk ``<account>/<region>``: ``app.sweep.places``)."""


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


def team_decision_sk(rule: str, verdict: str, month: str) -> str:
    return f"DECISION#{rule}#{verdict}#{month}"


def delivery_sk(kind: str, channel: str) -> str:
    return f"DELIVERY#{kind}#{channel}"


def job_partition(
    items: list[dict[str, Any]],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """A job's items (``Store.items``) as its META item, its trial items and its decision items."""
    meta = next((item for item in items if item.get("sk") == "META"), None)
    trials = [item for item in items if str(item.get("sk", "")).startswith("TRIAL#")]
    decisions = [item for item in items if str(item.get("sk", "")).startswith("DECISION#")]
    return meta, trials, decisions


def trial_retention(days: int) -> timedelta | None:
    """A store's trial retention from its ``trial_retention_days``: None for 0 (kept), else that many
    days, at least ``MIN_TRIAL_RETENTION_DAYS`` (ValueError below that)."""
    if days != 0 and days < MIN_TRIAL_RETENTION_DAYS:
        raise ValueError(f"trial retention must be 0 (keep) or at least {MIN_TRIAL_RETENTION_DAYS} days, got {days}")
    return timedelta(days=days) if days else None
