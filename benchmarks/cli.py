"""How long ``tuning-governor`` takes to answer, per command: median wall time of fresh processes.

    python benchmarks/cli.py                 # print the table (7 runs of each case)
    python benchmarks/cli.py --runs 11 --write   # also rewrite its section of benchmarks/RESULTS.md and cli.json

hyperfine-style: each case is one command line run in a fresh interpreter (``python -m governor_client``,
what the ``tuning-governor`` script runs), after one warm-up run; the cases are interleaved round by
round so a busy machine slows them alike, and ``python -c pass`` is measured in the same rounds (the
interpreter's own start, the floor every case stands on). A case's figure is the median of its runs;
the ratio is that median over the baseline's.

The AWS cases run without credentials, offline: no keys, no profile, and the instance metadata service
an address that accepts connections and never answers (as a laptop off EC2 sees it), so the credential
chain waits its one metadata timeout (cli_aws) before the command says "no AWS credentials".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository (run as a script)

from benchmarks.results_file import ROOT, git_head, write_section

RESULTS, JSON_OUT = ROOT / "benchmarks" / "RESULTS.md", ROOT / "benchmarks" / "cli.json"
START, END = "<!-- cli-timings: start (benchmarks/cli.py --write) -->", "<!-- cli-timings: end -->"


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    """After ``python``; ``-m governor_client`` is added unless the case is the baseline."""
    budget_s: float | None
    """The most the case may take (None: no budget, reported only)."""
    code: int
    """The exit status the case must give (a case that fails otherwise is a broken measurement)."""
    aws: bool = False


CLI = ("-m", "governor_client")
CASES: tuple[Case, ...] = (
    Case("python -c pass (baseline)", ("-c", "pass"), None, 0),
    Case("--help", (*CLI, "--help"), 0.5, 0),
    Case("--version", (*CLI, "--version"), 0.5, 0),
    *(
        Case(f"{name} --help", (*CLI, name, "--help"), None, 0)
        for name in ("replay", "validate", "report", "simulate", "prices", "check", "submit", "demo")
    ),
    Case("usage error (replay, no arguments)", (*CLI, "replay"), 1.0, 2),
    Case("validation error: check, a request SageMaker's model refuses", (*CLI, "check", "invalid.json"), 1.0, 2),
    Case("validation error: validate, a broken policy", (*CLI, "validate", "broken.yaml"), 1.0, 2),
    Case(
        "validation error: submit, a request SageMaker's model refuses",
        (
            *CLI,
            *[
                "submit",
                "invalid.json",
                "--queue-url",
                "https://sqs.us-east-1.amazonaws.com/000000000000/q",
                "--client-token",
                "t",
            ],
        ),
        1.0,
        2,
    ),
    Case(
        "check REQUEST.json --policy (offline, a verdict)",
        (*CLI, "check", "request.json", "--policy", "policy.yaml"),
        None,
        0,
    ),
    Case("validate POLICY (offline)", (*CLI, "validate", "policy.yaml"), None, 0),
    Case("no credentials: report --table", (*CLI, "report", "--table", "t", "--out", "report"), 2.0, 3, aws=True),
    Case("no credentials: check --table", (*CLI, "check", "request.json", "--table", "t"), 2.0, 3, aws=True),
    Case(
        "no credentials: submit",
        (
            *CLI,
            "submit",
            "request.json",
            "--queue-url",
            "https://sqs.us-east-1.amazonaws.com/000000000000/q",
            "--client-token",
            "t",
        ),
        2.0,
        3,
        aws=True,
    ),
)


def _inputs(folder: Path) -> None:
    from governor_client.simulator.scenarios import seed_tuning_request  # noqa: PLC0415 - the repository's sources

    request = seed_tuning_request()
    (folder / "request.json").write_text(json.dumps(request), encoding="utf-8")
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = "two"
    (folder / "invalid.json").write_text(json.dumps(request), encoding="utf-8")
    (folder / "policy.yaml").write_text("mode: enforce\nquotas: {ml.m5.xlarge: 16}\n", encoding="utf-8")
    (folder / "broken.yaml").write_text("mode: enforse\n", encoding="utf-8")


@contextlib.contextmanager
def silent_metadata_service() -> Iterator[str]:
    """An endpoint on 127.0.0.1 that accepts connections and never answers: IMDS as seen off EC2."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        server.close()


