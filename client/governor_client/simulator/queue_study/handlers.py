"""The Must-show table of issue 20 through the real handlers: the same arrivals as the core-only table
(``governor_client.simulator.queue_study.workload.arrivals``), played on the simulator (AMT stand-in, EventBridge delivery, the
governor's Lambda handlers, the submission use case) in four modes:

* ``stop-on-arrival``: each job is created directly (CreateHyperParameterTuningJob) under ``enforce``;
  the governor stops the ones that arrive over the account's quota;
* ``queue``: the same requests are submitted (``SubmitTuningJob``); every team has a RESERVE share
  (``teams.<t>.share``, as the core-only table's queue mode); the governor creates each when it fits;
* ``queue + lend/borrow``: the shares are LEND_AND_BORROW, borrow limit 100 %, preemption allowed;
* ``queue + fit-to-share``: RESERVE shares, every submission consenting to a lowered MaxParallel.

What is measured comes from the stand-in (the tuning and training jobs as Describe/List return them)
and the governor's table (its stop decisions): ``governor_client.simulator.queue_study.handlers_measure``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from moto import mock_aws

from governor_client.amt.plans import TrialPlan
from governor_client.offline.env_vars import use_offline_environment
from governor_client.simulator.queue_study.chains import Accounted
from governor_client.simulator.queue_study.handlers_measure import collect, render, summarise
from governor_client.simulator.queue_study.workload import ITYPE, QUOTA, START, TEAMS, Job, arrivals
from governor_client.simulator.requests import tuning_request
from governor_client.simulator.schedule import DEFAULT_SWEEP_EVERY
from governor_client.simulator.simulation import CreateTuningJob, Scenario, ScenarioAction, Simulation, SubmitTuningJob
from tuning_governor.models.queue import job_name_for
from tuning_governor.policy import parse_policy

HandlerMode = Literal["stop-on-arrival", "queue", "queue + lend/borrow", "queue + fit-to-share", "queue + reserve"]
HANDLER_MODES: tuple[HandlerMode, ...] = ("stop-on-arrival", "queue", "queue + lend/borrow", "queue + fit-to-share")
"""The table's modes; ``queue + reserve`` (RESERVE shares, no consent: the core-only table's plain queue)
is measured on request (``scripts/queue_table_handlers.py --reserve``)."""
_MINUTES = "sim_trial_minutes"
"""A static hyperparameter carrying the job's trial length to :class:`FixedTrials` (the stand-in's trials)."""


def _role(team: str, kind: str) -> str:
    return f"arn:aws:iam::123456789012:role/{team}-{kind}"


def _share(mode: HandlerMode, team: str) -> str:
    if mode in ("stop-on-arrival", "queue"):
        return ""  # the account's quota only, as stop-on-arrival: the two differ only in holding vs stopping
    limits = f"capacity_limits: {{{ITYPE}: {TEAMS[team][0]}}}"
    if mode == "queue + lend/borrow":
        return f", share: {{{limits}, resource_sharing: LEND_AND_BORROW, borrow_limit: 100, preemption: allowed}}"
    return f", share: {{{limits}, resource_sharing: RESERVE}}"


def policy_text(mode: HandlerMode = "stop-on-arrival") -> str:
    """``enforce`` with the account's quota of ``ITYPE``; each team's submitter and execution role, and in
    the queue modes its share of ``ITYPE`` (the workload's: vision 8, nlp 5, speech 3 of 16)."""
    teams = "".join(
        f"  {t}: {{submitters: ['{_role(t, 'submit')}'], execution_roles: ['{_role(t, 'sagemaker')}']"
        f"{_share(mode, t)}}}\n"
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
            submitter, fit = _role(job.team, "submit"), mode == "queue + fit-to-share"
            actions.append(SubmitTuningJob(at, request_for(job), submitter, client_token=job.key, fit_to_share=fit))
    return Scenario(actions, behaviour=FixedTrials())


def _name(mode: HandlerMode, job: Job) -> str:
    return job.key if mode == "stop-on-arrival" else job_name_for(job.team, job.key)


def run_mode(
    mode: HandlerMode, jobs: Sequence[Job], seed: int = 7, sweep_every: timedelta = DEFAULT_SWEEP_EVERY
) -> list[Accounted]:
    """One day's arrivals in one mode through the handlers (inside moto's mock), the sweep on
    ``sweep_every`` (template.yaml's SweepSchedule; 5 minutes by default)."""
    use_offline_environment()
    policy = parse_policy(policy_text(mode), f"handler table {mode}")
    with (
        mock_aws(),
        Simulation(
            scenario(mode, jobs),
            seed=seed,
            start=START,
            environment={"policy": policy},
            quiet_handlers=True,
            sweep_every=sweep_every,
        ) as sim,
    ):
        sim.amt.set_applied_quota(ITYPE, QUOTA)
        sim.run()
        return collect(sim.env.sagemaker, sim.env.services.store, {j.key: _name(mode, j) for j in jobs}, jobs)


def _with_baseline(modes: Sequence[HandlerMode]) -> list[HandlerMode]:
    first: HandlerMode = "stop-on-arrival"  # every row compares its kills with it
    return [first, *(m for m in modes if m != first)]


def measure_handlers(
    seeds: Sequence[int],
    modes: Sequence[HandlerMode] = HANDLER_MODES,
    sweep_every: timedelta = DEFAULT_SWEEP_EVERY,
) -> dict[HandlerMode, dict[str, Any]]:
    """Per mode, over ``seeds`` (``handlers_measure.summarise``): jobs; killed (work lost) and how many
    of stop-on-arrival's kills the mode also killed; preempted, resumed, fitted; trials wasted and never
    run; useful instance-hours; quota use over the arrival day and to the last trial's end; per team
    p50/p95 wait (minutes, jobs not killed) and mean instances held per 3-hour block."""
    days = [arrivals(seed) for seed in seeds]
    runs = {
        mode: [run_mode(mode, day, seed, sweep_every) for seed, day in zip(seeds, days, strict=True)]
        for mode in _with_baseline(modes)
    }
    stopped = {
        (i, job.key)
        for i, (day, run) in enumerate(zip(days, runs["stop-on-arrival"], strict=True))
        for job, a in zip(day, run, strict=True)
        if a.killed
    }
    return {mode: summarise(runs[mode], days, stopped) for mode in runs}


def render_handlers(rows: Mapping[HandlerMode, Mapping[str, Any]], seeds: Sequence[int]) -> str:
    """The table as Markdown."""
    return render({str(mode): row for mode, row in rows.items()}, seeds)
