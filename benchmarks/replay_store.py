"""Benchmark: ``tuning-governor replay`` on the in-memory store and on moto, against the simulator alone.

    .venv/bin/python benchmarks/replay_store.py [--sizes 5000 50000] [--repeats 3] [--large-repeats 1]
                                                [--moto-sizes 5000] [--write]

For each size, the simulator (:func:`governor_client.simulator.workload.many_jobs`, the same mix as benchmarks/run.py,
light EventBridge faults: duplicates and delays) runs *without* the handlers and writes its event log:
that run is the **simulator-alone baseline**. The log is then replayed under benchmarks/replay-policy.yaml
(enforce, every guard on) with ``--store memory`` (``replay_file``: it reads the file twice and forgets each
tuning job once it has settled, ``governor_client.replay.forget``) and, for comparison, reading the log once
(``replay-memory-one-pass``: ``replay_lines`` without ``reread``, nothing forgotten); at the sizes in ``--moto-sizes`` with ``--store moto``
(stock moto: every transaction deep-copies the table, so its time and memory grow with N^2: at 5,000 it
was killed by the out-of-memory killer at 24 GB, so the default replays it at 1,000 only); and at the
sizes in ``--moto-fast-sizes`` with ``--store moto`` under benchmarks/run.py's touched-item rollback
(moto without the whole-table copies; run.py checks it leaves the same table as stock moto). Every run
is a fresh subprocess: wall time is measured around the simulation or the replay only, peak memory is
the process's ``ru_maxrss`` (a run killed by the system is reported as such, with its peak). Runs are interleaved across modes; medians are
reported, and each replay's result is hashed (canonical JSON, lists sorted) so a table row shows whether
both stores gave the same result. ``--write`` replaces this benchmark's section of benchmarks/RESULTS.md.
This is a benchmark, not a test: the targets are reported, not asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import resource
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
POLICY = ROOT / "benchmarks" / "replay-policy.yaml"
START_MARKER = "<!-- replay-store: written by benchmarks/replay_store.py --write -->"
END_MARKER = "<!-- replay-store: end -->"
MODES = ("simulator", "replay-memory", "replay-memory-one-pass", "replay-moto", "replay-moto-fast")
TARGET_SECONDS_50K = 60.0
TARGET_RATIO = 2.0

from governor_client.offline.env_vars import use_offline_environment  # noqa: E402 - imports only os

use_offline_environment(POWERTOOLS_SERVICE_NAME="tuning-governor")


def canonical(value: Any) -> Any:
    """A JSON value with every list sorted (by its items' canonical JSON) and keys sorted on dumping."""
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [canonical(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return value


def result_digest(result_json: str) -> str:
    text = json.dumps(canonical(json.loads(result_json)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _rss_kib() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def simulate(trial_events: int, log: Path) -> dict[str, Any]:
    """The simulator alone (no handlers) writing its event log: the baseline, and the replays' input."""
    import warnings  # noqa: PLC0415

    from moto import mock_aws  # noqa: PLC0415

    from governor_client.simulator.delivery import DeliveryFaults  # noqa: PLC0415
    from governor_client.simulator.simulation import Simulation  # noqa: PLC0415
    from governor_client.simulator.workload import many_jobs  # noqa: PLC0415

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    faults = DeliveryFaults(same_id_duplicate_rate=0.01, new_id_duplicate_rate=0.02, max_delay_s=5.0, seed=11)
    simulation = Simulation(many_jobs(trial_events), seed=7, faults=faults, handlers=False, event_log=log)
    with mock_aws(), simulation as sim:
        rss_before = _rss_kib()
        started = time.perf_counter()
        result = sim.run()
        wall = time.perf_counter() - started
    return {
        "wall_s": wall,
        "trial_events": result.trial_events_delivered,
        "deliveries": result.deliveries,
        "tuning_jobs": len(result.tuning_jobs),
        "rss_before_run_kib": rss_before,
        "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }


def replay(log: Path, store: str) -> dict[str, Any]:
    """One replay of ``log`` with ``store`` (``memory``, ``moto`` or ``moto-fast``), as ``tuning-governor
    replay`` runs it; ``memory-one-pass``: the in-memory store reading the log once (``replay_lines``
    without ``reread``: it forgets no job, the comparison for ``governor_client.replay.forget``)."""
    import contextlib  # noqa: PLC0415

    from governor_client.replay import load_policy, replay_file, replay_lines  # noqa: PLC0415

    fast: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if store == "moto-fast":
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from run import touched_item_rollback  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415

        fast, store = touched_item_rollback(), "moto"
    policy = load_policy(POLICY)
    rss_before = _rss_kib()
    started = time.perf_counter()
    source = str(POLICY.relative_to(ROOT))
    with fast:
        if store == "memory-one-pass":
            with log.open("rb") as once:
                result = replay_lines(once, policy, policy_source=source, store="memory")
        else:
            result = replay_file(log, policy, policy_source=source, store=store)
    wall = time.perf_counter() - started
    return {
        "wall_s": wall,
        "lines": result.events.lines,
        "processed": result.events.processed,
        "failed": result.events.failed,
        "tuning_jobs": len(result.jobs),
        "stops": len(result.actions),
        "decisions": sum(len(job.decisions) for job in result.jobs.values()),
        "digest": result_digest(result.model_dump_json()),
        "rss_before_run_kib": rss_before,
        "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }


# -- orchestration ------------------------------------------------------------------------------------------
def _subprocess(arguments: list[str]) -> dict[str, Any]:
    """Run this script with ``arguments`` in a fresh interpreter; its JSON output, or what killed it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        command = [sys.executable, __file__, *arguments, "--out", str(out)]
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=ROOT)  # noqa: S603
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            return {
                "killed": f"exit {child.returncode}" if child.returncode > 0 else f"signal {-child.returncode}",
                "wall_s": time.perf_counter() - started,
                "ru_maxrss_kib": usage.ru_maxrss,
                "rss_before_run_kib": 0,
            }
        data: dict[str, Any] = json.loads(out.read_text())
        return data


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _plan(args: argparse.Namespace, size: int) -> dict[str, int]:
    small = size <= args.small
    repeats = int(args.repeats if small else args.large_repeats)
    return {
        "simulator": repeats,
        "replay-memory": repeats,
        "replay-memory-one-pass": int(args.one_pass_repeats),
        "replay-moto": int(args.moto_repeats) if size in args.moto_sizes else 0,
        "replay-moto-fast": int(args.moto_repeats) if size in args.moto_fast_sizes else 0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 50000], help="trial events per log")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the baseline and the memory replay (small)")
    parser.add_argument("--large-repeats", type=int, default=1, help="the same above --small")
    parser.add_argument("--small", type=int, default=5000, help="largest size counted as small")
    parser.add_argument("--moto-sizes", type=int, nargs="*", default=[1000], help="sizes replayed on stock moto too")
    parser.add_argument(
        "--moto-fast-sizes", type=int, nargs="*", default=[5000], help="sizes replayed on moto with run.py's fast path"
    )
    parser.add_argument("--moto-repeats", type=int, default=1, help="moto replays per size in --moto-sizes")
    parser.add_argument(
        "--one-pass-repeats", type=int, default=1, help="replays per size reading the log once (forgetting nothing)"
    )
    parser.add_argument("--write", action="store_true", help="replace this benchmark's section of RESULTS.md")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--simulate-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--replay-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--store", default="memory", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.simulate_worker is not None:
        args.out.write_text(json.dumps(simulate(args.simulate_worker, args.log)))
        return 0
    if args.replay_worker is not None:
        args.out.write_text(json.dumps(replay(args.replay_worker, args.store)))
        return 0

    command = " ".join([".venv/bin/python benchmarks/replay_store.py", *(argv if argv is not None else sys.argv[1:])])
    code = git_head()
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
        for size in args.sizes:
            plan = _plan(args, size)
            log = Path(tmp) / f"events-{size}.jsonl"
            runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES if plan[mode] > 0}
            for index in range(max(plan.values())):
                for mode, mode_runs in runs.items():
                    if index >= plan[mode]:
                        continue
                    print(f"size {size:>6} {mode:<14} run {index + 1}/{plan[mode]} ...", end=" ", flush=True)
                    if mode == "simulator":
                        arguments = ["--simulate-worker", str(size), "--log", str(log)]
                    else:
                        arguments = ["--replay-worker", str(log), "--store", mode.removeprefix("replay-")]
                    mode_runs.append(_subprocess(arguments))
                    killed = mode_runs[-1].get("killed")
                    print(f"{mode_runs[-1]['wall_s']:.1f} s" + (f" ({killed})" if killed else ""), flush=True)
            lines = sum(1 for _ in log.open("rb"))
            rows += [{"size": size, "mode": mode, "runs": r, "log_lines": lines} for mode, r in runs.items()]
    section = render(rows, command=command, code=code, total_s=time.perf_counter() - started)
    print(section)
    if args.write:
        write_section(args.results, section, start=START_MARKER, end=END_MARKER)
        print(f"wrote {args.results}")
    return 0


def render(rows: list[dict[str, Any]], *, command: str, code: str, total_s: float) -> str:
    baseline = {row["size"]: _median([r["wall_s"] for r in row["runs"]]) for row in rows if row["mode"] == "simulator"}
    lines = [
        START_MARKER,
        "## Replay: in-memory store vs moto, against the simulator alone",
        "",
        f"- command: `{command}` (from the repository root)",
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; code: {code}; took {total_s / 60:,.1f} min",
        f"- machine: {os.cpu_count()} CPUs (nproc), {platform.machine()}, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; shared with other work while it ran",
        "- workload: `governor_client.simulator.workload.many_jobs` (the mix of benchmarks/run.py) with 1 % same-id and 2 % new-id"
        " duplicates; replayed under `benchmarks/replay-policy.yaml` (enforce, every guard on)",
        f"- targets: replay of 50,000 trial events < {TARGET_SECONDS_50K:.0f} s and <= {TARGET_RATIO:.0f}x the"
        " simulator alone; memory flat in N",
        "",
        "simulator = the simulator alone (no handlers) writing the event log; replay-* = `replay_file` of that log"
        " (two readings: the in-memory store forgets each job once it has settled, `governor_client.replay.forget`);"
        " replay-memory-one-pass = `replay_lines` reading it once (no `reread`: forgets nothing)."
        " Wall = median seconds around the run only (each run a fresh process); x baseline = median wall / median"
        " simulator wall at the same size; RSS = the process's peak `ru_maxrss` (median), 'before' = after imports"
        " and setup. result digest = sha256 of the replay result as canonical JSON (lists sorted): equal digests ="
        " the same result.",
        "",
        "| trial events (target) | mode | runs | log lines | trial events | wall s (median) | min-max s | x baseline"
        " | us per line | RSS MiB | RSS before MiB | stops | decisions | result digest |",
        "|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        runs = row["runs"]
        walls = [r["wall_s"] for r in runs]
        wall = _median(walls)
        first = runs[0]
        base = baseline.get(row["size"])
        trial_events = next(
            (r["runs"][0]["trial_events"] for r in rows if r["size"] == row["size"] and r["mode"] == "simulator"), "-"
        )
        digests = sorted({r.get("digest") or (f"killed ({r['killed']})" if r.get("killed") else "-") for r in runs})
        lines.append(
            f"| {row['size']:,} | {row['mode']} | {len(runs)} | {row['log_lines']:,} | {trial_events:,} | {wall:,.1f} |"
            f" {min(walls):,.1f}-{max(walls):,.1f} | {wall / base if base else float('nan'):,.1f} |"
            f" {1e6 * wall / max(1, row['log_lines']):,.0f} | {_median([r['ru_maxrss_kib'] for r in runs]) / 1024:,.0f} |"
            f" {_median([r['rss_before_run_kib'] for r in runs]) / 1024:,.0f} | {first.get('stops', '-')} |"
            f" {first.get('decisions', '-')} | {', '.join(digests)} |".replace(
                "| replay-moto-fast |", "| replay-moto (fast path) |"
            )
        )
    lines += ["", END_MARKER, ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
