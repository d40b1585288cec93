"""Governance in action: gather facts, ask the rules, then stop, record and report — once.

A decision is claimed in DynamoDB before it is acted on, so a duplicated event never stops or
reports twice, and a retried event finishes what a failed attempt started. Monitor mode and the
exemption tag change only the action: the decision is still recorded and reported.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.reports import decision_report
from tuning_governor.governance.capacity import Quota, capacity_facts
from tuning_governor.governance.facts import CapacityFacts, JobFacts, Trigger
from tuning_governor.governance.rules import Decision, registry
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy
from tuning_governor.reporting import deliver

if TYPE_CHECKING:
    from tuning_governor.service import Services


def _dt(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def job_facts(meta: dict[str, Any], *, now: datetime, policy: Policy, objectives: list[float]) -> JobFacts:
    tags = {str(k): str(v) for k, v in (meta.get("tags") or {}).items()}
    spent = meta.get("cost_usd")
    unpriced = int(meta.get("unpriced_trials") or 0)
    return JobFacts(
        job_key=str(meta["pk"]).removeprefix("JOB#"),
        job_name=str(meta.get("job_name") or meta["pk"]),
        team=policy.team_of(tags),
        tags=tags,
        status=str(meta.get("status") or "Unknown"),
        created_at=_dt(meta.get("creation_time")),
        now=now,
        max_parallel=int(meta.get("max_parallel") or 1),
        max_trials=int(meta["max_trials"]) if meta.get("max_trials") is not None else None,
        demand={str(k): int(v) for k, v in (meta.get("demand") or {}).items()},
        # Any unpriced trial makes "spent" unknown: a budget is never judged on a partial sum.
        spent_usd=None if unpriced else Decimal(str(spent or 0)),
        trials_finished=int(meta.get("trials_recorded") or 0),
        trials_failed=int(meta.get("trials_failed") or 0),
        objective_type=meta.get("objective_type"),
        completed_objectives=objectives,
    )


def _capacity(job: JobFacts, policy: Policy, services: Services) -> CapacityFacts:
    quotas: dict[str, Quota | None] = {}
    for itype in job.demand:
        quotas[itype] = services.quotas.training_quota(itype) if services.quotas else None
    team_limits: dict[str, int] = {}
    if job.team:
        for itype in job.demand:
            limit = policy.team_limit(job.team, itype)
            if limit is not None:
                team_limits[itype] = limit
    return capacity_facts(
        job_key=job.job_key,
        team=job.team,
        demand=job.demand,
        holders=services.store.holders(),
        policy_quotas=policy.quotas,
        service_quotas=quotas,
        team_limits=team_limits,
    )


def _objectives(job_key: str, policy: Policy, services: Services) -> list[float]:
    if not policy.defaults.stagnation_trials:
        return []  # only stagnation needs the trial history: skip the query otherwise
    records = [
        r for r in services.store.trial_records(job_key) if r.status == "Completed" and r.objective_value is not None
    ]
    records.sort(key=lambda r: (r.end_time or r.event_time, r.training_job_name))
    return [r.objective_value for r in records if r.objective_value is not None]


def govern(trigger: Trigger, job_key: str, now: datetime, services: Services) -> list[dict[str, Any]]:
    """Evaluate the rules for ``trigger`` on one job and act on what they find."""
    policy = services.policy()
    meta = services.store.get_job(job_key)
    if meta is None or meta.get("status") in TUNING_TERMINAL:
        return []
    facts = job_facts(meta, now=now, policy=policy, objectives=_objectives(job_key, policy, services))
    capacity = _capacity(facts, policy, services) if trigger == "arrival" else None
    outcomes = []
    for rule in registry.for_trigger(trigger):
        decision = rule.evaluate(policy, facts, capacity)
        if decision is not None:
            outcomes.append(act(decision, facts, policy, services))
    return outcomes


def act(decision: Decision, job: JobFacts, policy: Policy, services: Services) -> dict[str, Any]:
    """Record the decision once, stop the job when the policy says so, report it once."""
    mode = policy.mode
    if not services.store.claim_decision(decision, mode, services.clock()):
        return {
            "rule": decision.rule,
            "verdict": decision.verdict,
            "mode": mode,
            "action": "already-decided",
            "at": decision.at,
        }
    if decision.verdict != "breach":
        action, detail = "warned", "reported only"
    elif policy.is_exempt(job.tags):
        action, detail = "exempt", f"tag {policy.exempt_tag}=true; would have stopped"
    elif mode != "enforce":
        action, detail = "would-stop", "monitor mode: no stop call made"
    else:
        result = services.sagemaker.stop_tuning_job(job.job_name)
        stopping = result in {"stop-requested", "already-stopping"}
        if stopping:
            # Only a stop that took effect marks the job: it separates our stop from early stopping.
            services.store.mark_stop_requested(job.job_key, decision.at)
        action = "stopped" if stopping else result
        detail = result
        metrics.add_metric(name="JobsStopped", unit=MetricUnit.Count, value=1)
    services.store.finish_decision(decision, action, detail)
    metrics.add_metric(name="Decisions", unit=MetricUnit.Count, value=1)
    logger.info(
        "governance decision",
        extra={"rule": decision.rule, "verdict": decision.verdict, "mode": mode, "action": action, "job": job.job_name},
    )
    report = decision_report(
        rule=decision.rule,
        verdict=decision.verdict,
        job_key=decision.job_key,
        job_name=decision.job_name,
        team=decision.team,
        message=decision.message,
        numbers=decision.numbers,
        at=decision.at.isoformat(),
        mode=mode,
        action=action,
        detail=detail,
    )
    deliver(report, services.store, services.notifiers, services.clock)
    return {"rule": decision.rule, "verdict": decision.verdict, "mode": mode, "action": action, "at": decision.at}