def _environment(folder: Path, imds: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return env | {
        "AWS_CONFIG_FILE": str(folder / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(folder / "no-credentials"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds,
    }


def _run(case: Case, folder: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - this interpreter, our own command
        [sys.executable, *case.argv], cwd=folder, env=env, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != case.code:
        raise SystemExit(f"{case.name}: exit {done.returncode}, expected {case.code}: {done.stderr.strip()[:300]}")
    return elapsed


def measure(runs: int) -> dict[str, object]:
    """Every case's runs (seconds), interleaved round by round after one warm-up round."""
    times: dict[str, list[float]] = {case.name: [] for case in CASES}
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as name, silent_metadata_service() as imds:
        folder = Path(name)
        _inputs(folder)
        env = _environment(folder, imds)
        for round_ in range(runs + 1):
            for case in CASES:
                elapsed = _run(case, folder, env)
                if round_:
                    times[case.name].append(elapsed)
    load = os.getloadavg()
    return {
        "commit": git_head(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "load_after": round(load[0], 2),
        "runs": runs,
        "cases": [_summary(case, times[case.name], statistics.median(times[CASES[0].name])) for case in CASES],
    }


def _summary(case: Case, runs: list[float], baseline: float) -> dict[str, object]:
    median = statistics.median(runs)
    return {
        "name": case.name,
        "command": " ".join(("python", *case.argv)),
        "median_s": round(median, 3),
        "min_s": round(min(runs), 3),
        "max_s": round(max(runs), 3),
        "ratio": round(median / baseline, 1),
        "budget_s": case.budget_s,
        "within": None if case.budget_s is None else median < case.budget_s,
    }


def table(result: dict[str, object]) -> str:
    """The RESULTS.md section for ``result``."""
    cases = result["cases"]
    assert isinstance(cases, list)
    rows = [
        "## CLI: how long `tuning-governor` takes to answer",
        "",
        f"`python benchmarks/cli.py --runs {result['runs']} --write` on {result['date']}, commit {result['commit']},"
        f" {result['cpus']} CPUs (load {result['load_after']} after the run). Median of {result['runs']} fresh"
        " processes per case, after one warm-up, cases interleaved round by round; ratio = median / the"
        " baseline's median (`python -c pass`, measured in the same rounds). AWS cases: no credentials,"
        " offline (an instance metadata service that never answers).",
        "",
        "| case | median | min | max | x baseline | budget |",
        "|---|---|---|---|---|---|",
    ]
    for case in cases:
        budget = "" if case["budget_s"] is None else f"< {case['budget_s']} s: {'yes' if case['within'] else 'NO'}"
        rows.append(
            f"| {case['name']} | {case['median_s']:.2f} s | {case['min_s']:.2f} s | {case['max_s']:.2f} s"
            f" | {case['ratio']} | {budget} |"
        )
    return "\n".join([START, *rows, END]) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each case (default 7)")
    parser.add_argument(
        "--write", action="store_true", help="rewrite the section of benchmarks/RESULTS.md and cli.json"
    )
    args = parser.parse_args()
    result = measure(args.runs)
    section = table(result)
    print(section, end="")
    if args.write:
        write_section(RESULTS, section, start=START, end=END)
        JSON_OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS} and {JSON_OUT}")
    return 0 if all(c["within"] is not False for c in result["cases"]) else 1  # type: ignore[union-attr]


if __name__ == "__main__":
    raise SystemExit(main())
