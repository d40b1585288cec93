"""One-time judgements asked for: at a projected budget crossing or the end of a grace period."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.job import JobState, iso_time
from tuning_governor.errors import GovernorError
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import Rule
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.ports import JudgementStore


def check_time(rule: Rule, facts: JobFacts, policy: Policy, services: EngineServices[JudgementStore]) -> list[datetime]:
    """When ``rule`` asks to judge the job again (the budget rule: when the job's burn brings it to a
    breach), if within the horizon (a later crossing is re-estimated by the sweeps, since the burn
    changes as trials start and end)."""
    at = rule.check_at(policy, facts)
    if at is None or at - facts.now > timedelta(seconds=services.settings.budget_check_horizon_seconds):
        return []
    return [at]


def schedule_check(
    facts: JobFacts, job: JobState, at: datetime | None, services: EngineServices[JudgementStore]
) -> None:
    """Ask for one more judgement of the job at ``at``: a projected budget crossing, or the end of a
    breach's grace period (one schedule per job: the earliest wins; that judgement asks for the next).
    A job in a member place is checked in its place (the check's input names the key's account and
    region, ``ports.checks.check_input``).

    To the second, rounded up (a check never comes before the moment it is for; the adapter has it
    invoked in the minute before and the check waits for its second, ``app.checks.budget``), and only
    when that time moves by more than ``CHECK_TOLERANCE`` from the one already asked for, so an
    unchanged estimate (its accrual re-estimated to the millisecond) costs no call. A failure is logged
    and counted: the sweep still judges the job.
    """
    if services.checks is None or at is None:
        return
    at = _second_ceiling(max(at, facts.now + timedelta(seconds=1)))
    if _close(job.budget_check_at, at, facts.now):
        return
    try:
        services.checks.schedule(facts.job_key, facts.job_name, at)
        services.store.set_budget_check(facts.job_key, at)
    except GovernorError as exc:
        metrics.add_metric(name="BudgetCheckFailures", unit=MetricUnit.Count, value=1)
        logger.warning("budget check not scheduled", extra={"job": facts.job_name, "error": type(exc).__name__})
        return
    logger.info("budget check scheduled", extra={"job": facts.job_name, "at": iso_time(at)})


CHECK_TOLERANCE = timedelta(seconds=2)
"""An estimate this close to the check already asked for keeps it (two seconds of burn at most)."""


def _second_ceiling(at: datetime) -> datetime:
    floor = at.replace(microsecond=0)
    return floor if floor == at else floor + timedelta(seconds=1)


def _close(asked: str | None, at: datetime, now: datetime) -> bool:
    """Whether the check already asked for is still to come and within the tolerance of ``at`` (one at
    or before ``now`` has fired, or is firing: the check that asks again, so it is never kept)."""
    if not asked:
        return False
    try:
        previous = datetime.fromisoformat(asked)
    except ValueError:
        return False
    return previous > now and abs(previous - at) <= CHECK_TOLERANCE
