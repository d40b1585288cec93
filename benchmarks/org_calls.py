"""Benchmark: AWS calls and credentials fetched per event in organisation mode, against member count.

    .venv/bin/python benchmarks/org_calls.py [--places 1 10 50 500] [--write]

Each cell governs ``places`` member account-regions (fake account ids 2000000000nn, two regions per
account) from a hub in moto's account, us-east-1. The hub reaches each member as the Lambda does in
organisation mode: the client factory (``adapters.sessions.Clients``) with the ``MemberSessions``
credentials provider, which assumes ``tg-member-<region>`` in the member account (STS on moto) and caches
the credentials per (account, region); SageMaker and Service Quotas are the place's own
(``Services.sagemaker_at`` / ``quotas_at``, one gateway per place as ``app.wiring`` caches them).

In every place one small tuning job (1 x ml.m5.xlarge, one trial) runs on the AMT stand-in, and every
event it emits (the job's arrival and end, its trial's state changes) is delivered through the real
handlers (``governor_client.simulator.runner.deliver_event``), in the order SageMaker emitted them, places interleaved.
Per event, every AWS call made through the hub's clients is counted by service and operation (botocore's
``before-call`` hook on every session the factory hands out and on the hub's own clients) and the
AssumeRole calls are counted apart (``AssumedRoles.fetched``). The table splits the first event of each
place (cold: its credentials are fetched) from the others (warm cache). The store is in memory (no
DynamoDB calls counted; benchmarks/lean.py counts those).

Writes nothing unless ``--write``: then the section between the org-calls markers of
benchmarks/RESULTS.md is replaced. This is a benchmark, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from results_file import git_head, write_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START_MARKER = "<!-- org-calls: written by benchmarks/org_calls.py --write -->"
END_MARKER = "<!-- org-calls: end -->"
T0 = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)
HOME_REGION = "us-east-1"
MEMBER_REGIONS = ("eu-west-1", "us-west-2")
INSTANCE = "ml.m5.xlarge"
ROLE = "tg-member"

from governor_client.offline.env_vars import use_offline_environment  # noqa: E402 - imports only os

use_offline_environment(HOME_REGION, POWERTOOLS_SERVICE_NAME="tuning-governor", POWERTOOLS_METRICS_DISABLED="true")


def member_places(count: int) -> list[tuple[str, str]]:
    """``count`` (account, region) pairs: obvious fake account ids, two regions per account."""
    return [(f"{200000000000 + i // 2:012d}", MEMBER_REGIONS[i % 2]) for i in range(count)]


@dataclass
class Cell:
    places: int
    events: int = 0
    cold: Counter[str] = field(default_factory=Counter)
    warm: Counter[str] = field(default_factory=Counter)
    cold_events: int = 0
    warm_events: int = 0
    warm_max: int = 0
    assume_cold: int = 0
    assume_warm: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


class CountingSessions:
    """The organisation's credentials provider, with a call counter on every session it hands out."""

    def __init__(self, inner: Any, hook: Any) -> None:
        self._inner = inner
        self._hook = hook

    def session_for(self, place: Any) -> Any:
        session = self._inner.session_for(place)
        session.events.register("before-call", self._hook)
        return session


def _wire(env: Any, hook: Any) -> Any:
    """The hub's services reaching members through the real organisation-mode factory; the roles."""
    import boto3  # noqa: PLC0415

    from tuning_governor.adapters.assumed_roles import AssumedRoles, MemberSessions  # noqa: PLC0415
    from tuning_governor.adapters.quotas import QuotaGateway  # noqa: PLC0415
    from tuning_governor.adapters.sagemaker import SageMakerGateway  # noqa: PLC0415
    from tuning_governor.adapters.sessions import Clients  # noqa: PLC0415

    home = env.services.home
    clients = Clients(HOME_REGION, home.account)
    sts = clients.home_clients().client("sts")
    sts.meta.events.register("before-call", hook)
    roles = AssumedRoles(sts, ROLE)
    clients.use(CountingSessions(MemberSessions(home.account, roles, clients.default_session), hook))

    @cache
    def sagemaker_at(place: Any) -> SageMakerGateway:
        return SageMakerGateway(clients.for_place(place).sagemaker, sleep=lambda _s: None, place=place)

    @cache
    def quotas_at(place: Any) -> QuotaGateway:
        return QuotaGateway(clients.for_place(place).service_quotas, clock=env.services.clock)

    env.services.sagemaker_at = sagemaker_at
    env.services.quotas_at = quotas_at
    env.sagemaker.meta.events.register("before-call", hook)
    _ = boto3
    return roles


