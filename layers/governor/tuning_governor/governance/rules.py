"""The rule registry: each governance check is a class with a name, a config, its IAM needs and
``evaluate(...) -> Decision | None``.

Rules are pure: they read ``JobFacts`` (and ``CapacityFacts`` for concurrency) and the policy, and
say what they found. Whether a finding stops the job is decided by the service layer from the
policy's mode and the job's exemption; every rule that can stop needs the stop permission.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from tuning_governor.governance.facts import CapacityFacts, JobFacts, Trigger
from tuning_governor.policy import Policy

STOP_PERMISSION = "sagemaker:StopHyperParameterTuningJob"
IMPROVEMENT = 0.01  # "without > 1 % improvement", as AMT's BestObjectiveNotImproving counts it

Verdict = Literal["breach", "warning"]


class Decision(BaseModel):
    """What a rule found. ``numbers`` are the figures that decided it, for the audit trail and the report."""

    model_config = ConfigDict(frozen=True)

    rule: str
    verdict: Verdict
    job_key: str
    job_name: str
    team: str | None
    message: str
    numbers: dict[str, Any]
    at: datetime

    @property
    def wants_stop(self) -> bool:
        return self.verdict == "breach"


class Rule(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    triggers: ClassVar[frozenset[Trigger]]
    permissions: ClassVar[frozenset[str]]
    policy_keys: ClassVar[tuple[str, ...]]
    """Policy keys that configure the rule (its config schema is the Policy model's part at these keys)."""

    @abstractmethod
    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        """A breach or warning, or None when the job is within the rule."""

    def _decision(self, verdict: Verdict, job: JobFacts, message: str, **numbers: Any) -> Decision:
        return Decision(
            rule=self.name,
            verdict=verdict,
            job_key=job.job_key,
            job_name=job.job_name,
            team=job.team,
            message=message,
            numbers=numbers,
            at=job.now,
        )


class RuleRegistry:
    def __init__(self) -> None:
        self._rules: dict[str, Rule] = {}

    def register(self, rule_class: type[Rule]) -> type[Rule]:
        if rule_class.name in self._rules:
            raise ValueError(f"rule {rule_class.name!r} registered twice")
        self._rules[rule_class.name] = rule_class()
        return rule_class

    def __iter__(self) -> Iterator[Rule]:
        return iter(self._rules.values())

    def for_trigger(self, trigger: Trigger) -> list[Rule]:
        return [rule for rule in self._rules.values() if trigger in rule.triggers]

    def get(self, name: str) -> Rule:
        return self._rules[name]

    def permissions(self, trigger: Trigger | None = None) -> frozenset[str]:
        rules = self._rules.values() if trigger is None else self.for_trigger(trigger)
        return frozenset(p for rule in rules for p in rule.permissions)


registry = RuleRegistry()


@registry.register
class ConcurrencyRule(Rule):
    """A job arriving (going InProgress) must fit: usage + its demand <= the account and team limits."""

    name = "concurrency"
    description = "Concurrent training instances per type vs. the applied Service Quota and team policy"
    triggers = frozenset({"arrival"})
    permissions = frozenset({STOP_PERMISSION, "servicequotas:ListServiceQuotas"})
    policy_keys = ("quotas", "teams.<team>.instances")

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        if capacity is None or not job.demand:
            return None
        rows: dict[str, dict[str, Any]] = {}
        breaches: list[str] = []
        for itype, demand in sorted(job.demand.items()):
            usage = capacity.usage.get(itype, 0)
            row: dict[str, Any] = {"demand": demand, "usage": usage}
            account = capacity.account_limits.get(itype)
            if account is not None:
                row |= {"limit": account.limit, "limit_source": account.source, "headroom": account.limit - usage}
                if usage + demand > account.limit:
                    breaches.append(
                        f"{itype}: usage {usage} + demand {demand} > limit {account.limit} ({account.source})"
                    )
            else:
                row |= {"limit": None, "limit_source": "unknown (no policy quota, no Service Quota found)"}
            team_limit = capacity.team_limits.get(itype)
            if team_limit is not None:
                team_usage = capacity.team_usage.get(itype, 0)
                row |= {"team_limit": team_limit, "team_usage": team_usage, "team_headroom": team_limit - team_usage}
                if team_usage + demand > team_limit:
                    breaches.append(
                        f"{itype}: team {job.team} usage {team_usage} + demand {demand} > team limit {team_limit}"
                    )
            rows[itype] = row
        if not breaches:
            return None
        return self._decision("breach", job, "; ".join(breaches), instance_types=rows)


@registry.register
class BudgetRule(Rule):
    """Spent (finished trials) >= budget stops the job; a projection over budget warns once."""

    name = "budget"
    description = "Dollar budget per tuning job: spent, and projected from the mean trial cost"
    triggers = frozenset({"trial"})
    permissions = frozenset({STOP_PERMISSION})
    policy_keys = ("defaults.budget_usd", "teams.<team>.budget_usd", "budget_tag", "prices")

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        budget = policy.budget_for(job.tags)
        if budget.usd is None or job.spent_usd is None:
            return None
        spent = job.spent_usd
        source = {
            "tag": f"tag {policy.budget_tag}",
            "team": f"team {job.team} budget",
            "default": "policy default budget",
        }.get(budget.source, str(budget.source))
        numbers: dict[str, Any] = {
            "spent_usd": spent,
            "budget_usd": budget.usd,
            "budget_source": source,
            "trials_finished": job.trials_finished,
        }
        if spent >= budget.usd:
            return self._decision(
                "breach", job, f"spent ${spent:,.2f} >= budget ${budget.usd:,.2f} ({source})", **numbers
            )
        if job.max_trials and job.trials_finished:
            remaining = max(0, job.max_trials - job.trials_finished)
            mean = spent / job.trials_finished
            projected = spent + mean * remaining
            if projected > budget.usd:
                numbers |= {"projected_usd": projected.quantize(Decimal("0.01")), "remaining_trials": remaining}
                return self._decision(
                    "warning",
                    job,
                    f"projected ${projected:,.2f} > budget ${budget.usd:,.2f} ({source}):"
                    f" ${spent:,.2f} spent on {job.trials_finished} trials, {remaining} to go",
                    **numbers,
                )
        return None


@registry.register
class RuntimeRule(Rule):
    """A tuning job running max_runtime_hours or longer is stopped (0 = off)."""

    name = "runtime"
    description = "Runtime cap per tuning job"
    triggers = frozenset({"arrival", "trial", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    policy_keys = ("defaults.max_runtime_hours",)

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        cap_hours = policy.defaults.max_runtime_hours
        if not cap_hours or job.created_at is None:
            return None
        cap = round(cap_hours * 3600)
        elapsed = int((job.now - job.created_at).total_seconds())
        if elapsed < cap:
            return None
        return self._decision(
            "breach",
            job,
            f"running {elapsed / 3600:.2f} h >= cap {cap_hours:g} h",
            runtime_seconds=elapsed,
            cap_seconds=cap,
        )


def trials_since_improvement(values: list[float], minimize: bool) -> int:
    """Completed trials since the last one that beat the best so far by more than 1 %."""
    best: float | None = None
    since = 0
    for value in values:
        if best is None:
            best, since = value, 0
            continue
        margin = abs(best) * IMPROVEMENT
        improved = value < best - margin if minimize else value > best + margin
        if improved:
            best, since = value, 0
        else:
            since += 1
    return since


@registry.register
class StagnationRule(Rule):
    """Stop after N completed trials in a row without > 1 % improvement of the best objective (0 = off)."""

    name = "stagnation"
    description = "Completed trials without improving the best objective by more than 1 %"
    triggers = frozenset({"trial", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    policy_keys = ("defaults.stagnation_trials",)

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        limit = policy.defaults.stagnation_trials
        if not limit:
            return None
        since = trials_since_improvement(job.completed_objectives, minimize=job.objective_type == "Minimize")
        if since < limit:
            return None
        best = (min if job.objective_type == "Minimize" else max)(job.completed_objectives)
        return self._decision(
            "breach",
            job,
            f"{since} completed trials without > 1 % improvement (limit {limit}); best {best:.6g}",
            trials_without_improvement=since,
            limit=limit,
            best_objective=best,
        )


@registry.register
class FailedTrialsRule(Rule):
    """Stop after N failed trials (0 = off)."""

    name = "failed-trials"
    description = "Failed trials per tuning job"
    triggers = frozenset({"trial"})
    permissions = frozenset({STOP_PERMISSION})
    policy_keys = ("defaults.max_failed_trials",)

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        limit = policy.defaults.max_failed_trials
        if not limit or job.trials_failed < limit:
            return None
        return self._decision(
            "breach", job, f"{job.trials_failed} failed trials >= limit {limit}", failed=job.trials_failed, limit=limit
        )
