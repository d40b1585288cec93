"""Benchmark: the simulator and the real handlers over many trial events (``make bench``).

    .venv/bin/python benchmarks/run.py [--sizes 5000 50000] [--repeats 3] [--large-handler-repeats 1]
                                       [--extra-repeats 1] [--trace] [--no-verify]

A *trial event* is a "SageMaker Training Job State Change" event delivered to the training handler. For
each size, a scenario of many small tuning jobs (10 trials, 3 in parallel, one created every minute,
5 teams, every strategy, some managed spot, some warm pools, 5 % failed trials, a standalone training
job for every tenth tuning job) is sized to about that many trial events and run by
:class:`governor_client.simulator.simulation.Simulation` under light EventBridge faults (1 % same-id and 2 % new-id
duplicates, delays up to 5 s). Every run is a fresh subprocess, so memory figures are per run. Modes:

* ``baseline``: everything but the handlers (stand-in, moto SageMaker, delivery, bookkeeping);
* ``handlers``: the real handlers, Powertools logging at WARNING and EMF metrics off, moto's
  TransactWriteItems with a touched-item rollback (see :func:`touched_item_rollback`);
* ``handlers-stock-moto``: the same with moto's own TransactWriteItems (it deep-copies the whole table
  on every transaction, so its cost grows with the table); small sizes only;
* ``handlers-info-logs``: the handlers with INFO logging and EMF metric lines on (written to
  /dev/null); small sizes only.

Repeats: ``--repeats`` runs of baseline at every size and of handlers at small sizes (<= ``--small``),
``--large-handler-repeats`` handler runs above it (one by default: about 25 minutes at 50,000 on a
2-core machine), ``--extra-repeats`` runs of the two comparison modes. Repeats are interleaved across
modes. Wall time is measured around ``Simulation.run`` only; peak memory as the process's
``ru_maxrss`` and, with ``--trace``, in one extra run per small size and mode as tracemalloc's peak
(tracemalloc slows Python down about 3x). Medians are written to benchmarks/RESULTS.md (text below its
notes marker is kept). This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from results_file import NOTES_MARKER, git_head

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
#: Text below this line in RESULTS.md is kept when the table above it is rewritten.
MODES = ("baseline", "handlers", "handlers-stock-moto", "handlers-info-logs")
SMALL_ONLY_MODES = ("handlers-stock-moto", "handlers-info-logs")

from governor_client.offline.env_vars import use_offline_environment  # noqa: E402 - imports only os

use_offline_environment(POWERTOOLS_SERVICE_NAME="tuning-governor")


# -- the workload ----------------------------------------------------------------------------------------


def scenario(trial_events: int) -> Any:
    """Many small tuning jobs (one every minute) and a standalone job for every tenth, for ~``trial_events``."""
    from governor_client.simulator.workload import many_jobs  # noqa: PLC0415

    return many_jobs(trial_events)


@contextlib.contextmanager
def touched_item_rollback() -> Iterator[None]:
    """moto's TransactWriteItems, rolled back item by item instead of by a deep copy of whole tables.

    moto backs a transaction up with ``copy.deepcopy`` of every table it touches, which makes each
    transaction cost O(table size). This wrapper snapshots only the items the transaction names, lets
    moto run it with table deep copies turned into no-ops, and on any failure restores those items and
    re-raises. Only the named items can change in a transaction, so the outcome is the same
    (``--verify`` checks it on a small scenario).
    """
    from moto.dynamodb.models import DynamoDBBackend  # noqa: PLC0415
    from moto.dynamodb.models.table import Table  # noqa: PLC0415

    original = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        snapshots: list[tuple[str, dict[str, Any], Any]] = []
        for entry in transact_items:
            for op_type, op in entry.items():
                name = op.get("TableName")
                if name not in self.tables:
                    continue
                table = self.tables[name]
                if op_type == "Put":
                    key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
                    if table.range_key_attr is not None:
                        key[table.range_key_attr] = op["Item"][table.range_key_attr]
                else:
                    key = op.get("Key")
                if key is not None:
                    snapshots.append((name, key, copy.deepcopy(self.get_item(name, key))))
        Table.__deepcopy__ = lambda table, memo: table  # type: ignore[attr-defined]
        try:
            original(self, transact_items)
        except Exception:
            for name, key, item in reversed(snapshots):
                if item is None:
                    self.delete_item(name, key)
                else:
                    self.put_item(name, item.to_json()["Attributes"])
            raise
        finally:
            del Table.__deepcopy__  # type: ignore[attr-defined]

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    try:
        yield
    finally:
        DynamoDBBackend.transact_write_items = original  # type: ignore[method-assign]


def _faults() -> Any:
    from governor_client.simulator.delivery import DeliveryFaults  # noqa: PLC0415

    return DeliveryFaults(same_id_duplicate_rate=0.01, new_id_duplicate_rate=0.02, max_delay_s=5.0, seed=11)


def _rss_kib() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _progress_reporter(target: int) -> Any:
    """A progress callback printing to stderr at most every 30 s of wall time (long runs only)."""
    last = time.perf_counter()

    def report(progress: Any) -> None:
        nonlocal last
        now = time.perf_counter()
        if now - last >= 30 and not progress.done:
            last = now
            share = progress.trial_events_delivered / max(1, target)
            print(
                f"    ... {progress.trial_events_delivered:,} trial events (~{share:.0%})", file=sys.stderr, flush=True
            )

    return report


def worker(trial_events: int, mode: str, trace: bool) -> dict[str, Any]:
    """One measured run in this process (the orchestrator starts a fresh process per run)."""
    import warnings  # noqa: PLC0415

    from moto import mock_aws  # noqa: PLC0415

    from governor_client.simulator.simulation import Simulation  # noqa: PLC0415

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    handlers = mode != "baseline"
    plan = scenario(trial_events)
    fast = contextlib.nullcontext() if mode == "handlers-stock-moto" else touched_item_rollback()
    quiet = mode != "handlers-info-logs"
    simulation = Simulation(
        plan,
        seed=7,
        faults=_faults(),
        handlers=handlers,
        keep_outcomes=False,
        quiet_handlers=quiet,
        on_progress=_progress_reporter(trial_events),
        progress_every_s=1800.0,
        # This benchmark measures the handlers on moto's DynamoDB (the replay benchmark measures both stores).
        environment={"store": "moto"},
        # The cost per trial event, as before the simulator kept the deployed schedule: no sweep.
        sweep_every=None,
    )
    with mock_aws(), fast, simulation as sim:
        rss_before = _rss_kib()
        if trace:
            tracemalloc.start()
        started = time.perf_counter()
        result = sim.run()
        wall = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] if trace else None
        if trace:
            tracemalloc.stop()
        summaries = sum(1 for name in result.tuning_jobs if handlers and sim.env.services.store.get_summary(name))
    return {
        "mode": mode,
        "target": trial_events,
        "tuning_jobs": len(result.tuning_jobs),
        "training_jobs": len(result.training_jobs),
        "trial_events": result.trial_events_delivered,
        "deliveries": result.deliveries,
        "events_emitted": result.events_emitted,
        "errors": result.errors,
        "summaries": summaries,
        "virtual_hours": round((result.finished_at - result.started_at).total_seconds() / 3600, 2),
        "wall_s": wall,
        "rss_before_run_kib": rss_before,
        "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "tracemalloc_peak_bytes": peak,
    }


# -- verification of the fast path ------------------------------------------------------------------------


def table_after(trial_events: int, fast: bool) -> list[dict[str, Any]]:
    """The governor's table (DynamoDB JSON, sorted by key) after a run with or without the fast path."""
    import warnings  # noqa: PLC0415

    from moto import mock_aws  # noqa: PLC0415

    from governor_client.offline.environment import TABLE_NAME  # noqa: PLC0415
    from governor_client.simulator.simulation import Simulation  # noqa: PLC0415

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    patch = touched_item_rollback() if fast else contextlib.nullcontext()
    with (
        mock_aws(),
        patch,
        Simulation(
            scenario(trial_events),
            seed=7,
            faults=_faults(),
            quiet_handlers=True,
            environment={"store": "moto"},
            sweep_every=None,
        ) as sim,
    ):
        sim.run()
        items = [
            item
            for page in sim.env.dynamodb.get_paginator("scan").paginate(TableName=TABLE_NAME)
            for item in page["Items"]
        ]
    return sorted(items, key=lambda item: (item["pk"]["S"], item["sk"]["S"]))


