"""The sweep's one-time checks for trials SageMaker lists as Starting (issue 25, hours-late events).

A trial listed InProgress without a TrainingStartTime is not billed yet, so the sweep does not track it
(``governance.trial_truth``): counting it from the sweep would bill what SageMaker does not. But it may
start billing a second later, and when its progress events are late (by hours) no judgement sees it burn
before the next sweep. So, for each job whose trial step found such trials, the sweep asks what its
budget rules that schedule checks (the job budget, the team month) would say if those trials started
billing now: the earliest their crossing could come. Where that is within the check horizon (the team
month: before the next sweep), one one-time check is asked for then (``governance.checks``), unless the
job already has an earlier one pending. The check (``app.checks.budget``) re-reads the job's trials from
SageMaker before it judges, so it judges on their real TrainingStartTimes, and asks for the next check at
the crossing they really give; one that finds trials still Starting asks again the same way, no sooner than
``RECHECK_GAP`` (at most one check per 10 s while a trial starts: one Describe, one listing page each).

Calls: no SageMaker call (the trial step's Describe and listing are reused; a trial is priced on its
definition's first instance shape, on demand); one
GetItem of the job, the facts' reads (the team item), and one Scheduler call per job asked for.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from tuning_governor.domain import spend
from tuning_governor.domain.job import job_state
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.domain.spend import RunningTrial
from tuning_governor.governance.checks import check_time, schedule_check
from tuning_governor.governance.engine import load_facts
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.rules import registry
from tuning_governor.governance.trial_truth import Reconciled
from tuning_governor.models.tuning_job import TrialSummary
from tuning_governor.observability import logger

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import GoverningStore

RECHECK_GAP = timedelta(seconds=10)
"""A check that finds the trials still Starting asks again no sooner than this (at most ~10 s of their
burn late, and a bounded number of checks however little of the budget is left)."""


def schedule_starting_checks(
    services: AppServices[GoverningStore], now: datetime, found: list[Reconciled], *, gap: timedelta = timedelta(0)
) -> list[str]:
    """Ask for a one-time check of each job in ``found`` with Starting trials (see the module
    docstring), after the sweep (or a check: ``gap``, the least wait) judged it; returns the keys of
    the jobs a check was asked for."""
    asked: list[str] = []
    for done in found:
        if done.starting and done.described is not None and _schedule(services, now, done, gap):
            asked.append(done.job_key)
    return asked


def _schedule(services: AppServices[GoverningStore], now: datetime, done: Reconciled, gap: timedelta) -> bool:
    policy = services.policy()
    job = job_state(services.store.get_job(done.job_key))
    if job is None or job.ended or job.stop_requested_at is not None or policy.is_exempt(job.tags):
        return False
    rules = [rule for rule in registry if rule.schedules_checks and rule.switched_on(policy, job)]
    if not rules:
        return False
    catalog = services.price_catalog(policy)
    facts = load_facts(job, now, policy, services, catalog=catalog, team_month=True)
    facts = _if_started(facts, done, now, services, catalog)
    # A crossing already reached was judged by this sweep (a breach, a notice): nothing to ask for.
    at = min((t for rule in rules for t in check_time(rule, facts, policy, services) if t > now), default=None)
    pending = datetime.fromisoformat(job.budget_check_at) if job.budget_check_at else None
    if at is None or (pending is not None and now < pending <= at):
        return False
    at = max(at, now + gap)
    schedule_check(facts, job, at, services)
    logger.info("check asked for starting trials", extra={"job": job.name, "starting": len(done.starting)})
    return True


def _if_started(
    facts: JobFacts, done: Reconciled, now: datetime, services: AppServices[GoverningStore], catalog: PriceCatalog
) -> JobFacts:
    """The facts as they would be with the Starting trials billing from ``now`` (on demand: the
    earliest crossing), their burn added to the job's and the team month's."""
    region = facts.region or services.settings.region
    trials = [t for t in (_as_started(done, s, now, region) for s in done.starting) if t is not None]
    burn = spend.accrue(trials, now, catalog, default_region=region, spot_discount=None).burn_usd_per_hour
    month = facts.team_month
    update: dict[str, object] = {"burn_usd_per_hour": facts.burn_usd_per_hour + burn}
    if month is not None:
        update["team_month"] = month.model_copy(update={"burn_usd_per_hour": month.burn_usd_per_hour + burn})
    return facts.model_copy(update=update)


def _as_started(done: Reconciled, summary: TrialSummary, now: datetime, region: str) -> RunningTrial | None:
    """A Starting trial's running entry as if it started billing ``now``: its definition's first cluster
    shape (the one AMT tries first); None where no definition is known for it."""
    definitions = done.described.definitions() if done.described is not None else []
    definition = next(
        (d for d in definitions if d.definition_name and d.definition_name == summary.training_job_definition_name),
        definitions[0] if len(definitions) == 1 else None,
    )
    shapes = definition.alternatives() if definition is not None else []
    if definition is None or not shapes:
        return None
    return RunningTrial(
        job_key=done.job_key,
        trial=summary.training_job_name.lower(),
        start=now,
        instances=shapes[0],
        spot=False,
        region=region,
    )
