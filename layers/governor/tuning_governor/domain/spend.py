"""Accrued spend: what running trials have cost so far, and how spend falls into calendar months.

Pure: no AWS. The store keeps one small entry per running trial (``RunningTrial``) on the job's item
and on its team's ``RUNNING`` item; the engine turns those entries into dollars with the price catalog
at the moment of a decision, so a budget is judged on

    spent = billed cost of the finished trials + accrued cost of the running trials

where a running trial accrues ``elapsed since TrainingStartTime x instances x price / 3600`` (elapsed
capped at the trial's StoppingCondition, since SageMaker ends it there). A managed-spot trial accrues
at the discount already observed on the finished spot trials it is compared with (the job's, or the
team's month), ``billed / on-demand equivalent``; with none observed yet, at the on-demand price.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from pydantic import ConfigDict

from tuning_governor.domain.cost import SECONDS_PER_HOUR, cluster_rate, usd
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.domain.stored_item import Remembered, StoredItem
from tuning_governor.model_base import GovernorModel

_ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$")
_ENTRY_KEYS = frozenset({"job_key", "trial", "start", "instances", "spot", "region", "max_seconds"})
RUNNING_PREFIX = "running#"
"""Attribute-name prefix of a running trial's entry on a team's RUNNING item (one top-level attribute
per trial, so adding and removing one is a single SET / REMOVE whatever else the item holds). On a
job's META item the entries are the values of its ``running`` map."""
MONTH_PREFIX = "month#"
"""Attribute-name prefix of a team's month totals on the same item: ``month#<YYYY-MM>#finished_usd``
(and ``trials``, ``unpriced_trials``, ``spot_billed_usd``, ``spot_on_demand_usd``), so recording a trial
touches one team item whatever months it ran in (ADD works on top-level attributes only)."""


class RunningTrial(GovernorModel):
    """A trial that has started billing (TrainingStartTime) and not finished, as the store keeps it."""

    model_config = ConfigDict(frozen=True)

    job_key: str
    trial: str
    """The training job's name, lower-case."""
    start: datetime
    instances: dict[str, int]
    spot: bool = False
    region: str | None = None
    max_seconds: int | None = None
    """SageMaker ends the trial by then (MaxRuntimeInSeconds, or MaxWaitTimeInSeconds for spot)."""

    def to_item(self) -> dict[str, Any]:
        return self.model_dump(mode="python", exclude_none=True)


def running_trials(item: Mapping[str, Any] | None) -> list[RunningTrial]:
    """The running-trial entries of a job's META item (its ``running`` map) or of a team's RUNNING
    item (its ``running#...`` attributes), oldest first."""
    item = item or {}
    values = list((item.get("running") or {}).values())
    if item.get("sk") != "META":  # a job's META item keeps its entries in ``running`` only
        values += [value for name, value in item.items() if str(name).startswith(RUNNING_PREFIX)]
    stored = isinstance(item, StoredItem)  # its entries never change either: each is built once
    out = [_ENTRIES(value, item.get("pk"), stored=stored) for value in values if isinstance(value, Mapping)]
    return sorted(out, key=lambda t: (t.start, t.trial))


def running_entry(value: Mapping[str, Any]) -> RunningTrial:
    """One entry as ``RunningTrial.to_item`` wrote it and the store gives it back (ISO start, Decimal
    counts), built without a second validation; any other shape or type is validated."""
    start, instances = value.get("start"), value.get("instances", {})
    spot, region, seconds = value.get("spot", False), value.get("region"), value.get("max_seconds")
    simple = (
        type(start) is str
        and _ISO_UTC.match(start) is not None
        and type(value.get("job_key")) is str
        and type(value.get("trial")) is str
        and isinstance(instances, dict)
        and all(type(k) is str and _count(v) for k, v in instances.items())
        and type(spot) is bool
        and (region is None or type(region) is str)
        and (seconds is None or _count(seconds))
        and not value.keys() - _ENTRY_KEYS
    )
    if not simple:
        return RunningTrial.model_validate(dict(value))
    return RunningTrial.from_fields(
        {
            "job_key": value["job_key"],
            "trial": value["trial"],
            "start": datetime.fromisoformat(str(start)),
            "instances": {k: int(v) for k, v in instances.items()},
            "spot": spot,
            "region": region,
            "max_seconds": int(seconds) if seconds is not None else None,
        }
    )


_ENTRIES = Remembered(
    lambda value, _pk: running_entry(value), slot=lambda value, pk: (pk, value.get("job_key"), value.get("trial"))
)  # a trial's entry on its job's item and on its team's: two slots


def _count(value: Any) -> bool:
    """A whole number as the store gives it back (Decimal) or as written (int)."""
    return (type(value) is Decimal and value.is_finite() and value == value.to_integral_value()) or type(value) is int


def spot_factor(billed_usd: Any, on_demand_usd: Any) -> Decimal | None:
    """Share of the on-demand price that finished spot trials were billed (None: nothing observed)."""
    billed = Decimal(str(billed_usd or 0))
    on_demand = Decimal(str(on_demand_usd or 0))
    if on_demand <= 0:
        return None
    return min(Decimal(1), max(Decimal(0), billed / on_demand))


