"""The figures the user documents (README.md, docs/**/*.md) give a user to check (how long, how big),
measured here (or read from benchmarks/RESULTS.md and cli.json, which the benchmarks write) and written
into those documents from one results file, benchmarks/claims.json.

    python scripts/measure_claims.py --measure                 # measure on this checkout, then --write
    python scripts/measure_claims.py --measure --fresh-clone   # also `make setup` + `make demo` on a fresh clone (minutes)
    python scripts/measure_claims.py --write                   # rewrite the documents from claims.json (no measuring)

Each figure sits in its document between ``<!-- claim:NAME -->`` and ``<!-- /claim -->``;
tests/unit/test_claims.py checks that every such text is what ``render(NAME, claims)`` gives for the
results file, and that the documents hold no other timing or size figure that no script measured.

What is measured:

* ``demo``: ``python -m governor_client demo`` in this checkout, wall clock (the demo alone);
* ``fresh_clone``: ``git clone`` of this repository's HEAD into a temporary folder, then ``make setup``
  (a venv, pip install of the dev extra) and ``make demo``, each timed; and the venv's size (``du``);
* ``slack_import``: ``import slack_sdk.models.blocks`` after ``tuning_governor.app.wiring``, in fresh
  processes (median and range of 7);
* ``layer``: the Lambda layer's packages (``layers/governor/requirements.txt`` and ``tuning_governor``)
  as installed here: the bytes of their files, and zipped;
* ``cli``: the CLI timings benchmarks/cli.py wrote to benchmarks/cli.json (not re-measured here).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT / "benchmarks" / "claims.json"
CLI_TIMINGS = ROOT / "benchmarks" / "cli.json"
#: Every user document: README.md and docs/**/*.md (not docs/decisions/, the design records).
DOCUMENTS = (ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "decisions" not in p.parts))
CLAIM = re.compile(r"<!-- claim:(?P<name>[a-z_-]+) -->(?P<text>.*?)<!-- /claim -->", re.DOTALL)


def _wall(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)  # noqa: S603 - our own commands
    return round(time.perf_counter() - started, 1)


def _load() -> float:
    """The machine's 1-minute load average (runnable processes), recorded beside every timing: on a 2-core
    machine a load of 2 is full, and a figure measured at 8 says the machine was shared, not how fast it is."""
    return round(os.getloadavg()[0], 1)


def _cores() -> int:
    return os.cpu_count() or 1


def measure_demo() -> dict[str, Any]:
    before = _load()
    with tempfile.TemporaryDirectory(prefix="claims-demo-") as out:
        wall = _wall([sys.executable, "-m", "governor_client", "demo", "--report-dir", out], ROOT)
    return {
        "wall_s": wall,
        "command": "python -m governor_client demo",
        "load_before": before,
        "load": _load(),
        "cores": _cores(),
    }


def measure_fresh_clone() -> dict[str, Any]:
    before = _load()
    with tempfile.TemporaryDirectory(prefix="claims-clone-") as folder:
        clone = Path(folder) / "tuning-governor"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)  # noqa: S603, S607
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        setup = _wall(["make", "setup"], clone, env)
        demo = _wall(["make", "demo"], clone, env)
        size = subprocess.run(["du", "-sm", ".venv"], cwd=clone, check=True, capture_output=True, text=True)  # noqa: S607
    return {
        "setup_s": setup,
        "demo_s": demo,
        "total_s": round(setup + demo, 1),
        "venv_mb": int(size.stdout.split()[0]),
        "load_before": before,
        "load": _load(),
        "cores": _cores(),
    }


SLACK = (
    "import time, tuning_governor.app.wiring; t = time.perf_counter(); import slack_sdk.models.blocks;"
    " print(time.perf_counter() - t)"
)


def measure_slack_import(runs: int = 7) -> dict[str, Any]:
    times = [
        float(subprocess.run([sys.executable, "-c", SLACK], check=True, capture_output=True, text=True).stdout)  # noqa: S603
        for _ in range(runs)
    ]
    ms = [t * 1000 for t in times]
    return {"median_ms": round(statistics.median(ms)), "min_ms": round(min(ms)), "max_ms": round(max(ms)), "runs": runs}


def measure_layer() -> dict[str, Any]:
    """The bytes of the layer's packages as installed in this environment (x86_64 or arm64 wheels, as
    this machine has them), unzipped and zipped."""
    names = [
        re.split(r"[=<>\[ ;]", line.strip())[0]
        for line in (ROOT / "layers" / "governor" / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "-"))
    ]
    files: list[Path] = [p for p in (ROOT / "layers" / "governor" / "tuning_governor").rglob("*") if p.is_file()]
    for name in names:
        dist = importlib.metadata.distribution(name)
        files += [Path(str(dist.locate_file(f))) for f in dist.files or [] if "__pycache__" not in str(f)]
    files = [f for f in files if f.is_file()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, path in enumerate(files):
            archive.write(path, f"{index}/{path.name}")
    unzipped = sum(f.stat().st_size for f in files)
    return {
        "unzipped_mb": round(unzipped / 1e6),
        "zipped_mb": round(len(buffer.getvalue()) / 1e6),
        "packages": len(names),
    }


def _seconds(value: float) -> str:
    """``49 s``; ``3 min 27 s``."""
    whole = round(value)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60} s"


def _cli_case(claims: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in claims["cli"]["cases"] if c["name"] == name)


def _condition(run: dict[str, Any]) -> str:
    """The machine a figure was measured on: its cores and load average, and whether it was shared."""
    cores = run.get("cores", 2)
    loads = sorted({run[k] for k in ("load_before", "load") if k in run})
    load = "-".join(str(x) for x in loads)
    busy = max(loads) > cores
    return f"a {cores}-core machine, {'shared with other work, ' if busy else ''}load average {load}"


def _render_demo(claims: dict[str, Any]) -> str:
    clone, demo = claims.get("fresh_clone"), claims["demo"]
    own = f"the demo itself {_seconds(demo['wall_s'])} on {_condition(demo)}"
    if clone is None:
        return own
    return (
        f"{_seconds(clone['total_s'])} on a fresh clone on {_condition(clone)},"
        f" {_seconds(clone['setup_s'])} of it `make setup` creating the venv; {own}"
    )


def _render_cli(claims: dict[str, Any]) -> str:
    cli = claims["cli"]
    help_ = _cli_case(claims, "--help")
    invalid = _cli_case(claims, "validation error: check, a request SageMaker's model refuses")
    offline = _cli_case(claims, "no credentials: report --table")
    return (
        f"`--help` {help_['median_s']:.2f} s ({help_['ratio']}x `python -c pass`), a request SageMaker's model"
        f" refuses {invalid['median_s']:.2f} s, no credentials offline {offline['median_s']:.2f} s"
        f" (medians of {cli['runs']} runs, {cli['date']})"
    )


RESULTS = ROOT / "benchmarks" / "RESULTS.md"


def replay_row(size: str = "50,000", mode: str = "replay-memory") -> dict[str, str]:
    """benchmarks/replay_store.py's row for ``size`` trial events and ``mode``, from RESULTS.md."""
    header: list[str] = []
    for line in RESULTS.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| trial events (target) | mode |"):
            header = cells
        elif header and len(cells) == len(header) and cells[0] == size and cells[1] == mode:
            return dict(zip(header, cells, strict=True))
    raise LookupError(f"no {mode} row for {size} trial events in {RESULTS}")


