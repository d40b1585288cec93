"""Team budgets: a team's month over all its tuning jobs, judged and acted on once per team and month."""

from __future__ import annotations

import contextlib
import uuid
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain import spend
from tuning_governor.domain.job import JobState, job_state
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.domain.reports import Report, decision_fields, decision_report
from tuning_governor.errors import GovernorError
from tuning_governor.governance.actions import STEP_TIMEOUT, act, lease_job_decision, stop_step, take_lease
from tuning_governor.governance.enforce import under_enforce
from tuning_governor.governance.facts import JobFacts, TeamMonthFacts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.reporting import all_delivered, deliver
from tuning_governor.governance.rules import Decision
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.ports import TeamMonthStore
    from tuning_governor.ports.uses import TeamActingStore


def team_month_facts(
    team: str | None, now: datetime, policy: Policy, catalog: PriceCatalog, services: EngineServices[TeamMonthStore]
) -> TeamMonthFacts | None:
    """The team's spend this calendar month: its month totals plus its running trials (one GetItem of
    the team's item, only for a team with a monthly budget; never a scan)."""
    if team is None or policy.team_monthly_budget(team) is None:
        return None
    return team_month_spend(team, now, catalog, services)


def team_month_spend(
    team: str, now: datetime, catalog: PriceCatalog, services: EngineServices[TeamMonthStore]
) -> TeamMonthFacts:
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
        burn_usd_per_hour=accrual.burn_usd_per_hour,
        unpriced_trials=int(totals.get("unpriced_trials") or 0),
        unpriced_running_types=accrual.unpriced_types,
    )


def act_on_team(
    decision: Decision, job: JobFacts, policy: Policy, services: EngineServices[TeamActingStore]
) -> list[dict[str, Any]]:
    """A team's month is over budget (or projected to be): decide once per team and month.

    The team's decision has one owner at a time (a lease under the caller's token): on a breach the
    owner stops each of the team's InProgress tuning jobs (exempt: exempt; monitor: would-stop),
    recording a decision on each job, then reports once for the team with every job's action. A
    caller that finds the decision leased to another leaves it to that owner; one that finds it done
    acts on its own job: a job of that team judged later in the month (one that started after the
    breach) is stopped on its own decision and reported on its own, once. The report is built from
    the decision as first claimed (its job key, figures and time), so whoever sends it, it is one
    report, sent once per channel.
    """
    month = str(decision.numbers["month"])
    token = uuid.uuid4().hex
    claimed = take_lease(
        lambda: services.store.claim_team_decision(decision, month, policy.mode, services.clock(), token=token),
        lambda: services.store.release_team_decision(decision, month, token),
    )
    if claimed.get("state") != "pending":
        if decision.verdict != "breach":
            return []
        # Decided for the team already: this job's own decision, judged again under enforce when
        # the team's breach stopped nothing under monitor (its jobs recorded would-stop).
        return [act(under_enforce(decision, job, policy, services), job, policy, services)]
    return _as_owner(decision, claimed, token, Judged(job.job_key, job.job_name, job.tags), policy, services)


class Judged(NamedTuple):
    """The job whose judgement carries a team decision (key, name, tags)."""

    key: str
    name: str
    tags: dict[str, str]


def _as_owner(
    decision: Decision,
    claimed: dict[str, Any],
    token: str,
    judged: Judged,
    policy: Policy,
    services: EngineServices[TeamActingStore],
) -> list[dict[str, Any]]:
    """The team decision's steps, when ``token`` holds its lease (else nothing: another owner has it)."""
    if claimed.get("lease_token") != token:
        metrics.add_metric(name="DecisionsInProgressElsewhere", unit=MetricUnit.Count, value=1)
        return []
    month = str(decision.numbers["month"])
    finished = False
    try:
        outcomes, finished = _carry_out_team(
            _as_first_claimed(decision, claimed), judged, policy, services, month=month
        )
        return outcomes
    finally:
        if not finished:  # a channel failed or is in flight: the next judgement may take it at once
            with contextlib.suppress(GovernorError):
                services.store.release_team_decision(decision, month, token)


def resume_team_decisions(services: EngineServices[TeamActingStore], now: datetime) -> list[dict[str, Any]]:
    """The sweep's pass over team decisions left pending longer than ``STEP_TIMEOUT`` (a report no
    channel took, an owner that failed between stops) whose team has no InProgress job left, so no
    judgement of a running job will carry them on: each is carried out as its first claim stored it
    (stops of the team's jobs still to make, then its one report). One gsi1 Query, plus one Query of the
    team's running jobs and one GetItem (its first job) per such decision."""
    outcomes: list[dict[str, Any]] = []
    policy = services.policy()
    for row in services.store.stale_team_decisions(now - STEP_TIMEOUT):
        team = str(row.get("team") or "")
        if not team or services.store.team_jobs_in_progress(team):
            continue  # a running job's own judgement (event or sweep) carries it on
        key = str(row["job_key"])
        job = job_state(services.store.get_job(key))
        fields = {name: row.get(name) for name in ("rule", "verdict", "message", "numbers", "at")}
        decision = Decision.model_validate(
            fields | {"job_key": key, "job_name": job.name if job is not None else key, "team": team}
        )
        judged = Judged(key, decision.job_name, dict(job.tags) if job is not None else {})
        outcomes.extend(o | {"team": team} for o in _take_over(decision, judged, policy, services, now))
    return outcomes


