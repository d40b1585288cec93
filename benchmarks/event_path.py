"""The path one trial event takes through the governor's code: modules run, hops between rooms, facts
loaded (issue 16's row "back-and-forth for one terminal trial event").

    .venv/bin/python benchmarks/event_path.py            # a table, as text
    .venv/bin/python benchmarks/event_path.py --json     # the same figures

A job of the seed's shape (one ml.m5.xlarge per trial, Random strategy) runs on the AMT stand-in with
10 trials recorded; then one held trial's terminal event is delivered to the training handler, traced
with ``sys.setprofile``, twice: a Completed trial that decides nothing, and another Completed trial under a
policy with a $0.01 job budget (a decision: claimed, the job stopped, reported).

- **modules**: distinct ``tuning_governor`` modules whose functions ran;
- **hops**: the rooms of the functions called, in call order, with repeats collapsed, counted as
  changes of room. Rooms: *app* (the use cases), *governance* (engine, rules, admission, team months),
  *store* (the table: every module of ``adapters/store/``, ``adapters/dynamodb/`` and the in-memory ``governor_client.memory``),
  *adapters* (the other outside services: SageMaker, channels, checks, quotas, prices). Calls into the
  leaf packages (models, domain, policy, ports, the kernel) are not rooms: any step may use them. Every
  room's prefix must name a package that exists and every module traced must be in a room or a leaf
  package, or the benchmark fails (a room that moved is not silently left uncounted);
- **hops (app / governance / store)**: the same, counting only those three rooms (the figure the
  benchmark gave before the adapters room was counted);
- **facts**: calls of ``price_catalog``, ``budget_for`` and ``team_of`` (loaded once per event, at best).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from moto import mock_aws

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
FACTS = ("price_catalog", "budget_for", "team_of")
ROOMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("app", ("tuning_governor.app",)),
    ("governance", ("tuning_governor.governance",)),
    ("store", ("tuning_governor.adapters.store", "tuning_governor.adapters.dynamodb", "governor_client.memory")),
    ("adapters", ("tuning_governor.adapters",)),
)
#: Packages and modules every step may use: not rooms.
LEAVES = tuple(
    f"tuning_governor.{name}"
    for name in ("models", "domain", "policy", "ports", "breakdowns", "settings", "errors", "observability", "data")
)
#: The rooms of the hop count before the adapters room was counted.
CORE_ROOMS = ("app", "governance", "store")


def check_rooms() -> None:
    """Every room's prefix names a package that exists (a room renamed or moved fails here)."""
    import importlib.util  # noqa: PLC0415

    missing = [p for _, prefixes in ROOMS for p in prefixes if importlib.util.find_spec(p) is None]
    if missing:
        raise SystemExit(f"event_path: rooms name modules that do not exist: {', '.join(missing)}")


NO_DECISION = "mode: enforce\ndefaults: {stagnation_trials: 0}\n"
DECISION = "mode: enforce\ndefaults: {stagnation_trials: 0, job_budget_usd: 0.01}\n"


@dataclass
class Path:
    """What one traced event did."""

    event: str
    outcome: str
    modules: int
    hops: int
    core_hops: int
    rooms: str
    facts: dict[str, int]
    module_names: list[str]


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def room_of(module: str) -> str | None:
    """The room a module belongs to (the first that holds it), or None for a leaf module; a governor
    module in neither is an error: a new room must be placed in ROOMS or LEAVES."""
    for room, prefixes in ROOMS:
        if _under(module, prefixes):
            return room
    if module.startswith("tuning_governor.") and not _under(module, LEAVES):
        raise SystemExit(f"event_path: {module} is in no room and no leaf package (add it to ROOMS or LEAVES)")
    return None