def _create_jobs(amt: Any, places: list[tuple[str, str]]) -> None:
    import boto3  # noqa: PLC0415

    from tuning_governor.adapters.assumed_roles import AssumedRoles  # noqa: PLC0415

    # The members' own clients (their teams creating jobs): a separate role cache, not counted.
    theirs = AssumedRoles(boto3.client("sts", region_name=HOME_REGION), "member-team")
    for i, (account, region) in enumerate(places):
        amt.quotas.set_applied(account, region, INSTANCE, 10)
        kwargs: Any = theirs.session_kwargs(account, region)
        client = boto3.client("sagemaker", **kwargs)  # on the default session: one loader for all
        client.create_hyper_parameter_tuning_job(**_request(f"small-{i:04d}"))


def _request(name: str) -> dict[str, Any]:
    from governor_client.simulator.metering import small_job_request  # noqa: PLC0415

    return small_job_request(name, max_jobs=1, max_parallel=1)


def run_cell(count: int) -> Cell:
    from moto import mock_aws  # noqa: PLC0415

    from governor_client.amt import AmtStandIn, VirtualClock  # noqa: PLC0415
    from governor_client.offline.environment import build_environment  # noqa: PLC0415
    from governor_client.simulator.runner import deliver_event  # noqa: PLC0415
    from governor_client.simulator.simulation.quiet import DISCARD, quiet_handlers  # noqa: PLC0415
    from tuning_governor.policy import Policy  # noqa: PLC0415
    from tuning_governor.policy.accounts import AccountPolicy  # noqa: PLC0415

    started = time.monotonic()
    places = member_places(count)
    policy = Policy(mode="enforce", accounts={a: AccountPolicy(mode="enforce") for a, _ in places})
    cell, calls = Cell(count), Counter[str]()

    def hook(model: Any, **_: Any) -> None:
        calls[f"{model.service_model.service_id.hyphenize()}:{model.name}"] += 1

    clock = VirtualClock(T0)
    with contextlib.redirect_stdout(DISCARD), mock_aws(), quiet_handlers(), AmtStandIn(clock=clock, seed=1) as amt:
        env = build_environment(clock=clock.now, store="memory", policy=policy)
        roles = _wire(env, hook)
        _create_jobs(amt, places)
        seen: set[tuple[str, str]] = set()
        for _ in range(10_000):
            amt.advance(300)
            for event in amt.drain_events():
                calls.clear()
                fetched = roles.fetched
                outcome = deliver_event(event, env.services).outcome
                _count(cell, (event["account"], event["region"]) not in seen, calls, roles.fetched - fetched)
                seen.add((event["account"], event["region"]))
                cell.outcomes[str(outcome.get("outcome"))] += 1
            if amt.idle():
                break
    cell.seconds = time.monotonic() - started
    return cell


