"""Benchmark: SageMaker calls per sweep against running jobs and their trials, with and without lost events.

    .venv/bin/python benchmarks/sweep_calls.py [--seeds 3] [--jobs 1 10 50] [--trials 10 200] [--lost 0 5] [--write]

Each cell runs ``jobs`` tuning jobs on the AMT stand-in's virtual clock (``governor_client.amt``), each to
``trials`` trials launched (10 in parallel, Random search, trials of about 4 minutes), delivering every
event to the real handlers in process (moto SageMaker, the in-memory table) except a seeded ``lost`` %
of the trials' terminal events, which are lost for good. The sweep (``tuning_governor.app.sweep.run.run_sweep``)
runs every 5 virtual minutes, as template.yaml's ``SweepSchedule`` default; every SageMaker call the
sweep makes is counted on the client (botocore's ``before-call`` hook: each API request, each page).
The policy (monitor mode, a $100,000 job budget, a failed-trial cap of 1,000) makes every job's rules
read its trials, so every running job is reconciled; nothing is ever stopped.

Per cell, medians over the seeds of the median sweep (the sweeps while the jobs run) and of the last
sweep (at ``trials`` trials per job), split into the trial reconciliation's calls
(DescribeHyperParameterTuningJob, ListTrainingJobsForHyperParameterTuningJob, DescribeTrainingJob) and
the sweep's other calls (ListHyperParameterTuningJobs twice, ListTrainingJobs for warm pools, Describe
and ListTags of discovered jobs). The bound stated in ``tuning_governor.app.sweep.running_trials``: per sweep
the reconciliation makes at most J + sum over the jobs that disagree of (ceil(T_j / 100) + L_j) calls,
J with no event lost; ``within bound`` checks it on every sweep of the cell.

Writes nothing unless ``--write``: then the section between the sweep-calls markers of
benchmarks/RESULTS.md is replaced. This is a benchmark, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import math
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from results_file import git_head, write_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START_MARKER = "<!-- sweep-calls: written by benchmarks/sweep_calls.py --write -->"
END_MARKER = "<!-- sweep-calls: end -->"
SWEEP_S = 300
STEP_S = 60
PARALLEL = 10
TRIAL_S = 240.0
T0 = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)
REGION = "us-east-1"
INSTANCE = "ml.m5.xlarge"
RECONCILE = ("DescribeHyperParameterTuningJob", "ListTrainingJobsForHyperParameterTuningJob", "DescribeTrainingJob")
TRAINING = "SageMaker Training Job State Change"
TERMINAL = {"Completed", "Stopped", "Failed"}

from governor_client.offline.env_vars import use_offline_environment  # noqa: E402 - imports only os

use_offline_environment(REGION, POWERTOOLS_SERVICE_NAME="tuning-governor", POWERTOOLS_METRICS_DISABLED="true")


@dataclass(frozen=True)
class Cell:
    jobs: int
    trials: int
    lost_pct: int


@dataclass
class Sweep:
    """One sweep's SageMaker calls by operation, and what the bound allows for it."""

    calls: Counter[str]
    bound: int

    @property
    def reconcile(self) -> int:
        return sum(self.calls[op] for op in RECONCILE)

    @property
    def other(self) -> int:
        return sum(self.calls.values()) - self.reconcile


class Trials:
    """Every trial trains about ``TRIAL_S`` seconds and completes (no early stopping)."""

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> Any:
        from governor_client.amt import TrialPlan  # noqa: PLC0415 - after the environment is set

        return TrialPlan(duration_s=TRIAL_S * rng.uniform(0.8, 1.2), objective_value=rng.uniform(0.7, 0.9))


def request(name: str, trials: int) -> dict[str, Any]:
    from governor_client.simulator.scenarios import seed_tuning_request  # noqa: PLC0415

    # Room past ``trials``: every job is still running at the last sweep.
    body = seed_tuning_request(
        name, instance_type=INSTANCE, instance_count=1, max_parallel=PARALLEL, max_jobs=trials + 3 * PARALLEL
    )
    config = body["HyperParameterTuningJobConfig"]
    config["Strategy"] = "Random"
    config.pop("StrategyConfig", None)
    return body


