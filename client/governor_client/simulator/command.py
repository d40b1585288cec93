"""``tuning-governor simulate SCENARIO --out EVENTS.jsonl``: an event log from a scenario file, offline.

The scenario (:mod:`governor_client.simulator.scenario_file`) runs on the AMT stand-in with a virtual clock and
EventBridge's delivery (with the file's faults), without the governor: the log holds what SageMaker
would emit for those jobs if nothing stopped them, one EventBridge event per line, in delivery order
(duplicates included). ``tuning-governor replay EVENTS.jsonl --policy POLICY.yaml`` then shows what a
policy would do to them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from governor_client.cli.errors import CommandError
from governor_client.cli.progress import Bar, progress_bar

if TYPE_CHECKING:
    from governor_client.simulator.simulation import Progress

DESCRIPTION = (
    "Run SCENARIO (YAML or JSON: jobs with their creation times, instance types and counts, MaxParallel,"
    " trials' behaviour, teams and tags, delivery faults, a seed) on the AMT stand-in, offline, and write"
    " the EventBridge events SageMaker would emit, one per line: the input of `tuning-governor replay`."
    " See docs/reference/cli.md and examples/scenario.yaml."
)
FAKE_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``simulate`` subcommand's arguments."""
    parser.add_argument("scenario", metavar="SCENARIO", help="the scenario file, YAML or JSON (examples/scenario.yaml)")
    parser.add_argument("--out", required=True, metavar="EVENTS.jsonl", help="where the event log is written")
    parser.add_argument("--seed", type=int, default=None, help="override the scenario's seed")


@contextlib.contextmanager
def offline_environment() -> Iterator[None]:
    """Fake credentials and no custom endpoint while inside (restored afterwards): moto answers every
    call, whatever the operator's AWS settings (an AWS_ENDPOINT_URL would take calls past moto)."""
    endpoints = [key for key in os.environ if key.startswith("AWS_ENDPOINT_URL")]
    saved = {key: os.environ.get(key) for key in (*FAKE_AWS, *endpoints)}
    for key in endpoints:
        del os.environ[key]
    os.environ.update(FAKE_AWS)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _show(bar: Bar) -> object:
    def show(p: Progress) -> None:
        hours = p.virtual_elapsed_s / 3600
        bar.update(
            completed=p.actions_done,
            total=p.actions_total,
            info=f"jobs created; virtual +{hours:.1f} h, {p.deliveries} events" + (" done" if p.done else ""),
        )

    return show


def run_command(args: argparse.Namespace) -> int:
    """Write the event log; 0, or ``CommandError`` (exit 2) for an unusable scenario or output path."""
    from governor_client.simulator.scenario_file import load_scenario  # noqa: PLC0415 - once it runs (a usage error is argparse's)
    from governor_client.simulator.simulation import Simulation  # noqa: PLC0415 - the simulator (moto)

    loaded = load_scenario(args.scenario)
    out = Path(args.out)
    if not out.resolve().parent.is_dir():
        raise CommandError(f"cannot write {out}: its directory does not exist")
    seed = loaded.seed if args.seed is None else args.seed
    from moto import mock_aws  # noqa: PLC0415 - the simulator's dependency, loaded when it runs

    with offline_environment(), mock_aws(), progress_bar("simulating") as bar:
        simulation = Simulation(
            loaded.scenario,
            seed=seed,
            faults=loaded.faults,
            start=loaded.start,
            handlers=False,
            sns=False,
            event_log=out,
            keep_outcomes=False,
            on_progress=_show(bar),  # type: ignore[arg-type]
            progress_every_s=900,
        )
        with simulation as sim:
            result = sim.run()
    jobs = len(loaded.scenario.tuning_jobs)
    truncated = " (stopped at the 30-day limit)" if result.truncated else ""
    print(f"{out}: {result.deliveries} events of {jobs} tuning job(s){truncated}")
    print(f"next: tuning-governor replay {out} --policy POLICY.yaml")
    return 0
