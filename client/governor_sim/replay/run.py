"""Running a replay: the governor's services wired to the replay's SageMaker, table and clock, and the
engine fed the lines of a source. See ``governor_sim.replay`` for what the replay gives.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from governor_sim.memory import MemoryStore
from governor_sim.offline import create_table, store_kind
from governor_sim.replay.engine import Clock, Replay, ReplayProbe, quiet_handlers
from governor_sim.replay.lines import last_lines
from governor_sim.replay.model import ReplayResult
from governor_sim.replay.sagemaker import EventSourcedSageMaker
from governor_sim.replay.schedule import DEFAULT_SWEEP_EVERY
from governor_sim.replay.sources import open_events, open_file
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.app.wiring import Services
from tuning_governor.policy import Policy
from tuning_governor.ports import Store
from tuning_governor.settings import Settings

DEFAULT_REGION = "us-east-1"


@contextmanager
def _governor_store(kind: str, region: str, table: str) -> Iterator[Store]:
    """The replay's table: in memory, or the DynamoDB adapter on a table on moto, deleted afterwards."""
    if kind != "moto":
        yield MemoryStore()
        return
    dynamodb = boto3.client("dynamodb", region_name=region)
    create_table(dynamodb, table)
    try:
        yield GovernorStore(dynamodb, table)
    finally:
        dynamodb.delete_table(TableName=table)


@contextmanager
def _replay_services(policy: Policy, kind: str, region: str) -> Iterator[tuple[Services, EventSourcedSageMaker, Clock]]:
    """The governor's services as a replay runs them (inside ``mock_aws``): the event-sourced SageMaker,
    the table (``kind``), the replay's clock, ``policy``, no Service Quotas; and the SageMaker and clock."""
    clock = Clock()
    sagemaker = EventSourcedSageMaker(clock)
    table = f"tuning-governor-replay-{uuid.uuid4().hex[:12]}"
    with _governor_store(kind, region, table) as governor_store:
        settings = Settings.model_validate(
            {"TABLE_NAME": table, "AWS_REGION": region, "POLICY_PARAMETER": "", "POLICY_FILE": ""}
        )
        services = Services(
            settings=settings,
            sagemaker=sagemaker,
            store=governor_store,
            clock=clock,
            policy=lambda: policy,
            quotas=None,
        )
        yield services, sagemaker, clock


def replay_lines(  # noqa: PLR0913 - the replay's knobs, keyword-only with defaults
    lines: Iterable[bytes | str],
    policy: Policy,
    *,
    policy_source: str = "<policy>",
    region: str = DEFAULT_REGION,
    sweep_every: timedelta | None = DEFAULT_SWEEP_EVERY,
    probe: ReplayProbe | None = None,
    store: str | None = None,
    reread: Callable[[], Iterable[bytes | str]] | None = None,
    on_line: Callable[[int], None] | None = None,
) -> ReplayResult:
    """Replay events (one EventBridge event per item, e.g. the lines of a JSONL file) under ``policy``.

    Lines are numbered from 1; blank lines are skipped (not counted). A line that is not a valid event
    is reported in ``rejected_events`` and the run goes on. The sweep (``tuning_governor.app.sweep.run_sweep``)
    runs every ``sweep_every`` of the events' time, with the clock at its own time, interleaved with the
    events (see ``governor_sim.replay.engine.Replay``); None runs none. Runs inside its own ``moto.mock_aws()``
    (nesting inside another is fine: its table has a unique name and is deleted afterwards); ``region``
    is the governor's own region (the events' regions price their trials). ``store``: ``memory`` (the
    in-memory table) or ``moto`` (the DynamoDB adapter on moto); default ``$TUNING_GOVERNOR_STORE``, else
    ``memory``; both give the same result. Quiet: the handlers' logs and metrics are suppressed.
    Deterministic: the same lines and policy give the same result.
    A ``probe`` watches the run (see ``ReplayProbe``); it does not change the result. ``on_line`` is
    called with each line's number once it is replayed (a progress bar); it does not change the result.
    ``reread``: a second reading of the same lines (a file opened again). Given it, with the in-memory
    store and no probe, the replay first finds each tuning job's last line and forgets each job once
    nothing left can change it (``governor_sim.replay.forget``): the same result, in memory that does
    not grow with the number of jobs that have ended.
    """
    kind = store_kind(store)
    with quiet_handlers(), mock_aws(), _replay_services(policy, kind, region) as (services, sagemaker, clock):
        if probe is not None:
            probe.attach(services, sagemaker)
        ends = last_lines(reread()) if reread is not None and probe is None and kind == "memory" else None
        run = Replay(services, sagemaker, clock, sweep_every=sweep_every, probe=probe, last_lines=ends)
        for number, raw in enumerate(lines, start=1):
            run.feed(number, raw)
            if on_line is not None:
                on_line(number)
        result = run.result(policy_source)
        if probe is not None:
            probe.finish(result)
        return result


def replay_file(
    path: str | Path,
    policy: Policy,
    *,
    policy_source: str = "<policy>",
    sweep_every: timedelta | None = DEFAULT_SWEEP_EVERY,
    probe: ReplayProbe | None = None,
    store: str | None = None,
) -> ReplayResult:
    """``replay_lines`` over a JSONL file (``-`` = standard input). ``ReplayInputError`` if it cannot be read.

    The file is read twice (``reread``: the replay forgets each job once it has settled). Standard input
    is first copied to a temporary file, removed afterwards, so that it can be read twice too.
    """
    with open_file(path) as source:
        return replay_lines(
            source.lines,
            policy,
            policy_source=policy_source,
            sweep_every=sweep_every,
            probe=probe,
            store=store,
            reread=source.reread,
        )


def replay_events(
    source: str | Path,
    policy: Policy,
    *,
    policy_source: str = "<policy>",
    sweep_every: timedelta | None = DEFAULT_SWEEP_EVERY,
    s3: Any = None,
    probe: ReplayProbe | None = None,
    store: str | None = None,
    on_line: Callable[[int], None] | None = None,
) -> ReplayResult:
    """``replay_lines`` over a JSONL file (``-`` = stdin), a capture folder or an ``s3://bucket/prefix``
    (read as :func:`governor_sim.replay.sources.open_events` says). ``ReplayInputError`` with one line
    when the source cannot be read.
    """
    with open_events(source, s3) as events:
        return replay_lines(
            events.lines,
            policy,
            policy_source=policy_source,
            sweep_every=sweep_every,
            probe=probe,
            store=store,
            reread=events.reread,
            on_line=on_line,
        )
