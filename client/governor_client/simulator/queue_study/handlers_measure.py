"""The handler-driven Must-show table's figures, read back from the stand-in and the governor's table
(docs/explanation/queue.md, "The Must-show table, through the handlers"): each arrival's tuning job and its
warm-start resumes (tag ``governance:resume-root``) as Describe / ListTrainingJobsForHyperParameterTuningJob
report them, the rule of the governor's stop decision, then ``chains.account`` and per-team usage."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from governor_client.simulator.queue_study.chains import Accounted, Interval, JobRecord, TrialRecord, account
from governor_client.simulator.queue_study.table import _percentile
from governor_client.simulator.queue_study.usage import render_usage, usage_by_block
from governor_client.simulator.queue_study.workload import HOURS, QUOTA, START, TEAMS, Job
from tuning_governor.domain.resume import RESUME_N_TAG, RESUME_ROOT_TAG


def _paged(call: Callable[..., dict[str, Any]], key: str, **kwargs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = call(**kwargs)
        items += page[key]
        if not page.get("NextToken"):
            return items
        kwargs["NextToken"] = page["NextToken"]


def _stopped_by(store: Any, name: str) -> str | None:
    """The rule of the governor's stop decision on ``name`` (``concurrency`` on arrival, ``queue-preempt``)."""
    rules = [d.get("rule") for d in store.decisions(name.lower()) if d.get("action") == "stopped"]
    return str(rules[0]) if rules else None


def _record(sm: Any, store: Any, name: str) -> JobRecord:
    tuning = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    limits = tuning["HyperParameterTuningJobConfig"]["ResourceLimits"]
    trials = _paged(
        sm.list_training_jobs_for_hyper_parameter_tuning_job,
        "TrainingJobSummaries",
        HyperParameterTuningJobName=name,
        MaxResults=100,
    )
    status = str(tuning["HyperParameterTuningJobStatus"])
    return JobRecord(
        name=name,
        status=status,
        created=tuning["CreationTime"],
        max_parallel=int(limits["MaxParallelTrainingJobs"]),
        max_jobs=int(limits["MaxNumberOfTrainingJobs"]),
        stopped_by=_stopped_by(store, name),
        trials=tuple(
            TrialRecord(t["TrainingJobStatus"], t.get("TrainingStartTime"), t.get("TrainingEndTime")) for t in trials
        ),
    )


def _resumes(sm: Any) -> dict[str, list[tuple[int, str]]]:
    """Root name -> (resume number, name) of every resume on the stand-in."""
    out: dict[str, list[tuple[int, str]]] = {}
    for summary in _paged(sm.list_hyper_parameter_tuning_jobs, "HyperParameterTuningJobSummaries", MaxResults=100):
        arn = summary["HyperParameterTuningJobArn"]
        tags = {t["Key"]: t["Value"] for t in _paged(sm.list_tags, "Tags", ResourceArn=arn)}
        if RESUME_ROOT_TAG in tags:
            number = int(tags.get(RESUME_N_TAG, "0"))
            out.setdefault(tags[RESUME_ROOT_TAG], []).append((number, summary["HyperParameterTuningJobName"]))
    return out


def collect(sm: Any, store: Any, first_names: Mapping[str, str], jobs: Sequence[Job]) -> list[Accounted]:
    """Every arrival accounted from its chain on the stand-in (``first_names``: arrival key -> the name of
    its first tuning job)."""
    resumes = _resumes(sm)
    out = []
    for job in jobs:
        first = first_names[job.key]
        try:
            chain = [_record(sm, store, first)]
        except sm.exceptions.ResourceNotFound:
            chain = []  # never created (still waiting, refused or expired)
        chain += [_record(sm, store, name) for _, name in sorted(resumes.get(first, []))]
        out.append(account(job, chain))
    return out


def _usage(runs: Sequence[Sequence[Accounted]], days: Sequence[Sequence[Job]]) -> dict[str, list[float]]:
    """Per team and 3-hour block of the arrival day, the mean over seeds of the instances held."""
    per_seed = []
    for accounted, day in zip(runs, days, strict=True):
        intervals: dict[str, list[Interval]] = {}
        for job, a in zip(day, accounted, strict=True):
            intervals.setdefault(job.team, []).extend(a.intervals)
        per_seed.append(usage_by_block(intervals))
    return {team: [statistics.fmean(col) for col in zip(*(s[team] for s in per_seed), strict=True)] for team in TEAMS}


