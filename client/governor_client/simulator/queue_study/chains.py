"""What happened to one arrival, from its tuning jobs on the stand-in: the job it became and the
warm-start resumes that continued it (``domain.resume.plan_resume``: named ``<root>-r<N>-<hash>``,
tagged ``governance:resume-root``). Pure: records in, counts out (docs/explanation/queue.md, "The Must-show table,
through the handlers").

* **killed**: the work ends lost: the chain's last job ended ``Stopped`` (stopped by the governor and
  not resumed to completion); a preempted job whose resume completed is not killed;
* **preempted**: jobs of the chain the governor stopped to give a lender its share back (rule
  ``queue-preempt``); **resumed**: resume jobs created;
* **trials wasted**: training jobs ending ``Stopped``; **never run**: a killed chain's trial budget
  (the first job's MaxNumberOfTrainingJobs) less every training job the chain launched;
* **useful instance-hours**: completed training jobs' (end - start) x instances, resumes included;
* **wait**: the first job's creation less the arrival (only for arrivals not killed);
* **fitted**: the first job was created with a MaxParallelTrainingJobs below the one asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from governor_client.simulator.queue_study.workload import Job

PREEMPT_RULE = "queue-preempt"

Interval = tuple[datetime, datetime, int]
"""A training job's start, end and instances."""


@dataclass(frozen=True)
class TrialRecord:
    """One training job as ListTrainingJobsForHyperParameterTuningJob reports it."""

    status: str
    begin: datetime | None
    end: datetime | None


@dataclass(frozen=True)
class JobRecord:
    """One tuning job as Describe reports it, with the rule of the governor's stop decision (if any)."""

    name: str
    status: str
    created: datetime
    max_parallel: int
    max_jobs: int
    stopped_by: str | None
    trials: tuple[TrialRecord, ...]


@dataclass
class Accounted:
    """One arrival's outcome."""

    killed: bool = False
    preempted: int = 0
    resumed: int = 0
    fitted: bool = False
    trials_wasted: int = 0
    trials_never_run: int = 0
    useful_instance_hours: float = 0.0
    wait_minutes: float | None = None
    intervals: list[Interval] = field(default_factory=list)


def _hours(begin: datetime, end: datetime) -> float:
    return (end - begin) / timedelta(hours=1)


def account(job: Job, chain: Sequence[JobRecord]) -> Accounted:
    """``chain``: the arrival's first tuning job then its resumes in order (empty: never created)."""
    out = Accounted(resumed=max(0, len(chain) - 1))
    if not chain:
        out.killed, out.trials_never_run = True, job.trials
        return out
    first, last = chain[0], chain[-1]
    out.fitted = first.max_parallel < job.max_parallel
    out.preempted = sum(record.stopped_by == PREEMPT_RULE for record in chain)
    out.killed = last.status in ("Stopped", "Stopping", "Failed")
    launched = 0
    for record in chain:
        launched += len(record.trials)
        for trial in record.trials:
            out.trials_wasted += trial.status == "Stopped"
            if trial.begin is None or trial.end is None:
                continue
            out.intervals.append((trial.begin, trial.end, job.instances))
            if trial.status == "Completed":
                out.useful_instance_hours += _hours(trial.begin, trial.end) * job.instances
    if out.killed:
        out.trials_never_run = max(0, first.max_jobs - launched)
    else:
        out.wait_minutes = max(0.0, (first.created - job.arrives) / timedelta(minutes=1))
    return out
