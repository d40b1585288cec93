"""Benchmark: a replay on moto's DynamoDB with and without ``governor_client.offline.moto_speed``, paired.

    .venv/bin/python benchmarks/moto_speed.py [--events 400] [--runs 3] [--write]

The busy account's log (the store-equivalence test's: many small tuning jobs of five teams, duplicates
and delays on) is written once by the simulator, then replayed with ``--store moto`` in fresh
processes, alternating "moto alone" and "per request" (``TUNING_GOVERNOR_MOTO_SPEED=0``/``1``), so both
see the same machine load. Each run's result file is compared with the first one's (canonical JSON):
a speed-up that changed the result would be reported as such. Medians and their ratio are printed;
``--write`` replaces the moto-speed section of benchmarks/RESULTS.md. This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import git_head, write_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START_MARKER = "<!-- moto-speed: written by benchmarks/moto_speed.py --write -->"
END_MARKER = "<!-- moto-speed: end -->"
POLICY = ROOT / "benchmarks" / "replay-policy.yaml"
MODES = {"moto alone": "0", "per request": "1"}

_REPLAY = """
import os, sys
from governor_client.offline import moto_speed
if os.environ["TUNING_GOVERNOR_MOTO_SPEED"] == "0":
    moto_speed.install = lambda: False
from governor_client.__main__ import main
sys.exit(main(["replay", sys.argv[1], "--policy", sys.argv[2], "--store", "moto", "--out", sys.argv[3]]))
"""


def _environment(mode: str) -> dict[str, str]:
    paths = [str(ROOT / "layers" / "governor"), str(ROOT / "client"), str(ROOT)]
    return os.environ | {
        "TUNING_GOVERNOR_MOTO_SPEED": mode,
        "PYTHONPATH": os.pathsep.join(paths),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def _canonical(value: object) -> object:
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items() if k != "policy"}
    if isinstance(value, list):
        return sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def _log(events: int, folder: Path) -> Path:
    sys.path[:0] = [str(ROOT), str(ROOT / "client"), str(ROOT / "layers" / "governor")]
    os.environ.update(_environment("1"))
    from tests.integration.replay.conftest import busy_account_log  # noqa: PLC0415 (after the paths)

    return Path(busy_account_log(folder / "events.jsonl", events))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="moto-speed-"))
    log = _log(args.events, folder)
    seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
    results: set[str] = set()
    load = [os.getloadavg()[0]]
    for run in range(args.runs):
        for mode, flag in MODES.items():
            out = folder / f"result-{flag}-{run}.json"
            began = time.perf_counter()
            subprocess.run(  # noqa: S603 (this interpreter, this script)
                [sys.executable, "-c", _REPLAY, str(log), str(POLICY), str(out)],
                env=_environment(flag),
                check=True,
                stdout=subprocess.DEVNULL,
            )
            seconds[mode].append(time.perf_counter() - began)
            results.add(json.dumps(_canonical(json.loads(out.read_text())), sort_keys=True))
    load.append(os.getloadavg()[0])
    medians = {mode: statistics.median(values) for mode, values in seconds.items()}
    lines = [
        START_MARKER,
        f"Replay of {sum(1 for _ in log.open())} events on moto's DynamoDB, {args.runs} paired runs each, "
        f"fresh processes (`python benchmarks/moto_speed.py --events {args.events} --runs {args.runs} --write`; "
        f"{git_head()}, load average {load[0]:.1f} → {load[-1]:.1f} on {os.cpu_count()} cores):",
        "",
        "| moto's DynamoDB | median s | runs (s) |",
        "|---|---|---|",
        *(
            f"| {mode} | {medians[mode]:.1f} | {', '.join(f'{s:.1f}' for s in values)} |"
            for mode, values in seconds.items()
        ),
        "",
        f"Per request is {medians['moto alone'] / medians['per request']:.2f}x faster; "
        + ("every run's result is the same." if len(results) == 1 else f"**{len(results)} different results**."),
        END_MARKER,
    ]
    print("\n".join(lines[1:-1]))
    if args.write:
        write_section(RESULTS, "\n".join(lines) + "\n", start=START_MARKER, end=END_MARKER)
    return 0 if len(results) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