def _held(intervals: Sequence[Interval], until: datetime | None = None) -> float:
    return sum(max(timedelta(0), (min(e, until) if until else e) - b) / timedelta(hours=1) * n for b, e, n in intervals)


def _drained_hours(run: Sequence[Accounted]) -> float:
    """Hours from START to the run's last training job's end."""
    return (max((end for a in run for _, end, _ in a.intervals), default=START) - START) / timedelta(hours=1)


def summarise(
    runs: Sequence[Sequence[Accounted]], days: Sequence[Sequence[Job]], stopped: set[tuple[int, str]]
) -> dict[str, Any]:
    """One mode's row over seeds (``runs[i]`` accounts ``days[i]``); ``stopped``: (seed index, key) of
    the arrivals stop-on-arrival killed."""
    pairs = [
        (i, job, a)
        for i, (day, run) in enumerate(zip(days, runs, strict=True))
        for job, a in zip(day, run, strict=True)
    ]
    every = [iv for _, _, a in pairs for iv in a.intervals]
    span = sum(_drained_hours(run) for run in runs)
    day_end = START + timedelta(hours=HOURS)
    return {
        "jobs": len(pairs),
        "killed": sum(a.killed for _, _, a in pairs),
        "killed_of_stop": sum(a.killed for i, job, a in pairs if (i, job.key) in stopped),
        "preempted": sum(a.preempted for _, _, a in pairs),
        "resumed": sum(a.resumed for _, _, a in pairs),
        "fitted": sum(a.fitted for _, _, a in pairs),
        "trials_wasted": sum(a.trials_wasted for _, _, a in pairs),
        "trials_never_run": sum(a.trials_never_run for _, _, a in pairs),
        "useful_instance_hours": sum(a.useful_instance_hours for _, _, a in pairs),
        "quota_use_day": _held(every, day_end) / (QUOTA * HOURS * len(runs)),
        "quota_use_drained": _held(every) / (QUOTA * span) if span else 0.0,
        "teams": {
            team: (_percentile(w, 0.5), _percentile(w, 0.95))
            for team in TEAMS
            for w in [[a.wait_minutes for _, job, a in pairs if job.team == team and a.wait_minutes is not None]]
        },
        "usage": _usage(runs, days),
    }


def render(rows: Mapping[str, Mapping[str, Any]], seeds: Sequence[int]) -> str:
    """The table as Markdown: the totals, the waits, and per mode the use against share over the day."""
    lines = [
        f"{len(seeds)} seeds ({', '.join(map(str, seeds))}); one day of arrivals each; quota {QUOTA};"
        f" shares {', '.join(f'{t} {s}' for t, (s, _) in TEAMS.items())}; through the handlers on the simulator",
        "",
        "| mode | jobs | killed | of those stop-on-arrival killed | preempted | resumed | fitted | trials wasted |"
        " trials never run | useful inst-h | quota use, day | quota use, to drained |",
        "|---|" + "---:|" * 11,
    ]
    lines += [
        f"| {mode} | {r['jobs']} | {r['killed']} | {r['killed_of_stop']} | {r['preempted']} | {r['resumed']} |"
        f" {r['fitted']} | {r['trials_wasted']} | {r['trials_never_run']} | {r['useful_instance_hours']:.0f} |"
        f" {r['quota_use_day']:.0%} | {r['quota_use_drained']:.0%} |"
        for mode, r in rows.items()
    ]
    lines += ["", "| mode | team | p50 wait min | p95 wait min |", "|---|---|---:|---:|"]
    lines += [
        f"| {mode} | {team} | {p50:.0f} | {p95:.0f} |"
        for mode, r in rows.items()
        for team, (p50, p95) in r["teams"].items()
    ]
    for mode, r in rows.items():
        lines += ["", f"Mean instances held / share per 3-hour block of the arrival day (UTC), {mode}:", ""]
        lines.append(render_usage(r["usage"]))
    return "\n".join(lines)
