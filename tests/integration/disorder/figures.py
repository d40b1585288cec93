"""The live-disorder suite's figures, as benchmarks/RESULTS.md ("Disorder suite") carries them.

    python -m tests.integration.disorder.figures [--details]

Runs every scenario x seed under perfect delivery and under each fault profile (the same runs as
``pytest -m disorder``) and prints, per scenario x profile: runs, wrong stops, missed stops, the largest
lateness of a stop against perfect delivery's, dollars mismatches; ``--details`` lists each finding.
"""

from __future__ import annotations

import argparse
import time
import warnings

from governor_client.offline.env_vars import use_offline_environment

use_offline_environment()

from .compare import Verdict, compare, max_lateness  # noqa: E402 - after the fake credentials
from .scenarios import SCENARIOS  # noqa: E402 - after the fake credentials


def _lateness(verdicts: list[Verdict]) -> str:
    late = max_lateness(verdicts)
    return "-" if late is None else f"{late:+.0f} s"


def table(details: bool = False) -> list[str]:
    """The markdown table (and, with ``details``, each finding under it)."""
    lines = [
        "| scenario | profile | runs | wrong stops | missed stops | max lateness | dollars mismatches | runs with a finding |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    notes: list[str] = []
    for name, spec in SCENARIOS.items():
        for profile in spec.profiles:
            verdicts = [compare(name, seed, profile) for seed in spec.seeds]
            lines.append(
                f"| {name} | {profile} | {len(verdicts)} | {sum(len(v.wrong) for v in verdicts)} |"
                f" {sum(len(v.missed) for v in verdicts)} | {_lateness(verdicts)} |"
                f" {sum(len(v.dollars) for v in verdicts)} | {sum(not v.ok for v in verdicts)} |"
            )
            for seed, verdict in zip(spec.seeds, verdicts, strict=True):
                for kind, found in (("wrong", verdict.wrong), ("missed", verdict.missed), ("dollars", verdict.dollars)):
                    notes += [f"- {name} seed {seed} {profile}: {kind}: {finding}" for finding in found]
    return lines + (["", *notes] if details else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--details", action="store_true", help="list each wrong stop, missed stop and mismatch")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    started = time.perf_counter()
    print("\n".join(table(args.details)))
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
