"""The job as a rule sees it: its facts at the moment of a decision, built from the job item."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from tuning_governor.domain.cost import pricing_facts
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.governance import spend
from tuning_governor.governance.facts import AdmissionPlan, JobFacts
from tuning_governor.governance.stagnation import DefinitionObjective, StagnationState, objectives_from_item
from tuning_governor.policy import Policy


def iso_time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds")


def time_of(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def job_facts(
    meta: dict[str, Any],
    *,
    now: datetime,
    policy: Policy,
    catalog: PriceCatalog | None = None,
) -> JobFacts:
    """The job as its META item records it at ``now``. With ``catalog``, the running trials' accrued
    cost is priced too (``spent_usd`` = finished + accrued); without, only finished trials count."""
    tags = {str(k): str(v) for k, v in (meta.get("tags") or {}).items()}
    job_key = str(meta["pk"]).removeprefix("JOB#")
    spent = meta.get("cost_usd")
    unpriced = int(meta.get("unpriced_trials") or 0)
    # Any unpriced trial makes "spent" unknown: a budget is never judged on a partial sum.
    finished = None if unpriced else Decimal(str(spent or 0))
    accrual = (
        spend.accrue(
            spend.running_trials(meta),
            now,
            catalog,
            default_region=meta.get("region"),
            spot_discount=spend.spot_factor(meta.get("spot_billed_usd"), meta.get("spot_on_demand_usd")),
        )
        if catalog is not None
        else spend.Accrual(usd=Decimal(0))
    )
    total = finished + accrual.usd if finished is not None and accrual.usd is not None else None
    return JobFacts(
        job_key=job_key,
        # A job first seen through a trial's event (its own event not yet delivered) is named by its key:
        # the name in the trial's TuningJobArn, in lower case as ARNs spell it.
        job_name=str(meta.get("job_name") or job_key),
        team=policy.team_of(tags),
        tags=tags,
        status=str(meta.get("status") or "Unknown"),
        created_at=time_of(meta.get("creation_time")),
        now=now,
        max_parallel=int(meta.get("max_parallel") or 1),
        max_trials=int(meta["max_trials"]) if meta.get("max_trials") is not None else None,
        demand={str(k): int(v) for k, v in (meta.get("demand") or {}).items()},
        spent_usd=total,
        spent_finished_usd=finished,
        spent_accrued_usd=accrual.usd,
        running_trials=accrual.trials,
        running_accrued_usd=accrual.per_trial,
        burn_usd_per_hour=accrual.burn_usd_per_hour,
        unpriced_running_types=accrual.unpriced_types,
        spend_approximate=accrual.approximate,
        trials_finished=int(meta.get("trials_recorded") or 0),
        trials_failed=int(meta.get("trials_failed") or 0),
        objective_type=meta.get("objective_type"),
        stagnation=StagnationState.from_item(meta.get("stagnation")),
        objectives=objectives_of(meta),
        admission=[AdmissionPlan.model_validate(plan) for plan in meta.get("admission") or []],
    )


def state_time(meta: dict[str, Any] | None) -> datetime | None:
    """The latest moment the job item's state reflects: the end of its latest recorded trial
    (``last_trial_end``) or the start of its latest running trial."""
    meta = meta or {}
    times = [time_of(meta.get("last_trial_end"))] + [trial.start for trial in spend.running_trials(meta)]
    known = [t for t in times if t is not None]
    return max(known, default=None)


def with_pricing_facts(facts: JobFacts, meta: Mapping[str, Any], catalog: PriceCatalog) -> JobFacts:
    """``facts`` with how well the job is priced: its demand's types judged in its region against the
    catalog in force, plus the unpriced and approximate types its recorded trials found."""
    region = meta.get("region") or None
    found = pricing_facts(
        facts.demand,
        str(region) if region else None,
        catalog,
        recorded_unpriced=[str(t) for t in meta.get("unpriced_types") or ()],
        recorded_approximate=[str(t) for t in meta.get("approximate_types") or ()],
    )
    return facts.model_copy(
        update={
            "region": str(region) if region else None,
            "unpriced_types": list(found.unpriced_types),
            "approximate_types": list(found.approximate_types),
            "price_notes": dict(found.notes),
        }
    )


def objectives_of(meta: Mapping[str, Any]) -> list[DefinitionObjective]:
    """The job's objectives per definition, from its item."""
    objectives = objectives_from_item(meta.get("objectives"))
    if not objectives and meta.get("objective_name") and meta.get("objective_type"):
        # A job item written before objectives were kept per definition.
        objectives = [DefinitionObjective(metric=str(meta["objective_name"]), type=str(meta["objective_type"]))]
    return objectives
