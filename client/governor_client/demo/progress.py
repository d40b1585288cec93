"""The demo's progress display: each act's trials done (or cancelled by a stop) of all its jobs will run.

A tuning job's trials count as settled once they have ended, and all of them once the job has ended
(a stopped job runs no more): so the display reaches its total exactly when the act's last job ends.
Drawn as a bar on a terminal (``governor_client.cli.progress``), and as one closing line in any case.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from botocore.exceptions import ClientError

from governor_client.cli.progress import Bar, progress_bar
from governor_client.simulator.simulation import CreateTuningJob, Progress, Scenario, SubmitTuningJob, TagTuningJob
from tuning_governor.models.queue import job_name_for

ENDED = {"Completed", "Stopped", "Failed"}
TRIALS_ENDED = ("Completed", "Stopped", "NonRetryableError", "RetryableError")


@dataclass
class Settled:
    trials: int
    trials_total: int
    jobs: int
    jobs_total: int


def planned_trials(scenario: Scenario) -> dict[str, int]:
    """Each tuning job of ``scenario`` and its MaxNumberOfTrainingJobs; a submitted one under the name the
    queue creates it with (``job_name_for``)."""
    planned = {}
    for action in scenario.actions:
        if isinstance(action, TagTuningJob):
            continue
        limits = action.request.get("HyperParameterTuningJobConfig", {}).get("ResourceLimits", {})
        if isinstance(action, CreateTuningJob):
            planned[action.name] = int(limits["MaxNumberOfTrainingJobs"])
        elif isinstance(action, SubmitTuningJob):
            team = _team(action.request)
            planned[job_name_for(team, action.client_token)] = int(limits["MaxNumberOfTrainingJobs"])
    return planned


def _team(request: Mapping[str, Any]) -> str:
    """The request's team tag (the demo's submitters submit for the team their tags name)."""
    return next((str(t["Value"]) for t in request.get("Tags") or [] if t.get("Key") == "team"), "")


def settled(sagemaker: Any, planned: Mapping[str, int]) -> Settled:
    """How far the jobs are, as DescribeHyperParameterTuningJob tells (a job not created yet: nothing)."""
    trials = jobs = 0
    for name, total in planned.items():
        try:
            job = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        except ClientError:  # not created yet (ResourceNotFound): nothing settled
            continue
        if job.get("HyperParameterTuningJobStatus") in ENDED:
            trials, jobs = trials + total, jobs + 1
        else:
            counters = job.get("TrainingJobStatusCounters") or {}
            trials += min(total, sum(int(counters.get(k) or 0) for k in TRIALS_ENDED))
    return Settled(trials, sum(planned.values()), jobs, len(planned))


def _line(state: Settled, p: Progress) -> str:
    return (
        f"  {state.trials} of {state.trials_total} trials done or cancelled, {state.jobs} of {state.jobs_total}"
        f" tuning jobs ended; {p.deliveries} events delivered, {p.errors} handler errors;"
        f" virtual time +{p.virtual_elapsed_s / 60:.1f} min"
    )


class ActProgress:
    """The ``on_progress`` of one act's simulation; ``attach`` it to the simulation's SageMaker first."""

    def __init__(self, scenario: Scenario, bar: Bar) -> None:
        self.planned = planned_trials(scenario)
        self.bar = bar
        self.sagemaker: Any = None
        self.closing: str | None = None

    def __call__(self, p: Progress) -> None:
        if self.sagemaker is None:
            return
        state = settled(self.sagemaker, self.planned)
        self.bar.update(completed=state.trials, total=state.trials_total, info=f"+{p.virtual_elapsed_s / 60:.0f} min")
        if p.done:
            self.closing = _line(state, p)


@contextmanager
def act_progress(title: str, scenario: Scenario, out: TextIO) -> Iterator[ActProgress]:
    """An act's progress: a bar on stderr when it is a terminal; the closing line on ``out`` once the bar
    is gone (so that the two never interleave on a terminal)."""
    with progress_bar(title, total=sum(planned_trials(scenario).values())) as bar:
        progress = ActProgress(scenario, bar)
        yield progress
    if progress.closing is not None:
        print(progress.closing, file=out)