@contextmanager
def traced() -> Iterator[tuple[list[str], Counter[str]]]:
    """Every ``tuning_governor`` function call inside, in order (by module), and calls of the FACTS."""
    calls: list[str] = []
    facts: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if module.startswith(("tuning_governor", "governor_client.memory")):
            calls.append(module)
            if frame.f_code.co_name in FACTS:
                facts[frame.f_code.co_name] += 1

    sys.setprofile(profile)
    try:
        yield calls, facts
    finally:
        sys.setprofile(None)


def _rooms(calls: list[str], counted: tuple[str, ...]) -> list[str]:
    """The rooms in ``counted`` the calls went through, in order, repeats collapsed."""
    rooms: list[str] = []
    for module in calls:
        room = room_of(module)
        if room in counted and (not rooms or rooms[-1] != room):
            rooms.append(room)
    return rooms


def path_of(event: str, outcome: str, calls: list[str], facts: Counter[str]) -> Path:
    """The figures of one traced event."""
    rooms = _rooms(calls, tuple(room for room, _ in ROOMS))
    modules = sorted(set(calls))
    return Path(
        event=event,
        outcome=outcome,
        modules=len(modules),
        hops=max(len(rooms) - 1, 0),
        core_hops=max(len(_rooms(calls, CORE_ROOMS)) - 1, 0),
        rooms=" > ".join(room.upper() for room in rooms),
        facts={name: facts[name] for name in FACTS},
        module_names=modules,
    )


def _policy(text: str) -> Callable[[], Any]:
    from tuning_governor.policy import parse_policy  # noqa: PLC0415 - after the environment is set

    policy = parse_policy(text, "event-path")
    return lambda: policy


def measure() -> list[Path]:
    """Trace two Completed trials of a job with 10 recorded trials: one decides nothing, one breaches a budget."""
    from governor_client.amt import AmtStandIn, VirtualClock  # noqa: PLC0415 - after the environment is set
    from governor_client.offline.environment import build_environment  # noqa: PLC0415
    from governor_client.simulator.metering import run_holding, small_job_request  # noqa: PLC0415
    from governor_client.simulator.runner import deliver_event  # noqa: PLC0415

    paths: list[Path] = []
    with mock_aws(), AmtStandIn(clock=VirtualClock(T0), seed=7) as amt:
        env = build_environment(clock=amt.clock.now)
        job = run_holding(
            amt, env.sagemaker, env.services, small_job_request("event-path", max_jobs=16), recorded=10, progress=False
        )
        for label, policy, status in (
            ("terminal trial, no decision", NO_DECISION, "Completed"),
            ("terminal trial, a decision", DECISION, "Completed"),
        ):
            env.services.policy = _policy(policy)
            index = next(
                i
                for i, events in enumerate(job.held_trials)
                if any(e["detail"]["TrainingJobStatus"] == status for e in events)
            )
            event = job.trial_event(index, status)
            with traced() as (calls, facts):
                delivery = deliver_event(event, env.services)
            paths.append(path_of(label, str(delivery.outcome.get("outcome")), calls, facts))
            job.held_trials.pop(index)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--modules", action="store_true", help="list the modules each event ran")
    args = parser.parse_args(argv)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ[key] = "testing"
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "TuningGovernor")
    check_rooms()
    with contextlib.redirect_stdout(io.StringIO()):  # the handlers' log lines and metrics
        paths = measure()
    if args.json:
        print(json.dumps([asdict(path) for path in paths], indent=1))
        return 0
    print(
        "| event | outcome | modules | hops | hops (app / governance / store) | rooms in call order "
        "| price_catalog / budget_for / team_of |"
    )
    print("|---|---|---:|---:|---:|---|---|")
    for path in paths:
        facts = " / ".join(str(path.facts[name]) for name in FACTS)
        print(
            f"| {path.event} | {path.outcome} | {path.modules} | {path.hops} | {path.core_hops} | {path.rooms} "
            f"| {facts} |"
        )
        if args.modules:
            print("\n".join(f"|  | | | | {name} | |" for name in path.module_names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
