"""Judge a tuning job before it exists: what the arrival rules would decide, without acting.

``tuning-governor check`` (client side) calls this use case so a request is judged by the very rules
the governor runs when the job goes InProgress (``registry.for_trigger("arrival")``), on the capacity
the caller supplies: holders read from the deployed table, or none (the policy's quotas on an empty
account). Nothing is written, claimed, stopped or reported; the decisions come back as values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from tuning_governor.domain.capacity import AdmissionPlan, Holder
from tuning_governor.domain.cost import pricing_facts
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.governance.capacity import capacity_facts
from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules import registry
from tuning_governor.models.decisions import Decision
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.policy import Policy
from tuning_governor.ports.quotas import Quotas


@dataclass(frozen=True)
class Preflight:
    """The arrival rules' decisions on the capacity given (``now``) and on an empty account (``alone``:
    a concurrency breach there means the job can never run under these limits)."""

    now: list[Decision]
    alone: list[Decision]
    team: str | None
    exempt: bool
    enforcing: bool


def _facts(job: TuningJob, policy: Policy, catalog: PriceCatalog, region: str, at: datetime) -> JobFacts:
    priced = pricing_facts(job.demand(), region, catalog)
    plans = [AdmissionPlan.model_validate(p) for p in job.admission_options()]
    return JobFacts(
        job_key=job.key,
        job_name=job.name,
        team=policy.team_of(job.tags, job.role_arns()),
        tags=job.tags,
        roles=job.role_arns(),
        status="InProgress",
        created_at=at,
        now=at,
        max_parallel=job.max_parallel,
        max_trials=job.max_trials,
        demand=job.demand(),
        spent_usd=Decimal(0),
        trials_finished=0,
        trials_failed=0,
        objective_type=job.objective.type if job.objective else None,
        objectives=job.objectives(),
        admission=plans,
        region=region,
        unpriced_types=list(priced.unpriced_types),
        approximate_types=list(priced.approximate_types),
        price_notes=dict(priced.notes),
    )


def _capacity(facts: JobFacts, policy: Policy, holders: Iterable[Holder], quotas: Quotas | None) -> CapacityFacts:
    """As admission builds it (governance.admission): every type's limits, from the policy and, when
    ``quotas`` is given, the account's applied Service Quotas (the lower applies)."""
    plans = facts.admission_plans()
    on_demand = sorted({t for p in plans for t in p.on_demand})
    spot = sorted({t for p in plans for t in p.spot})
    team_limits = {t: v for t in {*on_demand, *spot} if (v := policy.team_limit(facts.team, t)) is not None}
    return capacity_facts(
        job_key=facts.job_key,
        team=facts.team,
        demand=dict.fromkeys(on_demand, 0),
        holders=holders,
        policy_quotas=policy.quotas,
        service_quotas={t: quotas.training_quota(t) if quotas else None for t in on_demand},
        team_limits=team_limits,
        spot_demand=spot,
        policy_spot_quotas=policy.spot_quotas,
        spot_service_quotas={t: quotas.spot_training_quota(t) if quotas else None for t in spot},
        total_quota=quotas.total_training_quota() if quotas and on_demand else None,
        spot_total_quota=quotas.total_spot_training_quota() if quotas and spot else None,
    )


def _judge(policy: Policy, facts: JobFacts, capacity: CapacityFacts) -> list[Decision]:
    decisions = [r.evaluate(policy, facts, capacity) for r in registry.for_trigger("arrival")]
    return [d for d in decisions if d is not None]


def preflight(
    job: TuningJob,
    *,
    policy: Policy,
    catalog: PriceCatalog,
    region: str,
    at: datetime,
    holders: Iterable[Holder] = (),
    quotas: Quotas | None = None,
) -> Preflight:
    """The arrival rules on ``job`` (a request parsed as if it had just gone InProgress) at ``at``.

    ``holders``: what holds training instances now (empty: an idle account); ``quotas``: the account's
    Service Quotas (None: the policy's quotas alone; with them, the lower of the two applies).
    ``catalog`` should already carry the policy's prices (``PriceCatalog.with_policy_prices``).
    """
    facts = _facts(job, policy, catalog, region, at)
    return Preflight(
        now=_judge(policy, facts, _capacity(facts, policy, list(holders), quotas)),
        alone=_judge(policy, facts, _capacity(facts, policy, (), quotas)),
        team=facts.team,
        exempt=policy.is_exempt(job.tags),
        enforcing=policy.enforcing,
    )
