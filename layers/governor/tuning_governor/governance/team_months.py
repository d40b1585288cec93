"""Team budgets: a team's month over all its tuning jobs, judged and acted on once per team and month."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain import spend
from tuning_governor.domain.job import JobState
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.domain.reports import Report, decision_report
from tuning_governor.errors import DeliveryFailed
from tuning_governor.governance.actions import act, stop_step
from tuning_governor.governance.facts import JobFacts, TeamMonthFacts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.reporting import all_delivered, deliver
from tuning_governor.governance.rules import Decision
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy


def team_month_facts(
    team: str | None, now: datetime, policy: Policy, catalog: PriceCatalog, services: EngineServices
) -> TeamMonthFacts | None:
    """The team's spend this calendar month: its month totals plus its running trials (one GetItem of
    the team's item, only for a team with a monthly budget; never a scan)."""
    if team is None or policy.team_monthly_budget(team) is None:
        return None
    return team_month_spend(team, now, catalog, services)


def team_month_spend(team: str, now: datetime, catalog: PriceCatalog, services: EngineServices) -> TeamMonthFacts:
    """A team's spend in the calendar month of ``now`` as the team-budget rule judges it (finished +
    accrued), whether or not the team has a monthly budget (one GetItem of the team's item; a replay draws it)."""
    month = spend.month_key(now)
    start, end = spend.month_bounds(now)
    totals, running = services.store.team_spend(team, month)
    accrual = spend.accrue(
        running,
        now,
        catalog,
        default_region=services.settings.region,
        spot_discount=spend.spot_factor(totals.get("spot_billed_usd"), totals.get("spot_on_demand_usd")),
        since=start,
    )
    return TeamMonthFacts(
        team=team,
        month=month,
        month_start=start,
        month_end=end,
        finished_usd=Decimal(str(totals.get("finished_usd") or 0)),
        accrued_usd=accrual.priced_usd,
        running_trials=accrual.trials,
        unpriced_trials=int(totals.get("unpriced_trials") or 0),
        unpriced_running_types=accrual.unpriced_types,
    )


def act_on_team(decision: Decision, job: JobFacts, policy: Policy, services: EngineServices) -> list[dict[str, Any]]:
    """A team's month is over budget (or projected to be): decide once per team and month.

    The first caller claims the team's decision; on a breach it stops each of the team's InProgress
    tuning jobs (exempt: exempt; monitor: would-stop), recording a decision on each job, then reports
    once for the team with every job's action. A job of that team judged later in the month (one that
    started after the breach) is stopped on its own decision and reported on its own, once.
    """
    month = str(decision.numbers["month"])
    mode = policy.mode
    if not services.store.claim_team_decision(decision, month, mode, services.clock()):
        if decision.verdict != "breach":
            return []
        return [act(decision, job, policy, services)]
    results = _stop_team_jobs(decision, job, policy, services) if decision.verdict == "breach" else []
    metrics.add_metric(name="TeamDecisions", unit=MetricUnit.Count, value=1)
    logger.info(
        "team governance decision",
        extra={"rule": decision.rule, "verdict": decision.verdict, "mode": mode, "team": job.team, "jobs": results},
    )
    # The team decision is done only once its report is out on every channel: until then it stays
    # pending, and the next judgement of the team (event or sweep) re-claims it and sends the report.
    report = team_report(decision, month, mode, results)
    channels = deliver(report, services.store, services.notifiers_for(report, policy), services.clock)
    if all_delivered(channels):
        services.store.finish_team_decision(decision, month, results)
    elif "failed" in channels.values():
        # The team's stops are made and recorded above. No sweep step resumes a team decision yet (the
        # team-month decision's owner and report key are being reworked, issue 18 finding 3), so its
        # report is still retried through the event's redelivery.
        raise DeliveryFailed(f"team {decision.team}: report not delivered on {sorted(channels)}")
    return [
        {
            "rule": decision.rule,
            "verdict": decision.verdict,
            "mode": mode,
            "action": r["action"],
            "at": decision.at,
            "job": r["job"],
        }
        for r in results
    ] or [{"rule": decision.rule, "verdict": decision.verdict, "mode": mode, "action": "warned", "at": decision.at}]


def _team_jobs(job: JobFacts, services: EngineServices) -> dict[str, tuple[str, dict[str, str]]]:
    """The team's InProgress tuning jobs (key: name, tags), the judged job among them."""
    jobs = {
        found.key: (found.name, found.tags)
        for found in map(JobState.from_item, services.store.team_jobs_in_progress(job.team or ""))
    }
    jobs.setdefault(job.job_key, (job.job_name, job.tags))  # the index may lag
    return jobs


def _stop_team_jobs(
    decision: Decision, job: JobFacts, policy: Policy, services: EngineServices
) -> list[dict[str, Any]]:
    """Each of the team's running jobs stopped (or not: exempt, monitor) on its own decision, once."""
    results: list[dict[str, Any]] = []
    for key, (name, tags) in sorted(_team_jobs(job, services).items()):
        per_job = decision.model_copy(update={"job_key": key, "job_name": name})
        stored = services.store.open_decision(per_job, policy.mode, services.clock(), own_report=False)
        if stored is None:
            # Done by an earlier attempt at this team decision (its report failed): still named in it.
            done = services.store.get_decision(key, per_job.rule, per_job.verdict) or {}
            if done.get("own_report") is False and done.get("action") is not None:
                results.append({"job": per_job.job_name, "action": done["action"], "detail": done["action_detail"]})
            continue
        action, detail = stop_step(per_job, stored, tags, policy, services)
        services.store.finish_decision(per_job, action, detail)
        results.append({"job": per_job.job_name, "action": action, "detail": detail})
    return results


def team_report(decision: Decision, month: str, mode: str, jobs: list[dict[str, Any]]) -> Report:
    """The one report of a team's monthly-budget decision, naming what happened to each of its jobs."""
    base = decision_report(
        rule=decision.rule,
        verdict=decision.verdict,
        job_key=decision.job_key,
        job_name=f"team {decision.team}",
        team=decision.team,
        message=decision.message,
        numbers=decision.numbers,
        at=decision.at.isoformat(),
        mode=mode,
        action=_team_action(decision, jobs),
        detail=", ".join(f"{j['job']}: {j['action']}" for j in jobs) or "reported only",
    )
    lines = [f"- {j['job']}: {j['action']} ({j['detail']})" for j in jobs]
    text = base.text + ("\n\nJobs of the team:\n" + "\n".join(lines) if lines else "")
    return base.model_copy(update={"kind": f"{base.kind}-{month}", "text": text})


def _team_action(decision: Decision, jobs: list[dict[str, Any]]) -> str:
    if decision.verdict != "breach":
        return "warned"
    actions = {j["action"] for j in jobs}
    for action in ("stopped", "would-stop", "exempt"):
        if action in actions:
            return action
    return "already-ended"
