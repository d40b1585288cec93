"""The Must-show table of issue 20 through the real handlers: the same arrivals as the core-only table
(``queue_sim.workload.arrivals``), played on the simulator (AMT stand-in, EventBridge delivery, the
governor's Lambda handlers, the submission use case) in two modes:

* ``stop-on-arrival``: each job is created directly (CreateHyperParameterTuningJob) under ``enforce``;
  the governor stops the ones that arrive over the account's quota;
* ``queue``: the same requests are submitted (``SubmitTuningJob``); the governor creates each when it fits.

What is measured comes from the stand-in (the tuning and training jobs as Describe/List return them)
and the governor's table (its stop decisions), not from the scheduler's own bookkeeping.
"""

from __future__ import annotations

import os
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from moto import mock_aws

from governor_sim.amt.plans import TrialPlan
from governor_sim.queue_sim.table import _percentile
from governor_sim.queue_sim.workload import HOURS, ITYPE, QUOTA, START, TEAMS, Job, arrivals
from governor_sim.requests import tuning_request
from governor_sim.simulation import CreateTuningJob, Scenario, ScenarioAction, Simulation, SubmitTuningJob
from tuning_governor.models.queue import job_name_for
from tuning_governor.policy import parse_policy

HandlerMode = Literal["stop-on-arrival", "queue"]
HANDLER_MODES: tuple[HandlerMode, ...] = ("stop-on-arrival", "queue")
_MINUTES = "sim_trial_minutes"
"""A static hyperparameter carrying the job's trial length to :class:`FixedTrials` (the stand-in's trials)."""


def _role(team: str, kind: str) -> str:
    return f"arn:aws:iam::123456789012:role/{team}-{kind}"


def policy_text() -> str:
    """``enforce`` with the account's quota of ``ITYPE``; each team's submitter and execution role."""
    teams = "".join(
        f"  {t}: {{submitters: ['{_role(t, 'submit')}'], execution_roles: ['{_role(t, 'sagemaker')}']}}\n"
        for t in TEAMS
    )
    return f"mode: enforce\nteam_tag: team\nquotas: {{{ITYPE}: {QUOTA}}}\nteams:\n{teams}"


class FixedTrials:
    """Every trial runs its job's ``sim_trial_minutes`` (the core's workload has fixed trial lengths)."""

    def plan(
        self, config: Mapping[str, Any] | None, definition: Mapping[str, Any], hp: Mapping[str, str], rng: random.Random
    ) -> TrialPlan:
        minutes = float((definition.get("StaticHyperParameters") or {}).get(_MINUTES, "30"))
        return TrialPlan(duration_s=minutes * 60, objective_value=0.8, startup_s=0.0, download_s=0.0, upload_s=0.0)


def request_for(job: Job) -> dict[str, Any]:
    """The CreateHyperParameterTuningJob request of one arrival (Random search, no early stopping)."""
    request = tuning_request(
        job.key, strategy="Random", team=job.team, owner=f"{job.team}@example.com", instance_type=ITYPE,
        instance_count=job.instances, max_jobs=job.trials, max_parallel=job.max_parallel, max_runtime_s=4 * 3600,
    )  # fmt: skip
    definition = request["TrainingJobDefinition"]
    definition["RoleArn"] = _role(job.team, "sagemaker")
    definition["StaticHyperParameters"] = {**definition["StaticHyperParameters"], _MINUTES: str(job.trial_minutes)}
    return request


def scenario(mode: HandlerMode, jobs: Sequence[Job]) -> Scenario:
    actions: list[ScenarioAction] = []
    for job in jobs:
        at = (job.arrives - START).total_seconds()
        if mode == "stop-on-arrival":
            actions.append(CreateTuningJob(at, request_for(job)))
        else:
            actions.append(
                SubmitTuningJob(at, request_for(job), submitter=_role(job.team, "submit"), client_token=job.key)
            )
    return Scenario(actions, behaviour=FixedTrials())


@dataclass
class Measured:
    """What one mode did with one day's arrivals, read back from the stand-in and the governor's table."""

    killed: list[str] = field(default_factory=list)
    trials_wasted: int = 0  # training jobs stopped before they finished
    trials_never_run: int = 0  # trials a killed job never launched
    useful_instance_hours: float = 0.0  # completed training jobs x instances
    held_instance_hours: float = 0.0  # every training job x instances
    held_in_day: float = 0.0  # the same, within the arrival day
    last_end: datetime = START
    waits: dict[str, list[float]] = field(default_factory=dict)  # team -> minutes from arrival to creation


def _name(mode: HandlerMode, job: Job) -> str:
    return job.key if mode == "stop-on-arrival" else job_name_for(job.team, job.key)


