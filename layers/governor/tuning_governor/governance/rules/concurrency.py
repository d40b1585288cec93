"""The concurrency rule: a job arriving must fit the account's and its team's instance limits."""

from __future__ import annotations

from typing import Any

from tuning_governor.governance.capacity import first_fit
from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules.base import STOP_PERMISSION, Rule, registry
from tuning_governor.models.decisions import Decision
from tuning_governor.policy import Policy
from tuning_governor.policy.rules.concurrency import CONCURRENCY


@registry.register
class ConcurrencyRule(Rule):
    """A job arriving (going InProgress) must fit: usage + its demand <= the account and team limits.

    Spot and on-demand demand are judged against their own quotas; a job with prioritized
    InstanceConfigs fits when one of its plans fits, tried in priority order (``first_fit``).
    """

    spec = CONCURRENCY
    triggers = frozenset({"arrival"})
    permissions = frozenset(
        {STOP_PERMISSION, "servicequotas:ListServiceQuotas", "servicequotas:ListAWSDefaultServiceQuotas"}
    )

    admission_judged = True

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        plans = [p for p in job.admission_plans() if p.on_demand or p.spot]
        if capacity is None or not plans:
            return None
        chosen, judged = first_fit(plans, job.team, capacity)
        if chosen is not None:
            return None
        first = judged[0]
        numbers: dict[str, Any] = {"instance_types": first.rows}
        if first.spot_rows:
            numbers["spot_instance_types"] = first.spot_rows
        if first.totals:
            numbers["totals"] = first.totals
        if len(judged) > 1:
            numbers["plans"] = [
                {
                    "plan": j.plan.label,
                    "instance_types": j.rows,
                    "spot_instance_types": j.spot_rows,
                    "totals": j.totals,
                    "breaches": j.breaches,
                }
                for j in judged
            ]
            message = f"none of {len(judged)} instance configurations fits; first ({first.plan.label}): " + "; ".join(
                first.breaches
            )
        else:
            message = "; ".join(first.breaches)
        return self._decision("breach", job, message, **numbers)
