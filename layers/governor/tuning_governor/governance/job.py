"""The job as a rule sees it: its facts at the moment of a decision, from the typed job (``domain.job``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from tuning_governor.domain import spend, stop_latency
from tuning_governor.domain.cost import pricing_facts
from tuning_governor.domain.job import JobState
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.governance.facts import JobFacts
from tuning_governor.policy import Budget, Policy
from tuning_governor.policy.rules.budgets import BudgetSettings
from tuning_governor.ports import PriceStore


def job_facts(
    job: JobState | Mapping[str, Any],
    *,
    now: datetime,
    policy: Policy,
    catalog: PriceCatalog | None = None,
) -> JobFacts:
    """The job as its item records it at ``now``. With ``catalog``, the running trials' accrued cost is
    priced too (``spent_usd`` = finished + accrued); without, only finished trials count."""
    if not isinstance(job, JobState):
        job = JobState.from_item(job)
    finished = job.finished_usd
    accrual = (
        spend.accrue(job.running, now, catalog, default_region=job.region, spot_discount=job.spot_discount)
        if catalog is not None
        else spend.Accrual(usd=Decimal(0))
    )
    total = finished + accrual.usd if finished is not None and accrual.usd is not None else None
    return JobFacts(
        job_key=job.key,
        job_name=job.name,
        team=policy.team_of(job.tags, job.roles),
        tags=job.tags,
        roles=job.roles,
        status=job.status,
        created_at=job.created,
        now=now,
        max_parallel=job.max_parallel,
        max_trials=job.max_trials,
        demand=job.demand,
        spent_usd=total,
        spent_finished_usd=finished,
        spent_accrued_usd=accrual.usd,
        running_trials=accrual.trials,
        running_accrued_usd=accrual.per_trial,
        burn_usd_per_hour=accrual.burn_usd_per_hour,
        unpriced_running_types=accrual.unpriced_types,
        spend_approximate=accrual.approximate,
        trials_finished=job.trials_recorded,
        trials_failed=job.trials_failed,
        objective_type=job.objective_type,
        stagnation=job.stagnation,
        objectives=job.objectives,
        admission=job.admission,
        arrival_facts_incomplete=job.item.get("arrival_facts") == "incomplete",
        batch_request=dict(job.item.get("batch_request") or {}),
    )


def pricing_update(facts: JobFacts, job: JobState, catalog: PriceCatalog) -> dict[str, Any]:
    """How well the job is priced, as fields of its facts: its demand's types judged in its region
    against the catalog in force, plus the unpriced and approximate types its recorded trials found."""
    found = pricing_facts(
        facts.demand,
        job.region,
        catalog,
        recorded_unpriced=job.unpriced_types,
        recorded_approximate=job.approximate_types,
    )
    return {
        "region": job.region,
        "unpriced_types": list(found.unpriced_types),
        "approximate_types": list(found.approximate_types),
        "price_notes": dict(found.notes),
    }


def stop_lead_update(
    demand: Mapping[str, int], budget: Budget | None, policy: Policy, store: PriceStore
) -> dict[str, Any]:
    """The stop lead learned for the job's instance families (one read per family), as a field of its
    facts; for a job with a budget only (nothing else reads it: else nothing)."""
    if budget is None or budget.usd is None:
        return {}
    learned = {family: store.stop_latencies(family) for family in sorted(families_of(demand))}
    lead = stop_latency.job_lead(demand, learned, BudgetSettings.of(policy.defaults).budget_stop_lead_seconds)
    return {"stop_lead_seconds": lead}


def families_of(demand: Mapping[str, int]) -> set[str]:
    return {stop_latency.instance_family(instance_type) for instance_type in demand}