def verify(trial_events: int = 600) -> bool:
    """Stock moto and :func:`touched_item_rollback` leave identical tables after the same small run."""
    tables = [
        _subprocess(["--verify-worker", str(trial_events), *(["--fast"] if fast else [])]) for fast in (False, True)
    ]
    return bool(tables[0]) and tables[0] == tables[1]


# -- orchestration ----------------------------------------------------------------------------------------


def _subprocess(arguments: list[str]) -> Any:
    """Run this script with ``arguments`` in a fresh interpreter (stdout discarded); return its JSON output."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        command = [sys.executable, __file__, *arguments, "--out", str(out)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)  # noqa: S603
        return json.loads(out.read_text())


def _run_worker(trial_events: int, mode: str, trace: bool) -> dict[str, Any]:
    data: dict[str, Any] = _subprocess(
        ["--worker", str(trial_events), "--mode", mode, *(["--traced"] if trace else [])]
    )
    return data


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _fmt_s(value: float) -> str:
    return f"{value:,.1f}"


def _fmt_mib(kib: float) -> str:
    return f"{kib / 1024:,.0f}"


def _repeats(args: argparse.Namespace, mode: str, small: bool) -> int:
    if mode == "baseline" or (mode == "handlers" and small):
        return int(args.repeats)
    if mode == "handlers":
        return int(args.large_handler_repeats)
    return int(args.extra_repeats) if small else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 50000], help="trial events per run")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of baseline, and of handlers at small sizes")
    parser.add_argument("--large-handler-repeats", type=int, default=1, help="timed handler runs above --small")
    parser.add_argument("--extra-repeats", type=int, default=1, help="runs of the stock-moto and INFO-log modes")
    parser.add_argument("--small", type=int, default=5000, help="largest size counted as small")
    parser.add_argument(
        "--trace", action="store_true", help="also one tracemalloc run of baseline and handlers at small sizes"
    )
    parser.add_argument("--no-verify", action="store_true", help="skip checking the moto fast path")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--verify-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--fast", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, default="handlers", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker is not None:
        args.out.write_text(json.dumps(worker(args.worker, args.mode, args.traced)))
        return 0
    if args.verify_worker is not None:
        args.out.write_text(json.dumps(table_after(args.verify_worker, args.fast)))
        return 0

    command = " ".join([".venv/bin/python benchmarks/run.py", *(argv if argv is not None else sys.argv[1:])])
    code = git_head()  # the code measured is the code at the start
    started = time.perf_counter()
    verified: bool | None = None
    if not args.no_verify:
        print("verifying the moto fast path against stock moto ...", flush=True)
        verified = verify()
        print(f"  identical tables: {verified}", flush=True)
    rows: list[dict[str, Any]] = []
    for size in args.sizes:
        small = size <= args.small
        plan = {mode: _repeats(args, mode, small) for mode in MODES}
        runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES if plan[mode] > 0}
        # Repeats are interleaved across modes, so drift on a noisy machine hits every mode alike.
        for index in range(max(plan.values())):
            for mode, mode_runs in runs.items():
                if index < plan[mode]:
                    print(f"size {size:>6} {mode:<20} run {index + 1}/{plan[mode]} ...", end=" ", flush=True)
                    mode_runs.append(_run_worker(size, mode, trace=False))
                    print(f"{mode_runs[-1]['wall_s']:.1f} s", flush=True)
        for mode, mode_runs in runs.items():
            traced = None
            if small and args.trace and mode in ("baseline", "handlers"):
                print(f"size {size:>6} {mode:<20} tracemalloc run ...", end=" ", flush=True)
                traced = _run_worker(size, mode, trace=True)
                print(f"{traced['wall_s']:.1f} s", flush=True)
            rows.append({"size": size, "mode": mode, "runs": mode_runs, "traced": traced})
    _write_results(
        args.results, rows, command=command, code=code, verified=verified, total_s=time.perf_counter() - started
    )
    print(f"wrote {args.results}")
    return 0


def _write_results(
    path: Path, rows: list[dict[str, Any]], *, command: str, code: str, verified: bool | None, total_s: float
) -> None:
    baseline = {row["size"]: _median([r["wall_s"] for r in row["runs"]]) for row in rows if row["mode"] == "baseline"}
    lines = [
        "# Benchmark: simulator + handlers over many trial events",
        "",
        f"- command: `{command}` (from the repository root; `make bench` runs it with the defaults)",
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; code at the start: {code}",
        f"- machine: {os.cpu_count()} CPUs (nproc), {platform.machine()}, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}",
        f"- whole benchmark took {total_s / 60:,.1f} min",
        "- moto fast path (touched-item rollback) gives the same table as stock moto: "
        + ("yes (checked this run)" if verified else "NOT CHECKED" if verified is None else "**NO**"),
        "",
        "Wall = seconds in `Simulation.run` (median of the runs; each run a fresh process). "
        "x baseline = median wall / median baseline wall at the same size. "
        "RSS = process `ru_maxrss` (median), of which the interpreter, moto and the handlers' imports take "
        "the 'RSS before run' part. tracemalloc peak = Python allocations during the run (one separate run).",
        "",
        "| trial events (target) | mode | runs | trial events delivered | all deliveries | tuning jobs | wall s (median) | min-max s | x baseline | us per delivery | RSS MiB | RSS before run MiB | tracemalloc peak MiB |",
        "|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        runs = row["runs"]
        walls = [r["wall_s"] for r in runs]
        wall = _median(walls)
        first = runs[0]
        base = baseline.get(row["size"])
        ratio = f"{wall / base:,.1f}" if base else "-"
        traced = row["traced"]
        peak = f"{traced['tracemalloc_peak_bytes'] / 2**20:,.0f}" if traced else "-"
        lines.append(
            f"| {row['size']:,} | {row['mode']} | {len(runs)} | {first['trial_events']:,} | {first['deliveries']:,} | "
            f"{first['tuning_jobs']:,} | {_fmt_s(wall)} | {_fmt_s(min(walls))}-{_fmt_s(max(walls))} | {ratio} | "
            f"{1e6 * wall / max(1, first['deliveries']):,.0f} | {_fmt_mib(_median([r['ru_maxrss_kib'] for r in runs]))} | "
            f"{_fmt_mib(_median([r['rss_before_run_kib'] for r in runs]))} | {peak} |"
        )
    lines += [
        "",
        "Per run: "
        + "; ".join(
            f"{row['size']:,}/{row['mode']}: {row['runs'][0]['events_emitted']:,} events emitted, "
            f"{row['runs'][0]['virtual_hours']} virtual h, {row['runs'][0]['errors']} handler errors, "
            f"{row['runs'][0]['summaries']} summaries"
            for row in rows
        )
        + ".",
        "",
    ]
    notes = ""
    if path.exists() and NOTES_MARKER in path.read_text():
        notes = path.read_text().split(NOTES_MARKER, 1)[1]
    path.write_text("\n".join(lines) + "\n" + NOTES_MARKER + (notes or "\n"))


if __name__ == "__main__":
    raise SystemExit(main())
