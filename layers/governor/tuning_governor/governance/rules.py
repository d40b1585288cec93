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

from tuning_governor.domain.cost import SECONDS_PER_HOUR
from tuning_governor.governance.capacity import first_fit
from tuning_governor.governance.facts import CapacityFacts, JobFacts, Trigger
from tuning_governor.governance.spend import budget_crossing
from tuning_governor.policy import Policy

STOP_PERMISSION = "sagemaker:StopHyperParameterTuningJob"

#: breach: the rule wants the job stopped; warning: report only; grace: a breach whose stop waits for
#: the rule's grace period (governance/grace.py).
Verdict = Literal["breach", "warning", "grace"]


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
    """A job arriving (going InProgress) must fit: usage + its demand <= the account and team limits.

    Spot and on-demand demand are judged against their own quotas; a job with prioritized
    InstanceConfigs fits when one of its plans fits, tried in priority order (``first_fit``).
    """

    name = "concurrency"
    description = "Concurrent training instances per type vs. the applied Service Quota and team policy"
    triggers = frozenset({"arrival"})
    permissions = frozenset(
        {STOP_PERMISSION, "servicequotas:ListServiceQuotas", "servicequotas:ListAWSDefaultServiceQuotas"}
    )
    policy_keys = ("quotas", "spot_quotas", "teams.<team>.instances")

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