class Accrual(GovernorModel):
    """What running trials have accrued. ``usd`` is None when a trial's instance type has no price."""

    model_config = ConfigDict(frozen=True)

    usd: Decimal | None
    per_trial: list[Decimal] = []
    """Accrued per priced trial, in the order given."""
    priced_usd: Decimal = Decimal(0)
    """The accrual of the priced trials (a lower bound when ``usd`` is None)."""
    unpriced_types: list[str] = []
    approximate: bool = False
    trials: int = 0
    burn_usd_per_hour: Decimal = Decimal(0)
    """What the priced trials still running at ``now`` add per hour (spot at the same discount); trials
    past their StoppingCondition add nothing, since SageMaker has ended them."""


def accrue(
    trials: Iterable[RunningTrial],
    now: datetime,
    catalog: PriceCatalog,
    *,
    default_region: str | None,
    spot_discount: Decimal | None,
    since: datetime | None = None,
) -> Accrual:
    """Cost accrued by ``trials`` from their start (or ``since``, if later) until ``now``."""
    total = Decimal(0)
    per_trial: list[Decimal] = []
    unpriced: set[str] = set()
    approximate = False
    count = 0
    burn = Decimal(0)
    for trial in trials:
        count += 1
        begin = max(trial.start, since) if since is not None else trial.start
        end = now
        running = True
        if trial.max_seconds is not None:
            ends_by = trial.start + timedelta(seconds=trial.max_seconds)
            running = now < ends_by
            end = min(end, ends_by)
        seconds = max(Decimal(0), Decimal(str((end - begin).total_seconds())))
        rate = cluster_rate(trial.instances, trial.region or default_region or "", catalog)
        if rate.hourly_usd is None:
            unpriced.update(rate.unpriced_types or trial.instances or {"unknown"})
            continue
        approximate = approximate or rate.approximate
        hourly = rate.hourly_usd * (spot_discount if trial.spot and spot_discount is not None else 1)
        cost = usd(hourly * seconds / SECONDS_PER_HOUR)
        burn += hourly if running else 0
        per_trial.append(cost)
        total += cost
    return Accrual(
        usd=None if unpriced else total,
        per_trial=per_trial,
        priced_usd=total,
        unpriced_types=sorted(unpriced),
        approximate=approximate,
        trials=count,
        burn_usd_per_hour=burn,
    )


MAX_CROSSING_SECONDS = Decimal(366 * 86400)
"""A crossing further away than a year is none: no trial runs that long (SageMaker's longest training
runtime is 28 days), each judgement estimates it again, and a budget of any size (or a burn of a cent
an hour) never projects past ``datetime``'s range."""


def budget_crossing(
    *, spent: Decimal, burn_usd_per_hour: Decimal, budget: Decimal, lead_seconds: int, now: datetime
) -> datetime | None:
    """When ``spent`` growing at ``burn_usd_per_hour`` comes within ``lead_seconds`` of burn of
    ``budget`` (the moment a stop must be asked for so that billing ends at the budget); None when
    nothing burns or the crossing is more than a year away. Assumes the burn stays as it is: a trial
    that starts or ends changes it, and the job is judged again then."""
    if burn_usd_per_hour <= 0:
        return None
    left = budget - spent - burn_usd_per_hour * lead_seconds / SECONDS_PER_HOUR
    seconds = max(Decimal(0), left) * SECONDS_PER_HOUR / burn_usd_per_hour
    if seconds > MAX_CROSSING_SECONDS:
        return None
    return now + timedelta(seconds=float(seconds))


# -- calendar months (UTC) ------------------------------------------------------------------------------
def month_key(at: datetime) -> str:
    """``YYYY-MM`` of ``at`` in UTC."""
    return at.astimezone(UTC).strftime("%Y-%m")


def month_bounds(at: datetime) -> tuple[datetime, datetime]:
    """Start (inclusive) and end (exclusive) of the UTC calendar month holding ``at``."""
    utc = at.astimezone(UTC)
    start = datetime(utc.year, utc.month, 1, tzinfo=UTC)
    end = datetime(utc.year + (utc.month == 12), utc.month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def split_by_month(start: datetime | None, end: datetime | None, amount: Decimal) -> dict[str, Decimal]:
    """``amount`` spread over the UTC months of ``[start, end)`` in proportion to the time in each.

    A trial's bill belongs to the months it ran in; without both times (or an empty interval) it all
    goes to the month of ``end`` (else ``start``). The parts add up to ``amount`` exactly: the last
    month takes the rounding remainder.
    """
    if start is None or end is None or end <= start:
        anchor = end or start
        return {month_key(anchor): amount} if anchor is not None else {}
    seconds = Decimal(str((end - start).total_seconds()))
    parts: dict[str, Decimal] = {}
    cursor = start
    while cursor < end:
        _, month_end = month_bounds(cursor)
        stop = min(month_end, end)
        parts[month_key(cursor)] = usd(amount * Decimal(str((stop - cursor).total_seconds())) / seconds)
        cursor = stop
    last = list(parts)[-1]
    parts[last] += amount - sum(parts.values())
    return parts
