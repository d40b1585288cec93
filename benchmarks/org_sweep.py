"""Benchmark: the sweep's wall time against member account-regions, and its time budget.

    .venv/bin/python benchmarks/org_sweep.py [--places 1 10 50 200] [--parallel 1 4] [--latency-ms 40] [--write]

Each cell governs ``places`` member account-regions (``org_calls.member_places``: fake account ids, two
regions per account, every one listed in ``accounts.<id>.regions``) from a hub in moto's account,
us-east-1, reached as the Lambda reaches them in organisation mode (``org_calls._wire``: the client
factory with ``MemberSessions``, AssumeRole on moto, credentials cached per place). One small tuning job
runs in every place, its events all lost, so the sweep's walk of each place is what finds it.

moto answers in well under a millisecond of network; AWS does not. Every AWS call the hub makes is given
``--latency-ms`` of wait before it is sent (botocore's ``before-call`` on every session and client of the hub, a ``time.sleep``: the thread waits
as it would on the network, and the others run). The second sweep of each cell is timed (the first one
fetches credentials and discovers the jobs): at one place at a time it is fitted as h + P * t (h: the
home place's sweep; t: per member place), and ``bound`` = h + ceil(P / k) * t, the figure
``app.sweep.places`` writes down for k places at once.

The time-budget cell runs one sweep of ``--budget-places`` places with an invocation that has
``--budget-seconds`` left at its start and a reserve of ``SWEEP_RESERVE_SECONDS`` = ``--reserve``: places
not begun before the reserve are deferred (``SweepPlacesDeferred``), and the next sweep begins with them.
The store is in memory. This is a benchmark, not a test: nothing here asserts; ``--write`` replaces the
section between the org-sweep markers of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from org_calls import HOME_REGION, INSTANCE, T0, _create_jobs, _wire, member_places
from results_file import git_head, write_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START_MARKER = "<!-- org-sweep: written by benchmarks/org_sweep.py --write -->"
END_MARKER = "<!-- org-sweep: end -->"


@dataclass
class Cell:
    places: int
    parallel: int
    calls: int = 0
    """AWS calls the timed sweep made (every place, the home one included)."""
    seconds: float = 0.0
    outcomes: str = ""


@dataclass
class Budget:
    places: int
    parallel: int
    budget: float
    reserve: int
    first_swept: int = 0
    first_deferred: int = 0
    first_seconds: float = 0.0
    second_starts_with_deferred: bool = False
    second_swept: int = 0


def _policy(places: list[tuple[str, str]]) -> Any:
    from tuning_governor.policy import Policy  # noqa: PLC0415
    from tuning_governor.policy.accounts import AccountPolicy  # noqa: PLC0415

    regions: dict[str, list[str]] = {}
    for account, region in places:
        regions.setdefault(account, []).append(region)
    return Policy(mode="enforce", accounts={a: AccountPolicy(mode="enforce", regions=r) for a, r in regions.items()})


@contextlib.contextmanager
def _world(count: int, parallel: int, latency: float, reserve: int = 60) -> Any:
    """A hub governing ``count`` member places, one running job in each, every AWS call ``latency`` s late."""
    from moto import mock_aws  # noqa: PLC0415

    from governor_client.amt import AmtStandIn, VirtualClock  # noqa: PLC0415
    from governor_client.offline.environment import build_environment  # noqa: PLC0415
    from governor_client.simulator.simulation.quiet import DISCARD, quiet_handlers  # noqa: PLC0415

    places = member_places(count)
    calls = [0]

    def hook(**_: Any) -> None:  # on every session and client of the hub (org_calls._wire)
        calls[0] += 1
        if latency:
            time.sleep(latency)

    clock = VirtualClock(T0)
    with contextlib.redirect_stdout(DISCARD), mock_aws(), quiet_handlers(), AmtStandIn(clock=clock, seed=1) as amt:
        env = build_environment(clock=clock.now, store="memory", policy=_policy(places))
        _wire(env, hook)
        services = env.services
        services.settings = services.settings.model_copy(
            update={"sweep_parallel_places": parallel, "sweep_reserve_seconds": reserve}
        )
        amt.quotas.set_applied(services.home.account, HOME_REGION, INSTANCE, 10)
        _create_jobs(amt, places)
        amt.advance(120)
        amt.drain_events()  # every event lost: the sweep finds the jobs
        yield services, calls


def run_cell(count: int, parallel: int, latency: float) -> Cell:
    from tuning_governor.app.sweep.run import run_sweep  # noqa: PLC0415

    cell = Cell(count, parallel)
    with _world(count, parallel, latency) as (services, calls):
        run_sweep(services)  # credentials fetched, jobs discovered
        calls[0] = 0
        started = time.perf_counter()
        report = run_sweep(services)
        cell.seconds = time.perf_counter() - started
        cell.calls = calls[0]
        outcomes: dict[str, int] = {}
        for place in report.get("places", {}).values():
            outcomes[place["outcome"]] = outcomes.get(place["outcome"], 0) + 1
        cell.outcomes = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    return cell


def run_budget(count: int, parallel: int, latency: float, budget: float, reserve: int) -> Budget:
    from tuning_governor.app.sweep.run import run_sweep  # noqa: PLC0415

    out = Budget(count, parallel, budget, reserve)
    with _world(count, parallel, latency, reserve=reserve) as (services, _calls):
        started = time.monotonic()
        first = run_sweep(services, remaining=lambda: budget - (time.monotonic() - started))
        out.first_seconds = time.monotonic() - started
        outcomes = [(p, r["outcome"]) for p, r in first["places"].items()]
        out.first_swept = sum(1 for _, o in outcomes if o == "swept")
        deferred = [p for p, o in outcomes if o == "deferred"]
        out.first_deferred = len(deferred)
        second = run_sweep(services)
        out.second_starts_with_deferred = list(second["places"])[: len(deferred)] == deferred
        out.second_swept = sum(1 for r in second["places"].values() if r["outcome"] == "swept")
    return out


def fitted(cells: list[Cell]) -> tuple[float, float]:
    """(h, t): the sweep's wall time at one place at a time as h + P x t, through its smallest and largest P."""
    ones = sorted((c.places, c.seconds) for c in cells if c.parallel == 1)
    if len(ones) < 2:
        return 0.0, ones[0][1] / ones[0][0] if ones else float("nan")
    (p0, w0), (p1, w1) = ones[0], ones[-1]
    t = (w1 - w0) / (p1 - p0)
    return w0 - p0 * t, t