@contextlib.contextmanager
def counting(client: Any) -> Iterator[Counter[str]]:
    """Every request the client sends, by operation, while inside."""
    calls: Counter[str] = Counter()

    def seen(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    client.meta.events.register("before-call.sagemaker", seen)
    try:
        yield calls
    finally:
        client.meta.events.unregister("before-call.sagemaker", seen)


def _bound(services: Any, names: list[str], sm: Any) -> int:
    """The stated bound for the sweep about to run: 1 per running job, plus for each job whose table
    disagrees with SageMaker's counters (finished trials not recorded, or another number of running
    entries than trials InProgress) ceil(trials / 100) + the finished trials it has not recorded (the
    running trials it tracks from the listing cost nothing more here: one instance shape per definition)."""
    from tuning_governor.domain.job import job_state  # noqa: PLC0415

    total = 0
    for name in names:
        job = job_state(services.store.get_job(name))
        described = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        if job is None or described["HyperParameterTuningJobStatus"] != "InProgress":
            continue
        counters = described["TrainingJobStatusCounters"]
        finished = sum(counters.get(k, 0) for k in ("Completed", "RetryableError", "NonRetryableError", "Stopped"))
        total += 1
        if finished != job.trials_recorded or len(job.running) != counters.get("InProgress", 0):
            launched = finished + counters.get("InProgress", 0)
            total += max(1, math.ceil(launched / 100)) + max(0, finished - job.trials_recorded)
    return total


def run_cell(cell: Cell, seed: int) -> list[Sweep]:
    """Run one cell; the sweeps made while its jobs ran, in order (the last one at ``trials`` trials)."""
    from moto import mock_aws  # noqa: PLC0415

    from governor_client.amt import AmtStandIn, VirtualClock  # noqa: PLC0415
    from governor_client.offline.environment import build_environment  # noqa: PLC0415
    from governor_client.simulator.runner import deliver_event  # noqa: PLC0415
    from governor_client.simulator.simulation.quiet import DISCARD, quiet_handlers  # noqa: PLC0415
    from tuning_governor.app.sweep.run import run_sweep  # noqa: PLC0415
    from tuning_governor.policy import Defaults, Policy  # noqa: PLC0415

    rng = random.Random(seed)  # which events are lost
    clock = VirtualClock(T0)
    sweeps: list[Sweep] = []
    quiet = contextlib.redirect_stdout(DISCARD)  # the handlers' EMF lines
    with quiet, mock_aws(), quiet_handlers(), AmtStandIn(clock=clock, seed=seed, behaviour=Trials()) as amt:
        amt.set_applied_quota(INSTANCE, 10_000)
        defaults = Defaults(job_budget_usd=100_000, max_failed_trials=1000)
        env = build_environment(
            clock=clock.now, store="memory", sns=False, policy=Policy(mode="monitor", defaults=defaults)
        )
        names = [f"bench-{i:03d}" for i in range(cell.jobs)]
        for name in names:
            env.sagemaker.create_hyper_parameter_tuning_job(**request(name, cell.trials))
        elapsed = 0
        while True:
            amt.advance(STEP_S)
            elapsed += STEP_S
            for event in amt.drain_events():
                detail = event["detail"]
                ending = event["detail-type"] == TRAINING and detail.get("TrainingJobStatus") in TERMINAL
                if ending and rng.random() < cell.lost_pct / 100:
                    continue
                deliver_event(event, env.services)
            if elapsed % SWEEP_S:
                continue
            done = all(sum(t.status in TERMINAL for t in amt.trials_of(name)) >= cell.trials for name in names)
            bound = _bound(env.services, names, env.sagemaker)
            with counting(env.sagemaker) as calls:  # the client the governor's SageMaker gateway wraps
                run_sweep(env.services)
            sweeps.append(Sweep(calls=calls, bound=bound))
            if done:
                return sweeps


def _median(values: list[int]) -> float:
    return statistics.median(values) if values else float("nan")


def _fmt(value: float) -> str:
    return f"{value:g}"


def render(results: dict[Cell, list[list[Sweep]]], *, seeds: int, command: str, code: str, took_s: float) -> str:
    lines = [
        START_MARKER,
        "## SageMaker calls per sweep: trial reconciliation against running jobs and trials",
        "",
        f"- command: `{command}` (from the repository root)",
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; code: {code}; {seeds} seeds per cell;"
        f" took {took_s / 60:.1f} min",
        f"- each job: {PARALLEL} trials in parallel of ~{TRIAL_S / 60:.0f} min, 1 x {INSTANCE}; sweep every"
        f" {SWEEP_S // 60} virtual minutes; lost = share of the trials' terminal events never delivered",
        "- reconcile = DescribeHyperParameterTuningJob + ListTrainingJobsForHyperParameterTuningJob +"
        " DescribeTrainingJob made by the sweep's trial step; other = the sweep's other SageMaker calls"
        " (ListHyperParameterTuningJobs x 2, ListTrainingJobs for warm pools); median sweep = median over the"
        " sweeps while the jobs ran (then the median over seeds); last = the first sweep once every job has the"
        " cell's trials finished; most = the largest over every sweep and seed;"
        " ratio = reconcile calls per running job; bound = J + sum over disagreeing jobs of"
        " (ceil(T/100) + lost trials), checked on every sweep",
        "",
        "| running jobs | trials per job | lost | sweeps | reconcile, median sweep | reconcile, last sweep"
        " | reconcile, most in a sweep | per job (median sweep) | other, last sweep | within bound |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for cell, runs in results.items():
        med = _median([_median([s.reconcile for s in run]) for run in runs])
        last = _median([run[-1].reconcile for run in runs])
        other = _median([run[-1].other for run in runs])
        count = _median([len(run) for run in runs])
        most = max(s.reconcile for run in runs for s in run)
        within = sum(s.reconcile <= s.bound for run in runs for s in run)
        total = sum(len(run) for run in runs)
        lines.append(
            f"| {cell.jobs} | {cell.trials} | {cell.lost_pct} % | {_fmt(count)} | {_fmt(med)} | {_fmt(last)} |"
            f" {most} | {med / cell.jobs:.2f} | {_fmt(other)} | {within}/{total} |"
        )
    lines += ["", END_MARKER]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds per cell (default 3)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--trials", type=int, nargs="+", default=[10, 200])
    parser.add_argument("--lost", type=int, nargs="+", default=[0, 5], help="percent of terminal trial events lost")
    parser.add_argument("--write", action="store_true", help="replace the sweep-calls section of benchmarks/RESULTS.md")
    parser.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import warnings  # noqa: PLC0415

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    command = " ".join([".venv/bin/python benchmarks/sweep_calls.py", *(argv if argv is not None else sys.argv[1:])])
    code = git_head()
    started = time.perf_counter()
    results: dict[Cell, list[list[Sweep]]] = {}
    for jobs in args.jobs:
        for trials in args.trials:
            for lost in args.lost:
                cell = Cell(jobs, trials, lost)
                for seed in range(1, args.seeds + 1):
                    run = run_cell(cell, seed)
                    results.setdefault(cell, []).append(run)
                    print(
                        f"jobs {jobs:>3} trials {trials:>4} lost {lost:>2} % seed {seed}: {len(run)} sweeps,"
                        f" reconcile median {_median([s.reconcile for s in run]):g}, last {run[-1].reconcile},"
                        f" over bound {sum(s.reconcile > s.bound for s in run)}",
                        file=sys.stderr,
                        flush=True,
                    )
    section = render(results, seeds=args.seeds, command=command, code=code, took_s=time.perf_counter() - started)
    print(section)
    if args.write:
        write_section(args.results, section, start=START_MARKER, end=END_MARKER)
        print(f"wrote the sweep-calls section of {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
