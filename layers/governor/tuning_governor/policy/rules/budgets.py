"""The budget rules' declarations: a job's budget (``governance.rules.budgets.BudgetRule``) and a team's
month (``TeamBudgetRule``). The budgets themselves (``defaults.job_budget_usd``, a team's
``job_budget_usd`` and ``monthly_budget_usd``, the budget tag) are the policy's: its queries, the
pricing rule and the client read them too."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tuning_governor.policy.rules.base import RuleSettings, RuleSpec, register


class BudgetSettings(RuleSettings):
    budget_stop_lead_seconds: Annotated[int, Field(ge=0, le=3600, strict=True)] = 120
    """A job's budget is breached when spent + this many seconds of its running trials' burn reaches it:
    billing goes on until the stopped trials are ``Stopped`` (StopTrainingJob's 120 s SIGTERM grace at
    most), so asking then ends the job's bill at its budget rather than past it (0 = at the budget)."""


BUDGET = register(
    RuleSpec(
        name="budget",
        order=20,
        description="Dollar budget per tuning job: spent (finished + accrued), and projected from the mean trial cost",
        settings=BudgetSettings,
        reads=("defaults.job_budget_usd", "teams.<team>.job_budget_usd", "budget_tag", "prices"),
        switches=(),  # a job's budget tag sets a budget whatever the defaults say
        reads_trials=True,
        grace_unless="its budget is raised (tag {budget_tag}, or the team's or default job budget in the policy)",
    )
)

TEAM_BUDGET = register(
    RuleSpec(
        name="team-budget",
        order=30,
        description="Monthly dollar budget per team over all its tuning jobs (finished + accrued)",
        reads=("teams.<team>.monthly_budget_usd",),
        scope="team",
        reads_trials=True,
        no_grace=(
            "team-budget stops every running job of the team at once and has its own projected warning before"
            " the breach; a grace period is not supported for it"
        ),
    )
)
