"""Benchmark: SageMaker calls per concurrency judgement (an arrival), with and without a breach.

    .venv/bin/python benchmarks/breach_calls.py [--running 1 10 150] [--unseen 0 3] [--write]

Each cell runs ``running`` tuning jobs of one ml.m5.xlarge each on the AMT stand-in (moto SageMaker, the
in-memory table, every event delivered), then creates ``unseen`` jobs of one instance whose events are
held back (the governor has not seen them), then a newcomer of ``unseen`` + 2 instances whose arrival
is handled. The applied quota is set so everyone fits (``breach: no``) or the newcomer is one short,
with or without the unseen jobs (``breach: yes``: the unseen jobs are admitted first, the newcomer is
stopped). Every SageMaker call the newcomer's events cause is
counted on the client (botocore's ``before-call`` hook: each request, each page).

What admission promises (docs/reference/policy.md, "Order of admission"): no call for a judgement that does not
breach (a full event needs no Describe or ListTags); for one that breaches, 2 x ceil(running / 100)
ListHyperParameterTuningJobs, one Describe and one ListTags per unseen job the table does not know, then
one Describe and one ListTags of the job stopped and the stop itself, then 2 x ceil(running / 100)
ListHyperParameterTuningJobs more to judge whether the stop was wrong (``governance.wrong_stops``).

Writes nothing unless ``--write``: then the section between the breach-calls markers of
benchmarks/RESULTS.md is replaced. This is a benchmark, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from results_file import git_head, write_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START_MARKER = "<!-- breach-calls: written by benchmarks/breach_calls.py --write -->"
END_MARKER = "<!-- breach-calls: end -->"
T0 = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)
REGION = "us-east-1"
INSTANCE = "ml.m5.xlarge"
NEWCOMER = 2

from governor_client.offline.env_vars import use_offline_environment  # noqa: E402 - imports only os

use_offline_environment(REGION, POWERTOOLS_SERVICE_NAME="tuning-governor", POWERTOOLS_METRICS_DISABLED="true")


def _request(name: str, parallel: int) -> dict[str, Any]:
    from governor_client.simulator.scenarios import seed_tuning_request  # noqa: PLC0415

    return seed_tuning_request(name, instance_type=INSTANCE, instance_count=1, max_parallel=parallel, max_jobs=40)


def run_cell(running: int, unseen: int, breach: bool) -> tuple[Counter[str], list[str]]:
    """One cell: the newcomer's SageMaker calls by operation, and the jobs stopped."""
    from moto import mock_aws  # noqa: PLC0415

    from governor_client.amt import AmtStandIn, VirtualClock  # noqa: PLC0415
    from governor_client.offline.environment import build_environment  # noqa: PLC0415
    from governor_client.simulator.runner import deliver_event  # noqa: PLC0415
    from governor_client.simulator.simulation.quiet import DISCARD, quiet_handlers  # noqa: PLC0415
    from tuning_governor.policy import Policy  # noqa: PLC0415

    clock = VirtualClock(T0)
    calls: Counter[str] = Counter()
    stopped: list[str] = []
    quiet = contextlib.redirect_stdout(DISCARD)  # the handlers' EMF lines
    with quiet, mock_aws(), quiet_handlers(), AmtStandIn(clock=clock, seed=1) as amt:
        # The newcomer asks for unseen + 2: one short of the quota even without the unseen jobs (breach),
        # or room for everyone.
        newcomer = unseen + NEWCOMER
        limit = running + newcomer - 1 if breach else running + unseen + newcomer
        amt.set_applied_quota(INSTANCE, limit)
        env = build_environment(clock=clock.now, store="memory", sns=False, policy=Policy(mode="enforce"))
        for i in range(running):
            env.sagemaker.create_hyper_parameter_tuning_job(**_request(f"run-{i:03d}", 1))
        amt.advance(60)
        for event in amt.drain_events():
            deliver_event(event, env.services)
        for i in range(unseen):
            env.sagemaker.create_hyper_parameter_tuning_job(**_request(f"unseen-{i:03d}", 1))
        amt.advance(1)
        env.sagemaker.create_hyper_parameter_tuning_job(**_request("newcomer", newcomer))
        amt.advance(60)
        held = amt.drain_events()

        def seen(model: Any, **_: Any) -> None:
            calls[model.name] += 1

        def stop(params: Any, **_: Any) -> None:
            stopped.append(str(params["HyperParameterTuningJobName"]))

        env.sagemaker.meta.events.register("before-call.sagemaker", seen)
        env.sagemaker.meta.events.register("provide-client-params.sagemaker.StopHyperParameterTuningJob", stop)
        for event in held:
            name = str(event["detail"].get("HyperParameterTuningJobName") or event["detail"].get("TuningJobArn"))
            if "newcomer" in name:
                deliver_event(event, env.services)
    return calls, stopped


def _section(rows: list[tuple[int, int, bool, Counter[str], list[str]]], took: float) -> str:
    ops = sorted({op for *_, calls, _ in rows for op in calls})
    lines = [
        START_MARKER,
        "## SageMaker calls per concurrency judgement (an arrival), with and without a breach",
        "",
        "- command: `.venv/bin/python benchmarks/breach_calls.py --write` (from the repository root)",
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; code: {git_head()}; took {took:.0f} s",
        f"- running jobs of 1 x {INSTANCE} admitted; `unseen` jobs of 1 instance created before the newcomer,"
        " their events held back; the newcomer (unseen + 2 instances) arrives with full events (no Describe"
        " needed); the quota fits everyone (breach: no) or is one short for the newcomer (breach: yes: the"
        " unseen jobs are judged first, then the newcomer is stopped)",
        "",
        "| running | unseen | breach | total calls | " + " | ".join(ops) + " | stopped |",
        "|---:|---:|---|---:|" + "---:|" * len(ops) + "---|",
    ]
    for running, unseen, breach, calls, stopped in rows:
        cells = " | ".join(str(calls.get(op, 0)) for op in ops)
        what = ", ".join(stopped) or "none"
        lines.append(
            f"| {running} | {unseen} | {'yes' if breach else 'no'} | {sum(calls.values())} | {cells} | {what} |"
        )
    return "\n".join([*lines, END_MARKER, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--running", type=int, nargs="+", default=[1, 10, 150])
    parser.add_argument("--unseen", type=int, nargs="+", default=[0, 3])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    started = time.monotonic()
    rows = []
    for running in args.running:
        for unseen in args.unseen:
            for breach in (False, True):
                calls, stopped = run_cell(running, unseen, breach)
                rows.append((running, unseen, breach, calls, stopped))
    section = _section(rows, time.monotonic() - started)
    sys.stdout.write(section)
    if args.write:
        write_section(RESULTS, section, start=START_MARKER, end=END_MARKER)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
