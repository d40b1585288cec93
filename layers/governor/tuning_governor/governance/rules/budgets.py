"""Dollar budgets: per job (finished + accrued, and projected) and per team and calendar month."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar

from tuning_governor.domain.cost import SECONDS_PER_HOUR
from tuning_governor.domain.job import JobState
from tuning_governor.domain.spend import budget_crossing
from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules.base import STOP_PERMISSION, Rule, registry
from tuning_governor.models.decisions import Decision
from tuning_governor.policy import Policy
from tuning_governor.policy.rules.budgets import BUDGET, TEAM_BUDGET, BudgetSettings


def stop_lead(policy: Policy, job: JobFacts) -> int:
    """Seconds of burn a stop still bills: learned from the account's stops of the job's instance
    families, else ``defaults.budget_stop_lead_seconds``."""
    if job.stop_lead_seconds is not None:
        return job.stop_lead_seconds
    return BudgetSettings.of(policy.defaults).budget_stop_lead_seconds


@registry.register
class BudgetRule(Rule):
    """Spent (finished + accruing), plus what a stop still bills, >= the job's budget stops the job; a
    projection over budget warns once.

    ``spent`` = billed cost of the finished trials + cost accrued so far by the running trials, judged on
    every event of the job, on every sweep and on the one-time check at the projected crossing (see
    ``check_at``). Trials go on billing until they are ``Stopped``, so the breach is
    ``spent + burn x lead >= budget``, the lead being the stop latency learned from the account's own
    stops of the job's instance families (``domain.stop_latency``; ``defaults.budget_stop_lead_seconds``
    until enough are known): the bill then ends near the budget,
    not a stop's worth of burn past it. The projection counts each running trial at the mean
    finished-trial cost (or what it has accrued, if more) and each trial not yet started at the mean:
    ``projected = spent + sum(max(0, mean - accrued_i) for running trials) + mean x (max_trials -
    finished - running)``. Spend that includes an unpriced trial is never judged (never $0).
    """

    spec = BUDGET
    triggers = frozenset({"arrival", "trial", "trial-progress", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    late_ok = True
    schedules_checks = True

    def switched_on(self, policy: Policy, job: JobState) -> bool:
        """A budget applies to the job (its tag, its team's or the default one)."""
        return policy.budget_for(job.tags, job.roles).usd is not None

    def check_at(self, policy: Policy, job: JobFacts) -> datetime | None:
        """When the job's running trials bring it to a breach if nothing else changes (None: no budget,
        unpriced spend, or nothing burning). The governor asks for a one-time check then."""
        budget = job.budget_in(policy).usd
        if budget is None or job.spent_usd is None or job.spent_accrued_usd is None:
            return None
        return budget_crossing(
            spent=job.spent_usd,
            burn_usd_per_hour=job.burn_usd_per_hour,
            budget=budget,
            lead_seconds=stop_lead(policy, job),
            now=job.now,
        )

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        budget = job.budget_in(policy)
        if budget.usd is None or job.spent_usd is None or job.spent_accrued_usd is None:
            return None
        spent = job.spent_usd
        lead = stop_lead(policy, job)
        during_stop = job.burn_usd_per_hour * lead / SECONDS_PER_HOUR
        source = {
            "tag": f"tag {policy.budget_tag}",
            "team": f"team {job.team} job budget",
            "default": "policy default job budget",
        }.get(budget.source, str(budget.source))
        numbers = self._numbers(job, budget.usd, source, lead, during_stop)
        spent_text = self._spent_text(job, numbers["spent_finished_usd"])
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
        return self._projection(job, budget=budget.usd, source=source, spent_text=spent_text, numbers=numbers)

    @staticmethod
    def _numbers(job: JobFacts, budget: Decimal, source: str, lead: int, during_stop: Decimal) -> dict[str, Any]:
        """The figures a decision of this rule records."""
        spent, accrued = job.spent_usd or Decimal(0), job.spent_accrued_usd or Decimal(0)
        numbers: dict[str, Any] = {
            "spent_usd": spent,
            "spent_finished_usd": job.spent_finished_usd if job.spent_finished_usd is not None else spent - accrued,
            "spent_accrued_usd": accrued,
            "budget_usd": budget,
            "budget_source": source,
            "trials_finished": job.trials_finished,
            "running_trials": job.running_trials,
            "burn_usd_per_hour": job.burn_usd_per_hour.quantize(Decimal("0.01")),
            "stop_lead_seconds": lead,
            "at_stop_usd": (spent + during_stop).quantize(Decimal("0.01")),
        }
        if job.spend_approximate:
            numbers["approximate"] = True
        return numbers

    @staticmethod
    def _spent_text(job: JobFacts, finished: Decimal) -> str:
        running, accrued = job.running_trials, job.spent_accrued_usd or Decimal(0)
        text = f"${job.spent_usd:,.2f}"
        if running or accrued:
            text += f" (${finished:,.2f} finished + ${accrued:,.2f} accrued by {running} running trials)"
        return text

    def _projection(
        self, job: JobFacts, *, budget: Decimal, source: str, spent_text: str, numbers: dict[str, Any]
    ) -> Decision | None:
        """A warning when the job's finished trials' mean cost, over its remaining and running trials,
        projects it over budget."""
        if not (job.max_trials and job.trials_finished):
            return None
        spent, finished = numbers["spent_usd"], numbers["spent_finished_usd"]
        mean = finished / job.trials_finished
        not_started = max(0, job.max_trials - job.trials_finished - job.running_trials)
        running_rest = sum((max(Decimal(0), mean - a) for a in job.running_accrued_usd), Decimal(0))
        projected = spent + running_rest + mean * not_started
        if projected <= budget:
            return None
        numbers |= {
            "projected_usd": projected.quantize(Decimal("0.01")),
            "remaining_trials": max(0, job.max_trials - job.trials_finished),
            "mean_trial_usd": mean.quantize(Decimal("0.01")),
        }
        return self._decision(
            "warning",
            job,
            f"projected ${projected:,.2f} > budget ${budget:,.2f} ({source}): spent {spent_text},"
            f" {job.trials_finished} trials finished at ${mean:,.2f} on average,"
            f" {max(0, job.max_trials - job.trials_finished)} to go",
            **numbers,
        )


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

    spec = TEAM_BUDGET
    triggers = frozenset({"arrival", "trial", "trial-progress", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    schedules_checks = True

    MIN_ELAPSED_SECONDS: ClassVar[int] = 86400
    #: A team's month is judged by every sweep (every 5 minutes by default): a one-time check is asked
    #: for only where the crossing comes before the next sweep could see it.
    CHECK_HORIZON: ClassVar[timedelta] = timedelta(minutes=5)

    def check_at(self, policy: Policy, job: JobFacts) -> datetime | None:
        """When the team's running trials bring its month to its budget if nothing else changes (None:
        no budget, a lower-bound spend, or nothing burning): a one-time check then, so the stop does not
        wait for the next event of the job, which may be late."""
        month = job.team_month
        budget = policy.team_monthly_budget(month.team) if month is not None else None
        if month is None or budget is None or month.lower_bound:
            return None
        at = budget_crossing(
            spent=month.spent_usd, burn_usd_per_hour=month.burn_usd_per_hour, budget=budget, lead_seconds=0, now=job.now
        )
        return at if at is not None and at - job.now <= self.CHECK_HORIZON else None

    def switched_on(self, policy: Policy, job: JobState) -> bool:
        """The job's team has a monthly budget."""
        return policy.team_monthly_budget(job.team or policy.team_of(job.tags, job.roles)) is not None

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
