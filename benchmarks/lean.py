"""Benchmark: cold init against the floor, and AWS work per event (issue 9, "Lean and linear").

    .venv/bin/python benchmarks/lean.py [--full] [--processes 7] [--write]

Two measurements, both in this one invocation:

* **cold init**: for each handler, a fresh interpreter imports the handler module and builds its
  services (``default_services()``: settings, policy source, the boto3 clients), as a Lambda cold
  start does before its first event. The floor is a fresh interpreter that imports boto3 and creates
  two clients (dynamodb, sagemaker). Time is measured inside the process from its first statement;
  RSS is the process's ``ru_maxrss``. Medians over ``--processes`` processes per handler, the runs
  interleaved across handlers and the floor; ratio = handler median / floor median. Then
  ``python -X importtime`` of the tuning handler: the 10 largest imports by their own time.
* **work per event**: the handlers on moto and the AMT stand-in (as in tests/integration), every
  DynamoDB and SageMaker call counted through botocore's hooks (governor_client.simulator.metering): a trial
  starting (InProgress with TrainingStartTime) and finishing, the job's finalisation, at N trials
  already recorded; an arrival and a sweep with J finished jobs in the account and one running.
  Quick set: N = 30, 250 and J = 5, 50; ``--full`` adds N = 750 and J = 500.

``--write`` replaces this benchmark's section of benchmarks/RESULTS.md (between its own markers,
below the notes marker; other sections are kept). This is a benchmark, not a test: the targets are
reported, not asserted (tests/integration/test_linear_paths.py asserts the per-event bounds).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import git_head, write_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START_MARKER = "<!-- lean: written by benchmarks/lean.py --write -->"
END_MARKER = "<!-- lean: end -->"
TARGET_RATIO = 1.25
#: Against floor+stack (the decided stack without the governor's code), per handler.
STACK_TARGET_RATIO = 1.2
TARGET_ITEMS = 3

#: What a Lambda cold start does before its first event, per handler (module, services factory).
HANDLERS = {
    "tuning_events": "import tuning_events as m\nm.default_services()",
    "training_events": "import training_events as m\nm.default_services()",
    "sweep": "import sweep as m\nm.default_services()",
    "budget_check": "import budget_check as m\nm.default_services()",
    "price_refresh": "import price_refresh as m\nm.default_refresh_services()",
    "queue_submissions": "import queue_submissions as m\nm.default_services()\nm.default_queue_services()",
}
FLOOR = "import boto3\nboto3.client('dynamodb')\nboto3.client('sagemaker')"
#: The floor plus what the decisions put in every function besides the governor's own code: pydantic
#: (with one small model defined and validated: ``import pydantic`` alone loads little, its schema
#: machinery loads with the first model), PyYAML (the policy), Powertools' Logger and Metrics.
#: A reference row: what no handler built on these can go under.
STACK_FLOOR = FLOOR + (
    "\nimport pydantic\nimport yaml\nfrom aws_lambda_powertools import Logger, Metrics\nLogger()\nMetrics()"
    "\nclass _Model(pydantic.BaseModel):\n    x: int\n    at: pydantic.AwareDatetime | None = None"
    "\n_Model.model_validate({'x': 1})"
)
#: The function environment of template.yaml, with obvious fakes (nothing is called).
LAMBDA_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "TABLE_NAME": "tuning-governor",
    "TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:tuning-governor-reports",
    "SLACK_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:tuning-governor/slack-AbCdEf",
    "POLICY_PARAMETER": "/tuning-governor/policy",
    "BUDGET_CHECK_TARGET_ARN": "arn:aws:lambda:us-east-1:123456789012:function:budget-check",
    "BUDGET_CHECK_ROLE_ARN": "arn:aws:iam::123456789012:role/budget-check-scheduler",
    "POWERTOOLS_SERVICE_NAME": "tuning-governor",
    "POWERTOOLS_METRICS_NAMESPACE": "TuningGovernor",
    "POWERTOOLS_TRACE_DISABLED": "true",
}
CHILD = """
import time as _t
_start, _cpu = _t.perf_counter(), _t.process_time()
{body}
_elapsed, _cpu = _t.perf_counter() - _start, _t.process_time() - _cpu
import json as _j, resource as _r
print(_j.dumps({{"s": _elapsed, "cpu_s": _cpu, "rss_kib": _r.getrusage(_r.RUSAGE_SELF).ru_maxrss}}))
"""
#: The governor's package as layers/governor/Makefile ships it: a copy with bytecode compiled at build
#: time (Lambda's /opt is read-only, so a layer without it compiles every module at every cold start).
#: Every child, the floors too, runs with this copy first on its path.
LAYER_COPY: Path | None = None
COMPILE = ["-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash"]


def _layer_as_built(into: Path, *, compiled: bool = True) -> Path:
    """``layers/governor/tuning_governor`` copied to ``into`` and compiled as the layer's Makefile does
    (not ``compiled``: sources only, as the layer was built before it shipped bytecode)."""
    import shutil  # noqa: PLC0415

    source = ROOT / "layers" / "governor" / "tuning_governor"
    shutil.copytree(source, into / "tuning_governor", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if not compiled:
        return into
    subprocess.run([sys.executable, *COMPILE, str(into / "tuning_governor")], check=True, capture_output=True)  # noqa: S603
    return into


# -- cold init -------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_"))}
    env.update(LAMBDA_ENV)
    if LAYER_COPY is not None:
        env["PYTHONPATH"] = str(LAYER_COPY)
    return env


def _child(body: str) -> dict[str, float]:
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-c", CHILD.format(body=body)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cold_init(processes: int) -> dict[str, dict[str, float]]:
    """Median seconds and peak RSS (KiB) per handler and for the floor, interleaved runs."""
    runs: dict[str, list[dict[str, float]]] = {"floor": [], "floor+stack": [], **{name: [] for name in HANDLERS}}
    for _ in range(processes):
        runs["floor"].append(_child(FLOOR))
        runs["floor+stack"].append(_child(STACK_FLOOR))
        for name, body in HANDLERS.items():
            runs[name].append(_child(body))
    return {
        name: {
            "s": statistics.median(r["s"] for r in measured),
            "cpu_s": statistics.median(r["cpu_s"] for r in measured),
            "rss_kib": statistics.median(r["rss_kib"] for r in measured),
            "min_s": min(r["s"] for r in measured),
            "max_s": max(r["s"] for r in measured),
        }
        for name, measured in runs.items()
    }


def import_times(module: str = "tuning_events", top: int = 10) -> list[tuple[str, int, int]]:
    """(module, self us, cumulative us) of the ``top`` imports by self time (one fresh process)."""
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
    )
    rows: list[tuple[str, int, int]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|", 2)
        rows.append((name.strip(), int(own), int(cumulative)))
    return sorted(rows, key=lambda row: -row[1])[:top]


def self_time_by_package(module: str = "tuning_events") -> dict[str, int]:
    """Own import time (us) summed by top-level package (one fresh process)."""
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
    )
    found: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _cumulative, name = line.removeprefix("import time:").split("|", 2)
        package = name.strip().split(".")[0]
        found[package] = found.get(package, 0) + int(own)
    return found


# -- work per event --------------------------------------------------------------------------------------


def per_event(trials: list[int], jobs: list[int]) -> list[dict[str, Any]]:
    """Calls and items for each event type at each size (each size in a fresh process)."""
    rows: list[dict[str, Any]] = []
    for n in trials:
        print(f"  trial events at N = {n} ...", flush=True)
        rows.extend(_worker(["--trials-worker", str(n)]))
    for j in jobs:
        print(f"  arrival and sweep at {j} finished jobs ...", flush=True)
        rows.extend(_worker(["--jobs-worker", str(j)]))
    return rows


def _worker(arguments: list[str]) -> list[dict[str, Any]]:
    done = subprocess.run(  # noqa: S603
        [sys.executable, __file__, *arguments], check=True, capture_output=True, text=True, cwd=ROOT
    )
    marker = "LEAN-RESULT "
    line = next(line for line in done.stdout.splitlines() if line.startswith(marker))
    rows: list[dict[str, Any]] = json.loads(line.removeprefix(marker))
    return rows


def _row(event: str, size: str, counts: Any, outcome: str, seconds: float) -> dict[str, Any]:
    sagemaker = {op: n for op, n in counts.calls.items() if op not in DYNAMODB_OPERATIONS}
    dynamodb = {op: n for op, n in counts.calls.items() if op in DYNAMODB_OPERATIONS}
    return {
        "event": event,
        "size": size,
        "outcome": outcome,
        "dynamodb_calls": dict(sorted(dynamodb.items())),
        "sagemaker_calls": dict(sorted(sagemaker.items())),
        "read": counts.read,
        "written": counts.written,
        "queries_read": counts.items_read["Query"] + counts.items_read["Scan"],
        "seconds": seconds,
    }


DYNAMODB_OPERATIONS = frozenset(
    {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "TransactWriteItems", "TransactGetItems"}
    | {"BatchGetItem", "BatchWriteItem"}
)
T0 = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)


def _quiet() -> None:
    import logging  # noqa: PLC0415
    import warnings  # noqa: PLC0415

    os.environ.update({k: v for k, v in LAMBDA_ENV.items() if k.startswith("AWS_")})
    os.environ["POWERTOOLS_LOG_LEVEL"] = "WARNING"
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)


def trials_worker(n: int) -> list[dict[str, Any]]:
    _quiet()
    from moto import mock_aws  # noqa: PLC0415

    from governor_client.amt import AmtStandIn, VirtualClock  # noqa: PLC0415
    from governor_client.offline.environment import build_environment  # noqa: PLC0415
    from governor_client.simulator.metering import Meter, deliver_measured, run_holding, small_job_request  # noqa: PLC0415
    from tuning_governor.policy import parse_policy  # noqa: PLC0415

    rows: list[dict[str, Any]] = []
    policies = {
        "stagnation on": "mode: enforce\ndefaults: {stagnation_trials: 5, stagnation_minutes: 600}\n",
        "stagnation off": "mode: enforce\ndefaults: {stagnation_trials: 0}\n",
        # The job's team has a monthly budget: the team's item is read at each judgement as well.
        "team budget": "mode: enforce\nteams: {churn: {monthly_budget_usd: 100000}}\n"
        "defaults: {stagnation_trials: 5, stagnation_minutes: 600}\n",
    }
    with mock_aws(), AmtStandIn(clock=VirtualClock(T0), seed=7) as amt:
        env = build_environment(clock=amt.clock.now)
        meter = Meter(env.dynamodb, env.sagemaker)
        request = small_job_request(f"bench-{n}", max_jobs=n + len(policies))
        job = run_holding(amt, env.sagemaker, env.services, request, recorded=n, progress=False)
        for index, (label, text) in enumerate(policies.items()):
            env.services.policy = lambda text=text: parse_policy(text, "bench")  # type: ignore[misc]
            for name, status in (("trial started", "InProgress"), ("trial finished", "Completed")):
                started = time.perf_counter()
                counts, outcome = deliver_measured(meter, job.trial_event(index, status), env.services)
                rows.append(
                    _row(f"{name} ({label})", f"N={n}", counts, outcome["outcome"], time.perf_counter() - started)
                )
        assert job.job_terminal is not None
        started = time.perf_counter()
        counts, outcome = deliver_measured(meter, job.job_terminal, env.services)
        rows.append(
            _row(
                "finalise (tuning job Completed)",
                f"N={n + len(policies)}",
                counts,
                outcome["outcome"],
                time.perf_counter() - started,
            )
        )
    return rows


def jobs_worker(history: int) -> list[dict[str, Any]]:
    _quiet()
    from moto import mock_aws  # noqa: PLC0415

    from governor_client.amt import AmtStandIn, VirtualClock  # noqa: PLC0415
    from governor_client.offline.environment import build_environment  # noqa: PLC0415
    from governor_client.simulator.metering import (  # noqa: PLC0415
        Meter,
        deliver_measured,
        run_to_end,
        small_job_request,
        sweep_measured,
    )
    from governor_client.simulator.runner import deliver_event  # noqa: PLC0415
    from tuning_governor.models.events import TUNING_DETAIL_TYPE  # noqa: PLC0415

    rows: list[dict[str, Any]] = []
    with mock_aws(), AmtStandIn(clock=VirtualClock(T0), seed=7) as amt:
        env = build_environment(clock=amt.clock.now)
        meter = Meter(env.dynamodb, env.sagemaker)
        for i in range(history):
            run_to_end(amt, env.sagemaker, env.services, small_job_request(f"done-{i:04d}", max_jobs=3), progress=False)
        env.sagemaker.create_hyper_parameter_tuning_job(**small_job_request("arriving", max_jobs=3))
        amt.advance(60)
        events = amt.drain_events()
        arrival = next(e for e in events if e["detail-type"] == TUNING_DETAIL_TYPE)
        started = time.perf_counter()
        counts, outcome = deliver_measured(meter, arrival, env.services)
        rows.append(
            _row(
                "arrival (tuning job InProgress)",
                f"J={history}",
                counts,
                outcome["outcome"],
                time.perf_counter() - started,
            )
        )
        for event in events:
            if event is not arrival:
                deliver_event(event, env.services)
        started = time.perf_counter()
        counts, report = sweep_measured(meter, env.services)
        errors = len(report.get("errors") or [])
        rows.append(
            _row(
                "sweep (1 job running)",
                f"J={history}",
                counts,
                f"{errors} errors",
                time.perf_counter() - started,
            )
        )
    return rows


# -- report ----------------------------------------------------------------------------------------------


def _calls(calls: dict[str, int]) -> str:
    return ", ".join(f"{op} {n}" for op, n in calls.items()) or "-"


def section(
    cold: dict[str, dict[str, float]],
    imports: list[tuple[str, int, int]],
    packages: dict[str, int],
    events: list[dict[str, Any]],
    *,
    command: str,
    code: str,
    processes: int,
    total_s: float,
) -> str:
    floor = cold["floor"]
    lines = [
        START_MARKER,
        "## Lean and linear: cold init against the floor, AWS work per event",
        "",
        f"- command: `{command}` (from the repository root; `make bench` runs the quick set)",
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; code: {code}; took {total_s / 60:,.1f} min",
        f"- machine: {os.cpu_count()} CPUs (nproc), {platform.machine()}; Python {platform.python_version()}; "
        "shared with other work while measuring (times are noisy, RSS is not); load average at the end "
        + " / ".join(f"{x:.2f}" for x in os.getloadavg())
        + " (1 / 5 / 15 min)",
        "",
        f"### Cold init (medians of {processes} fresh processes each, runs interleaved)",
        "",
        "Import of the handler module + its services (settings, policy source, boto3 clients), measured "
        "inside the process; the floor imports boto3 and creates 2 clients. Target: <= "
        f"{TARGET_RATIO}x the floor in time and in RSS. floor+stack (a reference, no governor code) adds "
        "what every function has by decision: pydantic with one small model defined and validated, PyYAML, "
        f"Powertools' Logger and Metrics. Target against it: <= {STACK_TARGET_RATIO}x in time (wall and CPU). "
        "The governor's package is imported as the layer ships it (bytecode compiled at build, "
        "layers/governor/Makefile); every process, the floors too, has that copy first on its path.",
        "",
        "| process | init ms (median) | min-max ms | x floor (time) | peak RSS MiB | x floor (RSS) | target met "
        "| CPU ms (median) | x floor+stack (time) | x floor+stack (CPU) | <= 1.2x floor+stack (both) |",
        "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for name, m in cold.items():
        t_ratio, r_ratio = m["s"] / floor["s"], m["rss_kib"] / floor["rss_kib"]
        s_ratio, c_ratio = m["s"] / cold["floor+stack"]["s"], m["cpu_s"] / cold["floor+stack"]["cpu_s"]
        met = "-" if name.startswith("floor") else ("yes" if max(t_ratio, r_ratio) <= TARGET_RATIO else "**no**")
        s_met = (
            "-" if name.startswith("floor") else ("yes" if max(s_ratio, c_ratio) <= STACK_TARGET_RATIO else "**no**")
        )
        lines.append(
            f"| {name} | {m['s'] * 1000:,.0f} | {m['min_s'] * 1000:,.0f}-{m['max_s'] * 1000:,.0f} | "
            f"{t_ratio:.2f} | {m['rss_kib'] / 1024:,.1f} | {r_ratio:.2f} | {met} | {m['cpu_s'] * 1000:,.0f} | "
            f"{s_ratio:.2f} | {c_ratio:.2f} | {s_met} |"
        )
    lines += [
        "",
        "`python -X importtime -c 'import tuning_events'`, top 10 by own time (one process): "
        + "; ".join(f"{name} {own / 1000:,.1f} ms (cumulative {cum / 1000:,.1f})" for name, own, cum in imports)
        + ".",
        "Own import time by top-level package (same kind of process), largest 10: "
        + "; ".join(f"{name} {us / 1000:,.0f} ms" for name, us in sorted(packages.items(), key=lambda kv: -kv[1])[:10])
        + f" (all imports: {sum(packages.values()) / 1000:,.0f} ms).",
        "",
        "### AWS work per event (counted through botocore hooks on moto)",
        "",
        "Items read = ScannedCount for a Query/Scan, 1 per key for a get; items written = 1 per "
        "Put/Update/Delete, 1 per transaction entry. N = trials already recorded for the job; J = finished "
        f"jobs in the account (3 trials each), one job running. Target for a trial event: <= {TARGET_ITEMS} "
        "items read and written, whatever N. ms = wall time of the in-process delivery on moto (not Lambda time).",
        "",
        "| event | size | outcome | DynamoDB calls | SageMaker calls | items read | of which by Query/Scan | items written | trial target met | ms |",
        "|---|---|---|---|---|---:|---:|---:|---|---:|",
    ]
    for row in events:
        met = "-"
        if row["event"].startswith("trial"):
            met = "yes" if row["read"] <= TARGET_ITEMS and row["written"] <= TARGET_ITEMS else "**no**"
        lines.append(
            f"| {row['event']} | {row['size']} | {row['outcome']} | {_calls(row['dynamodb_calls'])} | "
            f"{_calls(row['sagemaker_calls'])} | {row['read']} | {row['queries_read']} | {row['written']} | {met} | "
            f"{row['seconds'] * 1000:,.0f} |"
        )
    lines += ["", END_MARKER]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="also N = 750 trials and J = 500 jobs (slow)")
    parser.add_argument("--processes", type=int, default=9, help="fresh processes per handler for cold init")
    parser.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--skip-events", action="store_true", help="cold init only")
    parser.add_argument("--layer-sources", action="store_true", help="the governor's package without bytecode")
    parser.add_argument("--trials-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--jobs-worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.trials_worker is not None:
        print("LEAN-RESULT " + json.dumps(trials_worker(args.trials_worker)))
        return 0
    if args.jobs_worker is not None:
        print("LEAN-RESULT " + json.dumps(jobs_worker(args.jobs_worker)))
        return 0

    command = " ".join([".venv/bin/python benchmarks/lean.py", *(argv if argv is not None else sys.argv[1:])])
    code = git_head()
    started = time.perf_counter()
    print(f"cold init: {args.processes} processes per handler and the floor ...", flush=True)
    global LAYER_COPY  # noqa: PLW0603 - the children's environment, for this run
    with tempfile.TemporaryDirectory(prefix="lean-layer-") as layer:
        LAYER_COPY = _layer_as_built(Path(layer), compiled=not args.layer_sources)
        cold = cold_init(args.processes)
        imports = import_times()
        packages = self_time_by_package()
    LAYER_COPY = None
    for name, m in cold.items():
        print(
            f"  {name:<16} {m['s'] * 1000:7.0f} ms x{m['s'] / cold['floor']['s']:.2f}  "
            f"{m['rss_kib'] / 1024:6.1f} MiB x{m['rss_kib'] / cold['floor']['rss_kib']:.2f}",
            flush=True,
        )
    events: list[dict[str, Any]] = []
    if not args.skip_events:
        print("work per event ...", flush=True)
        trials = [30, 250, *([750] if args.full else [])]
        jobs = [5, 50, *([500] if args.full else [])]
        events = per_event(trials, jobs)
        for row in events:
            print(
                f"  {row['event']:<34} {row['size']:<6} read {row['read']:>4} written {row['written']:>3}  "
                f"{_calls(row['dynamodb_calls'])}; {_calls(row['sagemaker_calls'])}",
                flush=True,
            )
    text = section(
        cold,
        imports,
        packages,
        events,
        command=command,
        code=code,
        processes=args.processes,
        total_s=time.perf_counter() - started,
    )
    if args.write:
        write_section(args.results, text, start=START_MARKER, end=END_MARKER)
        print(f"wrote {args.results}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