def _render_replay(_: dict[str, Any]) -> str:
    row = replay_row()
    return (
        f"{row['trial events (target)']} trial events in {round(float(row['wall s (median)']))} s on a 2-core machine,"
        f" {row['x baseline']}x the simulator writing the same log, in {row['RSS MiB']} MiB"
    )


RENDER: dict[str, Callable[[dict[str, Any]], str]] = {
    "replay": _render_replay,
    "demo": _render_demo,
    "cli": _render_cli,
    "slack-import": lambda c: (
        f"{c['slack_import']['median_ms']} ms (median of {c['slack_import']['runs']} fresh processes,"
        f" {c['slack_import']['min_ms']}-{c['slack_import']['max_ms']} ms)"
    ),
    "layer": lambda c: (
        f"about {c['layer']['unzipped_mb']} MB unzipped ({c['layer']['zipped_mb']} MB zipped) as installed"
        " in the dev environment"
    ),
    "venv": lambda c: (
        f"{c['fresh_clone']['venv_mb']} MB (`du -sm .venv` after `make setup` on a fresh clone)"
        if c.get("fresh_clone")
        else "(not measured: run scripts/measure_claims.py --fresh-clone)"
    ),
}


def render(name: str, claims: dict[str, Any]) -> str:
    """The text a document holds for claim ``name``, from the results file's ``claims``."""
    return RENDER[name](claims)


def write_documents(claims: dict[str, Any]) -> list[Path]:
    """Rewrite every claim's text in the documents; the documents changed."""
    changed = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        new = CLAIM.sub(lambda m: f"<!-- claim:{m['name']} -->{render(m['name'], claims)}<!-- /claim -->", text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", action="store_true", help="measure on this checkout and update claims.json")
    parser.add_argument("--fresh-clone", action="store_true", help="with --measure: make setup + make demo on a clone")
    parser.add_argument("--write", action="store_true", help="rewrite the documents from claims.json")
    args = parser.parse_args()
    claims: dict[str, Any] = json.loads(CLAIMS.read_text()) if CLAIMS.exists() else {}
    if args.measure:
        claims |= {"demo": measure_demo(), "slack_import": measure_slack_import(), "layer": measure_layer()}
        if args.fresh_clone:
            claims["fresh_clone"] = measure_fresh_clone()
    if CLI_TIMINGS.exists():
        claims["cli"] = json.loads(CLI_TIMINGS.read_text())
    if args.measure:
        CLAIMS.write_text(json.dumps(claims, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {CLAIMS}")
    if args.measure or args.write:
        for path in write_documents(claims):
            print(f"wrote {path}")
    print(json.dumps(claims, indent=2, sort_keys=True)[:2000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
