"""The pricing rule: instance types without a price in the job's region, or anywhere (warns only)."""

from __future__ import annotations

from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules.base import Rule, registry
from tuning_governor.models.decisions import Decision
from tuning_governor.policy import Policy
from tuning_governor.policy.rules.pricing import PRICING


@registry.register
class PricingRule(Rule):
    """Warn, once per job, when its instance types are priced approximately or not at all.

    A type with no price in the job's region is judged at its highest price in any region (marked
    approximate); a type priced nowhere leaves the job's spend unknown, so a budget cannot be judged on
    it: this rule says so, naming the type, instead of letting the budget guard go quiet.
    """

    spec = PRICING
    triggers = frozenset({"arrival", "trial", "sweep"})
    permissions = frozenset()
    late_ok = True

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        if not job.unpriced_types and not job.approximate_types:
            return None
        region = job.region or "its region"
        budget = job.budget_in(policy)
        parts: list[str] = []
        if job.unpriced_types:
            types = ", ".join(job.unpriced_types)
            judged = (
                f"the budget ${budget.usd:,.2f} cannot be judged while they run"
                if budget.usd is not None
                else "no budget applies"
            )
            parts.append(f"no price for {types} in any region or in the policy: spend is unknown (never $0), {judged}")
        if job.approximate_types:
            notes = "; ".join(
                f"{t} {job.price_notes.get(t, 'at its highest known price')}" for t in job.approximate_types
            )
            parts.append(
                f"no price in {region} for {', '.join(job.approximate_types)}: judged approximately at {notes}"
            )
        return self._decision(
            "warning",
            job,
            "; ".join(parts) + " (add prices to the policy or refresh the price catalog)",
            region=job.region,
            unpriced_types=list(job.unpriced_types),
            approximate_types=list(job.approximate_types),
            prices=dict(job.price_notes),
            budget_usd=budget.usd,
            budget_judged=not job.unpriced_types,
        )