def _measure(sim: Simulation, mode: HandlerMode, jobs: Sequence[Job]) -> Measured:
    sm, store, out = sim.env.sagemaker, sim.env.services.store, Measured()
    day_end = START + timedelta(hours=HOURS)
    for job in jobs:
        name = _name(mode, job)
        try:
            tuning = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        except sm.exceptions.ResourceNotFound:
            continue  # never created (still waiting, refused or expired)
        if any(d.get("action") == "stopped" for d in store.decisions(name.lower())):
            out.killed.append(job.key)
        trials = sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName=name, MaxResults=100)
        summaries = trials["TrainingJobSummaries"]
        if job.key in out.killed:
            out.trials_never_run += job.trials - len(summaries)
        else:
            wait = (tuning["CreationTime"] - job.arrives).total_seconds() / 60
            out.waits.setdefault(job.team, []).append(max(0.0, wait))
        for trial in summaries:
            begin, end = trial.get("TrainingStartTime"), trial.get("TrainingEndTime")
            out.trials_wasted += trial["TrainingJobStatus"] == "Stopped"
            if begin is None or end is None:
                continue
            hours = (end - begin) / timedelta(hours=1) * job.instances
            out.held_instance_hours += hours
            span = (min(end, day_end) - min(begin, day_end)) / timedelta(hours=1)
            out.held_in_day += span * job.instances
            out.last_end = max(out.last_end, end)
            if trial["TrainingJobStatus"] == "Completed":
                out.useful_instance_hours += hours
    return out


def run_mode(mode: HandlerMode, jobs: Sequence[Job], seed: int = 7) -> Measured:
    """One day's arrivals in one mode through the handlers (inside moto's mock)."""
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        os.environ.setdefault(key, value)
    policy = parse_policy(policy_text(), f"handler table {mode}")
    with (
        mock_aws(),
        Simulation(
            scenario(mode, jobs), seed=seed, start=START, environment={"policy": policy}, quiet_handlers=True
        ) as sim,
    ):
        sim.amt.set_applied_quota(ITYPE, QUOTA)
        sim.run()
        return _measure(sim, mode, jobs)


def measure_handlers(seeds: Sequence[int]) -> dict[HandlerMode, dict[str, Any]]:
    """Per mode, over ``seeds``: jobs, killed (and how many of stop-on-arrival's kills the mode also
    killed), trials wasted and never run, useful instance-hours, quota use over the arrival day and to
    the last trial's end, and per team p50/p95 wait (minutes, jobs that ran)."""
    runs = {mode: [] for mode in HANDLER_MODES}  # type: dict[HandlerMode, list[Measured]]
    days = [arrivals(seed) for seed in seeds]
    for seed, day in zip(seeds, days, strict=True):
        for mode in HANDLER_MODES:
            runs[mode].append(run_mode(mode, day, seed=seed))
    stopped = {(i, key) for i, r in enumerate(runs["stop-on-arrival"]) for key in r.killed}
    rows: dict[HandlerMode, dict[str, Any]] = {}
    for mode, measured in runs.items():
        span = sum((r.last_end - START) / timedelta(hours=1) for r in measured)
        rows[mode] = {
            "jobs": sum(len(d) for d in days),
            "killed": sum(len(r.killed) for r in measured),
            "killed_of_stop": len({(i, k) for i, r in enumerate(measured) for k in r.killed} & stopped),
            "trials_wasted": sum(r.trials_wasted for r in measured),
            "trials_never_run": sum(r.trials_never_run for r in measured),
            "useful_instance_hours": sum(r.useful_instance_hours for r in measured),
            "quota_use_day": statistics.fmean(r.held_in_day / (QUOTA * HOURS) for r in measured),
            "quota_use_drained": sum(r.held_instance_hours for r in measured) / (QUOTA * span) if span else 0.0,
            "teams": {
                team: (_percentile(w, 0.5), _percentile(w, 0.95))
                for team in TEAMS
                for w in [[x for r in measured for x in r.waits.get(team, [])]]
            },
        }
    return rows


def render_handlers(rows: dict[HandlerMode, dict[str, Any]], seeds: Sequence[int]) -> str:
    """The table as Markdown."""
    lines = [
        f"{len(seeds)} seeds ({', '.join(map(str, seeds))}); one day of arrivals each; {ITYPE} quota {QUOTA};"
        f" teams {', '.join(TEAMS)}; through the handlers on the simulator",
        "",
        "| mode | jobs | killed | of those stop-on-arrival killed | trials wasted | trials never run |"
        " useful inst-h | quota use, day | quota use, to drained |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {mode} | {r['jobs']} | {r['killed']} | {r['killed_of_stop']} | {r['trials_wasted']} |"
        f" {r['trials_never_run']} | {r['useful_instance_hours']:.0f} | {r['quota_use_day']:.0%} |"
        f" {r['quota_use_drained']:.0%} |"
        for mode, r in rows.items()
    ]
    lines += ["", "| mode | team | p50 wait min | p95 wait min |", "|---|---|---:|---:|"]
    lines += [
        f"| {mode} | {team} | {p50:.0f} | {p95:.0f} |"
        for mode, r in rows.items()
        for team, (p50, p95) in r["teams"].items()
    ]
    return "\n".join(lines)