def _take_over(
    decision: Decision, judged: Judged, policy: Policy, services: EngineServices[TeamActingStore], now: datetime
) -> list[dict[str, Any]]:
    """A pending team decision's steps carried out by the caller, once it holds the lease."""
    token, month = uuid.uuid4().hex, str(decision.numbers["month"])
    claimed = take_lease(
        lambda: services.store.claim_team_decision(decision, month, policy.mode, now, token=token),
        lambda: services.store.release_team_decision(decision, month, token),
    )
    if claimed.get("state") != "pending":
        return []
    return _as_owner(decision, claimed, token, judged, policy, services)


def _as_first_claimed(decision: Decision, claimed: dict[str, Any]) -> Decision:
    """The team's decision as its first claim stored it: its job key (the report's key), figures, time."""
    first = {key: claimed[key] for key in ("job_key", "message", "numbers", "at") if claimed.get(key) is not None}
    return Decision.model_validate(decision.model_dump() | first)


def _carry_out_team(
    decision: Decision, judged: Judged, policy: Policy, services: EngineServices[TeamActingStore], *, month: str
) -> tuple[list[dict[str, Any]], bool]:
    """The owner's steps of a team decision: each job's stop (on a breach), then the team's one report.
    (outcomes, whether the decision is done)."""
    mode = policy.mode
    if decision.verdict == "breach":
        results = _stop_team_jobs(decision, judged, policy, services)
    else:
        results = []
        _record_warning(decision, policy, services)
    metrics.add_metric(name="TeamDecisions", unit=MetricUnit.Count, value=1)
    logger.info(
        "team governance decision",
        extra={
            "rule": decision.rule,
            "verdict": decision.verdict,
            "mode": mode,
            "team": decision.team,
            "jobs": results,
        },
    )
    # The team decision is done only once its report is out on every channel: until then it stays
    # pending, and the next judgement of the team (event or sweep) re-claims it and sends the report.
    report = team_report(decision, month, mode, results)
    channels = deliver(report, services.store, services.notifiers_for(report, policy), services.clock)
    finished = all_delivered(channels)
    if finished:
        services.store.finish_team_decision(decision, month, results)
    outcomes = [
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
    return outcomes, finished


def _record_warning(decision: Decision, policy: Policy, services: EngineServices[TeamActingStore]) -> None:
    """The team's warning as a decision of the job whose judgement crossed it (the decision's first
    claimer), once per team and month: in that job's ``decisions`` and its table items, as every
    decision the rules make. The team's one report covers it (``own_report=False``)."""
    if services.store.open_decision(decision, policy.mode, services.clock(), own_report=False) is None:
        return  # recorded by an earlier attempt at this team decision (its report failed)
    services.store.finish_decision(decision, "warned", f"team {decision.team}: reported for the team")


def _team_jobs(
    team: str, judged: Judged, services: EngineServices[TeamActingStore]
) -> dict[str, tuple[str, dict[str, str]]]:
    """The team's InProgress tuning jobs (key: name, tags), the judged job among them."""
    jobs = {
        found.key: (found.name, found.tags)
        for found in map(JobState.from_item, services.store.team_jobs_in_progress(team))
    }
    jobs.setdefault(judged.key, (judged.name, judged.tags))  # the index may lag
    return jobs


def _stop_team_jobs(
    decision: Decision, judged: Judged, policy: Policy, services: EngineServices[TeamActingStore]
) -> list[dict[str, Any]]:
    """Each of the team's running jobs stopped (or not: exempt, monitor) on its own decision, once."""
    results: list[dict[str, Any]] = []
    for key, (name, tags) in sorted(_team_jobs(decision.team or "", judged, services).items()):
        per_job = decision.model_copy(update={"job_key": key, "job_name": name})
        opened = services.store.open_decision(per_job, policy.mode, services.clock(), own_report=False)
        if opened is None:
            # Done by an earlier attempt at this team decision (its report failed): still named in it.
            done = services.store.get_decision(key, per_job.rule, per_job.verdict) or {}
            if done.get("own_report") is False and done.get("action") is not None:
                results.append({"job": per_job.job_name, "action": done["action"], "detail": done["action_detail"]})
            continue
        # The job's decision has one owner at a time too: one its own judgement is carrying out is
        # left to it (its Stop is requested once).
        token = uuid.uuid4().hex
        stored = lease_job_decision(services, key, per_job.rule, per_job.verdict, token)
        if stored is None:
            continue
        try:
            action, detail = stop_step(per_job, stored, tags, policy, services)
            services.store.finish_decision(per_job, action, detail)
        finally:
            with contextlib.suppress(GovernorError):
                services.store.release_decision(key, per_job.rule, per_job.verdict, token)
        results.append({"job": per_job.job_name, "action": action, "detail": detail})
    return results


def team_report(decision: Decision, month: str, mode: str, jobs: list[dict[str, Any]]) -> Report:
    """The one report of a team's monthly-budget decision, naming what happened to each of its jobs."""
    detail = ", ".join(f"{j['job']}: {j['action']}" for j in jobs) or "reported only"
    base = decision_report(
        **decision_fields(
            decision, mode=mode, action=_team_action(decision, jobs), detail=detail, job_name=f"team {decision.team}"
        )
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
