"""Enforce means enforce: a breach recorded as ``would-stop`` under monitor is judged again once the
policy says enforce (README, "Rolling out"), for job-scope and team-month rules alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import Decision
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.ports import DecisionStore


def under_enforce(
    decision: Decision, job: JobFacts, policy: Policy, services: EngineServices[DecisionStore]
) -> Decision:
    """A breach found under enforce that the job already had recorded while the policy was monitor
    (``would-stop``) is judged again, as its own decision (verdict ``enforced``): the rollout's
    promise that switching to enforce stops what monitor mode only reported, at the first judgement
    after the switch. Claimed once like any decision, so it stops once. One GetItem, only for a
    breach under enforce of a job that is not exempt; the reverse (a decision made under enforce,
    judged again under monitor) is never re-judged, and monitor never stops."""
    if decision.verdict != "breach" or not policy.enforcing or policy.is_exempt(job.tags):
        return decision
    stored = services.store.get_decision(decision.job_key, decision.rule, "breach")
    if stored is None or stored.get("action") != "would-stop":
        return decision
    decided = str(stored.get("at"))
    return decision.model_copy(
        update={
            "verdict": "enforced",
            "message": f"{decision.message}; decided in monitor mode at {decided}, now judged under enforce",
            "numbers": decision.numbers | {"monitor_decision_at": decided},
        }
    )