def _section(cells: list[Cell], budget: Budget, took: float, argv: list[str], latency_ms: float) -> str:
    h, t = fitted(cells)
    lines = [
        START_MARKER,
        "## The sweep's wall time against member account-regions (organisation mode)",
        "",
        f"- command: `.venv/bin/python benchmarks/org_sweep.py {' '.join(argv)}` (from the repository root)",
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; code: {git_head()}; took {took:.0f} s",
        f"- one small job per member place, its events all lost; every AWS call {latency_ms:g} ms late (a sleep"
        " before it is sent: the network's wait, moto's own work on top); the second sweep of each cell timed;"
        " in-memory store",
        f"- at one place at a time the wall time is h + P x t through the smallest and largest P: h = {h:.2f} s"
        f" (the home place's own sweep and its table-wide steps), t = {t:.3f} s per member place;"
        " bound = h + ceil(P / k) x t (`app.sweep.places`: k places at once)",
        "",
        "| member places P | k at once | AWS calls in the sweep | calls per place | wall s | bound s | wall / bound |"
        " outcomes |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in cells:
        bound = h + math.ceil(c.places / c.parallel) * t
        lines.append(
            f"| {c.places} | {c.parallel} | {c.calls} | {c.calls / (c.places + 1):.1f} | {c.seconds:.2f} |"
            f" {bound:.2f} | {c.seconds / bound:.2f} | {c.outcomes} |"
        )
    lines += [
        "",
        f"Time budget: {budget.places} places, {budget.parallel} at once, {budget.budget:.1f} s left at the sweep's"
        f" start, reserve {budget.reserve} s: the first sweep swept {budget.first_swept} and deferred"
        f" {budget.first_deferred} in {budget.first_seconds:.1f} s (a cold sweep: credentials fetched, jobs"
        f" discovered), ending with {budget.budget - budget.first_seconds:.1f} s of the invocation left; the next"
        f" sweep began with the deferred ones:"
        f" {'yes' if budget.second_starts_with_deferred else 'no'}, and swept {budget.second_swept}.",
        "",
        "A new account is governed within one sweep of joining: `tests/integration/test_organisation_matrix.py::"
        "test_an_account_added_to_accounts_is_governed_within_one_sweep` (never swept: the stalest, walked first).",
    ]
    return "\n".join([*lines, END_MARKER, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--places", type=int, nargs="+", default=[1, 10, 50, 200])
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--latency-ms", type=float, default=40.0)
    parser.add_argument("--budget-places", type=int, default=50)
    parser.add_argument("--budget-seconds", type=float, help="default: the reserve + half the walk's bound")
    parser.add_argument("--reserve", type=int, default=60)
    parser.add_argument("--write", action="store_true")
    raw = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(raw)
    latency = args.latency_ms / 1000
    started = time.monotonic()
    cells = [run_cell(p, k, latency) for p in args.places for k in args.parallel]
    k = max(args.parallel)
    h, t = fitted(cells)
    seconds = args.budget_seconds or args.reserve + h + math.ceil(args.budget_places / k) * t / 2
    budget = run_budget(args.budget_places, k, latency, seconds, args.reserve)
    section = _section(cells, budget, time.monotonic() - started, raw, args.latency_ms)
    sys.stdout.write(section)
    if args.write:
        write_section(RESULTS, section, start=START_MARKER, end=END_MARKER)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
