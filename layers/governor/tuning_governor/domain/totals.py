"""Running totals: what one finished trial adds to its job's and its team's months' totals.

Pure arithmetic on trial records (dollars, instance-seconds, trial counts, spot sums); both store
adapters write what these functions compute, so a job's or team's totals are the same on every adapter.
Nothing here knows the table's keys.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tuning_governor.domain.cost import usd
from tuning_governor.domain.spend import MONTH_PREFIX, month_key, split_by_month
from tuning_governor.models.keys import JOB_PREFIX

if TYPE_CHECKING:
    from collections.abc import Mapping

    from tuning_governor.models.records import TrialRecord


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


def added(totals: Mapping[str, Any], deltas: Mapping[str, Any]) -> dict[str, Any]:
    """``totals`` with ``deltas`` ADDed as DynamoDB adds them: numbers summed (from 0), sets joined."""
    after = dict(totals)
    for attribute, delta in deltas.items():
        if isinstance(delta, set):
            after[attribute] = set(after.get(attribute) or set()) | delta
        else:
            after[attribute] = Decimal(str(after.get(attribute) or 0)) + Decimal(str(delta))
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


def warm_pool_growth(old: TrialRecord, record: TrialRecord) -> tuple[int, Decimal | None]:
    """What a trial's later warm-pool figures (``record``) add to its job's totals over those recorded
    (``old``): instance-seconds, and dollars (None when either record is unpriced)."""
    extra_seconds = record.warm_pool_instance_seconds - old.warm_pool_instance_seconds
    if record.warm_pool_cost_usd is None or old.cost_usd is None:
        return extra_seconds, None
    return extra_seconds, record.warm_pool_cost_usd - (old.warm_pool_cost_usd or Decimal(0))


def warm_pool_team_deltas(record: TrialRecord, extra_usd: Decimal | None) -> dict[str, Any]:
    """What a trial's later warm-pool dollars (``extra_usd``, from :func:`warm_pool_growth`) add to its
    team's item: the month the trial ended gets them, as the trial's own cost (the retention follows
    the trial's end). Empty when there is nothing to add (unpriced, or no growth)."""
    if not extra_usd:
        return {}
    end = record.end_time or record.event_time
    return {f"{MONTH_PREFIX}{month_key(end)}#finished_usd": extra_usd}


def job_after_trial(job: dict[str, Any] | None, record: TrialRecord) -> dict[str, Any]:
    """The job item ``job`` (as read; None: none yet) once ``record`` is recorded on it: its totals
    grown by :func:`trial_deltas` and the trial out of its running
    trials, as DynamoDB applies them."""
    after = added(job or {"pk": f"{JOB_PREFIX}{record.job_key}", "sk": "META"}, trial_deltas(record))
    running = dict(after.get("running") or {})
    running.pop(record.training_job_name.lower(), None)
    after["running"] = running
    return after