@registry.register
class BudgetRule(Rule):
    """Spent (finished + accruing), plus what a stop still bills, >= the job's budget stops the job; a
    projection over budget warns once.

    ``spent`` = billed cost of the finished trials + cost accrued so far by the running trials, judged on
    every event of the job, on every sweep and on the one-time check at the projected crossing (see
    ``check_at``). Trials go on billing until they are ``Stopped``, so the breach is
    ``spent + burn x defaults.budget_stop_lead_seconds >= budget``: the bill then ends near the budget,
    not a stop's worth of burn past it. The projection counts each running trial at the mean
    finished-trial cost (or what it has accrued, if more) and each trial not yet started at the mean:
    ``projected = spent + sum(max(0, mean - accrued_i) for running trials) + mean x (max_trials -
    finished - running)``. Spend that includes an unpriced trial is never judged (never $0).
    """

    name = "budget"
    description = "Dollar budget per tuning job: spent (finished + accrued), and projected from the mean trial cost"
    triggers = frozenset({"arrival", "trial", "trial-progress", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    policy_keys = (
        "defaults.job_budget_usd",
        "teams.<team>.job_budget_usd",
        "budget_tag",
        "prices",
        "defaults.budget_stop_lead_seconds",
    )

    @staticmethod
    def check_at(policy: Policy, job: JobFacts) -> datetime | None:
        """When the job's running trials bring it to a breach if nothing else changes (None: no budget,
        unpriced spend, or nothing burning). The governor asks for a one-time check then."""
        budget = policy.budget_for(job.tags).usd
        if budget is None or job.spent_usd is None or job.spent_accrued_usd is None:
            return None
        return budget_crossing(
            spent=job.spent_usd,
            burn_usd_per_hour=job.burn_usd_per_hour,
            budget=budget,
            lead_seconds=policy.defaults.budget_stop_lead_seconds,
            now=job.now,
        )

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        budget = policy.budget_for(job.tags)
        accrued = job.spent_accrued_usd
        if budget.usd is None or job.spent_usd is None or accrued is None:
            return None
        spent = job.spent_usd
        finished = job.spent_finished_usd if job.spent_finished_usd is not None else spent - accrued
        running = job.running_trials
        lead = policy.defaults.budget_stop_lead_seconds
        during_stop = job.burn_usd_per_hour * lead / SECONDS_PER_HOUR
        source = {
            "tag": f"tag {policy.budget_tag}",
            "team": f"team {job.team} job budget",
            "default": "policy default job budget",
        }.get(budget.source, str(budget.source))
        numbers: dict[str, Any] = {
            "spent_usd": spent,
            "spent_finished_usd": finished,
            "spent_accrued_usd": accrued,
            "budget_usd": budget.usd,
            "budget_source": source,
            "trials_finished": job.trials_finished,
            "running_trials": running,
            "burn_usd_per_hour": job.burn_usd_per_hour.quantize(Decimal("0.01")),
            "stop_lead_seconds": lead,
            "at_stop_usd": (spent + during_stop).quantize(Decimal("0.01")),
        }
        if job.spend_approximate:
            numbers["approximate"] = True
        spent_text = f"${spent:,.2f}"
        if running or accrued:
            spent_text += f" (${finished:,.2f} finished + ${accrued:,.2f} accrued by {running} running trials)"
        if spent >= budget.usd:
            return self._decision(
                "breach", job, f"spent {spent_text} >= budget ${budget.usd:,.2f} ({source})", **numbers
            )
        if spent + during_stop >= budget.usd:
            return self._decision(
                "breach",
                job,
                f"spent {spent_text} + ${during_stop:,.2f} billed while a stop takes effect"
                f" ({lead} s at ${job.burn_usd_per_hour:,.2f}/h) >= budget ${budget.usd:,.2f} ({source})",
                **numbers,
            )
        if job.max_trials and job.trials_finished:
            mean = finished / job.trials_finished
            not_started = max(0, job.max_trials - job.trials_finished - running)
            running_rest = sum((max(Decimal(0), mean - a) for a in job.running_accrued_usd), Decimal(0))
            projected = spent + running_rest + mean * not_started
            if projected > budget.usd:
                numbers |= {
                    "projected_usd": projected.quantize(Decimal("0.01")),
                    "remaining_trials": max(0, job.max_trials - job.trials_finished),
                    "mean_trial_usd": mean.quantize(Decimal("0.01")),
                }
                return self._decision(
                    "warning",
                    job,
                    f"projected ${projected:,.2f} > budget ${budget.usd:,.2f} ({source}): spent {spent_text},"
                    f" {job.trials_finished} trials finished at ${mean:,.2f} on average,"
                    f" {max(0, job.max_trials - job.trials_finished)} to go",
                    **numbers,
                )
        return None


@registry.register
class TeamBudgetRule(Rule):
    """A team's spend in the calendar month (UTC) over all its tuning jobs >= ``monthly_budget_usd``
    stops the team's running jobs; a projection over it warns once per team and month.

    Spend = billed cost of the team's trials that finished in the month + cost accrued this month by its
    running trials. Projection, linear in the month so far: ``projected = spent x month length /
    elapsed``, with ``elapsed`` counted as at least one day so the first hours of a month do not
    project wildly. While any of the month's trials is unpriced the spend is a lower bound: crossing the
    budget is still a breach, but nothing is projected.
    """

    name = "team-budget"
    description = "Monthly dollar budget per team over all its tuning jobs (finished + accrued)"
    triggers = frozenset({"arrival", "trial", "trial-progress", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    policy_keys = ("teams.<team>.monthly_budget_usd",)
    MIN_ELAPSED_SECONDS: ClassVar[int] = 86400

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        month = job.team_month
        if month is None:
            return None
        budget = policy.team_monthly_budget(month.team)
        if budget is None:
            return None
        spent = month.spent_usd
        numbers: dict[str, Any] = {
            "team": month.team,
            "month": month.month,
            "spent_usd": spent,
            "spent_finished_usd": month.finished_usd,
            "spent_accrued_usd": month.accrued_usd,
            "budget_usd": budget,
            "budget_source": f"teams.{month.team}.monthly_budget_usd",
            "running_trials": month.running_trials,
        }
        if month.lower_bound:
            numbers |= {"unpriced_trials": month.unpriced_trials, "lower_bound": True}
        where = f"team {month.team} in {month.month}"
        if spent >= budget:
            return self._decision(
                "breach",
                job,
                f"{where}: spent ${spent:,.2f} (${month.finished_usd:,.2f} finished + ${month.accrued_usd:,.2f}"
                f" accrued by {month.running_trials} running trials) >= monthly budget ${budget:,.2f}",
                **numbers,
            )
        if month.lower_bound:
            return None
        length = Decimal(str((month.month_end - month.month_start).total_seconds()))
        elapsed = Decimal(str((job.now - month.month_start).total_seconds()))
        elapsed = min(length, max(Decimal(self.MIN_ELAPSED_SECONDS), elapsed))
        projected = spent * length / elapsed
        if projected <= budget:
            return None
        numbers |= {
            "projected_usd": projected.quantize(Decimal("0.01")),
            "projection": "spent x month length / elapsed (elapsed at least 1 day)",
        }
        return self._decision(
            "warning",
            job,
            f"{where}: projected ${projected:,.2f} > monthly budget ${budget:,.2f} at the pace so far"
            f" (${spent:,.2f} spent)",
            **numbers,
        )


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


@registry.register
class StagnationRule(Rule):
    """Stop a job whose best objective has not improved by 1 % or more for N completed trials, M minutes
    or $D of spend (each 0 = off); the first measure that reaches its limit decides.

    Judged from the state kept on the job item (``JobFacts.stagnation``): trials since the last
    improvement, minutes from the improving trial's end to ``now`` (the event's time, or the sweep's
    clock), and dollars = the job's spend now (finished + accrued) - its spend at the improvement.
    Nothing is judged before the first completed trial with an objective value.
    """

    name = "stagnation"
    description = "Trials, minutes or dollars without improving the best objective by 1 % or more"
    triggers = frozenset({"trial", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    policy_keys = ("defaults.stagnation_trials", "defaults.stagnation_minutes", "defaults.stagnation_usd")

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        defaults = policy.defaults
        trials_limit, minutes_limit, usd_limit = (
            defaults.stagnation_trials,
            defaults.stagnation_minutes,
            defaults.stagnation_usd,
        )
        state = job.stagnation
        if not (trials_limit or minutes_limit or usd_limit) or state is None or state.improved_at is None:
            return None
        minutes = max(Decimal(0), Decimal(str((job.now - state.improved_at).total_seconds())) / 60)
        usd = (
            job.spent_usd - state.spent_at_improvement
            if job.spent_usd is not None and state.spent_at_improvement is not None
            else None
        )
        tripped: list[tuple[str, Any, str]] = []
        if trials_limit and state.trials_since >= trials_limit:
            tripped.append(("trials", trials_limit, f"{state.trials_since} completed trials"))
        if minutes_limit and minutes >= Decimal(str(minutes_limit)):
            tripped.append(("minutes", minutes_limit, f"{minutes:.1f} minutes"))
        if usd_limit and usd is not None and usd >= usd_limit:
            tripped.append(("usd", usd_limit, f"${usd:,.2f}"))
        if not tripped:
            return None
        measure, limit, amount = tripped[0]
        unit = {"trials": " trials", "minutes": " minutes", "usd": ""}[measure]
        shown_limit = f"${limit:,.2f}" if measure == "usd" else f"{limit:g}{unit}"
        best = state.best_objective
        return self._decision(
            "breach",
            job,
            f"{amount} without improving the best {state.metric} ({state.direction}) by 1 % or more"
            f" (limit {shown_limit}); best {best:.6g}",
            measure=measure,
            limit=limit,
            tripped=[name for name, _, _ in tripped],
            trials_without_improvement=state.trials_since,
            minutes_since_improvement=_plain_number(minutes.quantize(Decimal("0.01"))),
            usd_since_improvement=usd,
            spent_usd=job.spent_usd,
            spent_at_improvement_usd=state.spent_at_improvement,
            best_objective=best,
            objective_metric=state.metric,
            direction=state.direction,
            improved_at=state.improved_at.isoformat(),
            limits={"trials": trials_limit, "minutes": minutes_limit, "usd": usd_limit},
        )


def _plain_number(value: Decimal) -> int | Decimal:
    """30.00 minutes reads as 30."""
    return int(value) if value == value.to_integral_value() else value


@registry.register
class TagsRule(Rule):
    """Warn, once per job, about governance tags it cannot honour: a budget it cannot read, an
    exemption value other than true/false, or a key that matches only when case is ignored.

    Never stops anything: the job is governed as if the tag were absent (the next budget source
    applies; a mis-cased exemption key exempts nothing). Judged on arrival and on each sweep (tags
    changed later are seen within a sweep interval), not on trial events: a claim per trial event
    would only find the decision already made.
    """

    name = "tags"
    description = "Governance tags with a value or a key spelling the governor cannot honour"
    triggers = frozenset({"arrival", "sweep"})
    permissions = frozenset()
    policy_keys = ("budget_tag", "exempt_tag")

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        problems = policy.tag_warnings(job.tags)
        if not problems:
            return None
        return self._decision(
            "warning",
            job,
            "; ".join(p.message for p in problems),
            tags={p.key: {"value": p.value, "problem": p.problem} for p in problems},
        )


@registry.register
class FailedTrialsRule(Rule):
    """Stop after N failed trials (0 = off). Judged on trial events, and by the sweep (a breach waiting
    for its grace period is stopped at its time even when no trial ends then)."""

    name = "failed-trials"
    description = "Failed trials per tuning job"
    triggers = frozenset({"trial", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    policy_keys = ("defaults.max_failed_trials",)

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        limit = policy.defaults.max_failed_trials
        if not limit or job.trials_failed < limit:
            return None
        return self._decision(
            "breach", job, f"{job.trials_failed} failed trials >= limit {limit}", failed=job.trials_failed, limit=limit
        )


@registry.register
class PricingRule(Rule):
    """Warn, once per job, when its instance types are priced approximately or not at all.

    A type with no price in the job's region is judged at its highest price in any region (marked
    approximate); a type priced nowhere leaves the job's spend unknown, so a budget cannot be judged on
    it: this rule says so, naming the type, instead of letting the budget guard go quiet.
    """

    name = "pricing"
    description = "Instance types without a price in the job's region (approximate) or anywhere (unpriced)"
    triggers = frozenset({"arrival", "trial", "sweep"})
    permissions = frozenset()
    policy_keys = ("prices",)

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        if not job.unpriced_types and not job.approximate_types:
            return None
        region = job.region or "its region"
        budget = policy.budget_for(job.tags)
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