def rss_mb() -> float:
    """The process's resident memory now (Linux), in MB."""
    import os  # noqa: PLC0415

    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def session_memory(places: int = 20) -> tuple[float, float]:
    """MB of resident memory per member place for its SageMaker and Service Quotas clients, made through
    ``MemberSessions`` (one shared data loader) and, for comparison, a botocore session per place."""
    import boto3  # noqa: PLC0415
    import botocore.session  # noqa: PLC0415
    from moto import mock_aws  # noqa: PLC0415

    from tuning_governor.adapters.assumed_roles import AssumedRoles, MemberSessions  # noqa: PLC0415
    from tuning_governor.models.place import Place  # noqa: PLC0415

    out = []
    with mock_aws():
        roles = AssumedRoles(boto3.client("sts", region_name=HOME_REGION), ROLE)
        for shared in (True, False):
            provider = MemberSessions("123456789012", roles, boto3.session.Session)
            kept, before = [], rss_mb()
            for account, region in member_places(places):
                if not shared:  # what MemberSessions did before it shared the loader
                    provider._loader = botocore.session.Session().get_component("data_loader")
                session = provider.session_for(Place(account, region))
                kept.append((session.client("sagemaker"), session.client("service-quotas")))
            out.append((rss_mb() - before) / places)
    return out[0], out[1]


def _count(cell: Cell, cold: bool, calls: Counter[str], fetched: int) -> None:
    cell.events += 1
    if cold:
        cell.cold_events += 1
        cell.cold.update(calls)
        cell.assume_cold += fetched
    else:
        cell.warm_events += 1
        cell.warm.update(calls)
        cell.assume_warm += fetched
        cell.warm_max = max(cell.warm_max, sum(calls.values()))


def _per(counter: Counter[str], events: int) -> str:
    if not events:
        return "-"
    return ", ".join(f"{op} {n / events:.2f}" for op, n in sorted(counter.items())) or "none"


def _section(cells: list[Cell], took: float, argv: list[str], memory: tuple[float, float]) -> str:
    lines = [
        START_MARKER,
        "## AWS calls and credentials fetched per event, organisation mode, against member account-regions",
        "",
        f"- command: `.venv/bin/python benchmarks/org_calls.py {' '.join(argv)}` (from the repository root)",
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; code: {git_head()}; took {took:.0f} s",
        "- one small tuning job (1 x ml.m5.xlarge, one trial) per member place; every event it emits delivered"
        " through the real handlers; members reached through the organisation-mode client factory (AssumeRole"
        " on moto, credentials cached per account and region); calls counted on the hub's clients by"
        " service:operation (botocore before-call), mean per event; in-memory store (no DynamoDB)",
        "- cold: the first event of each place; warm: every later event (credentials cached)",
        f"- memory per member place of its two clients (SageMaker, Service Quotas; 20 places): {memory[0]:.1f} MB"
        f" through MemberSessions (one shared botocore data loader), {memory[1]:.1f} MB with a loader per place"
        " (before the loader was shared)",
        "",
        "| places | events | cold events | AssumeRole per cold event | calls per cold event |"
        " warm events | AssumeRole on warm events | calls per warm event | max calls, one warm event |"
        " outcomes | wall s |",
        "|---:|---:|---:|---:|---|---:|---:|---|---:|---|---:|",
    ]
    for c in cells:
        cold_assume = f"{c.assume_cold / c.cold_events:.2f}" if c.cold_events else "-"
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(c.outcomes.items()))
        lines.append(
            f"| {c.places} | {c.events} | {c.cold_events} | {cold_assume} | {_per(c.cold, c.cold_events)} |"
            f" {c.warm_events} | {c.assume_warm} | {_per(c.warm, c.warm_events)} | {c.warm_max} |"
            f" {outcomes} | {c.seconds:.1f} |"
        )
    return "\n".join([*lines, END_MARKER, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--places", type=int, nargs="+", default=[1, 10, 50, 500])
    parser.add_argument("--write", action="store_true")
    raw = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(raw)
    started = time.monotonic()
    memory = session_memory()
    cells = [run_cell(count) for count in args.places]
    section = _section(cells, time.monotonic() - started, raw, memory)
    sys.stdout.write(section)
    if args.write:
        write_section(RESULTS, section, start=START_MARKER, end=END_MARKER)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
