"""Running a replay: the governor's services wired to the replay's SageMaker, table and clock, and the
engine fed the lines of a source. See ``governor_client.replay`` for what the replay gives.
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

from governor_client.memory import MemoryStore
from governor_client.offline.environment import create_table, store_kind
from governor_client.replay.engine import Clock, Replay, ReplayProbe, quiet_handlers
from governor_client.replay.facts import TableFacts, read_table_facts
from governor_client.replay.lines import last_lines
from governor_client.replay.model import ReplayResult
from governor_client.replay.sagemaker import EventSourcedSageMaker
from governor_client.replay.schedule import DEFAULT_SWEEP_EVERY
from governor_client.replay.sources import open_events, open_file
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.app.services import Services
from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog
from tuning_governor.models.place import Place
from tuning_governor.policy import Policy
from tuning_governor.ports import Store
from tuning_governor.settings import Settings

DEFAULT_REGION = "us-east-1"
OFFLINE_ACCOUNT = "123456789012"
"""The governor's own account in a replay of an organisation when none is given (moto's default: a fake)."""


def replay_home(policy: Policy, region: str, home_account: str | None) -> Place | None:
    """The place the replayed governor runs in: with ``accounts`` in the policy (an organisation) or a
    ``home_account`` given, ``home_account`` (default ``OFFLINE_ACCOUNT``) in ``region``; every job away
    from it is keyed by its own account and region. Otherwise None: every event is the home place's."""
    if home_account is None and not policy.accounts:
        return None
    return Place(home_account or OFFLINE_ACCOUNT, region)


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
def _replay_services(
    policy: Policy,
    kind: str,
    region: str,
    facts: TableFacts | None = None,
    catalog: PriceCatalog | None = None,
    home: Place | None = None,
) -> Iterator[tuple[Services, EventSourcedSageMaker, Clock]]:
    """The governor's services as a replay runs them (inside ``mock_aws``): the event-sourced SageMaker
    (completing thin events with ``facts``; each place's own, from ``home``), the table (``kind``), the
    replay's clock, ``policy``, no Service Quotas, ``catalog`` (default: the bundled one); and the
    SageMaker and clock."""
    clock = Clock()
    sagemaker = EventSourcedSageMaker(clock, facts.jobs if facts is not None else None, home=home)
    table = f"tuning-governor-replay-{uuid.uuid4().hex[:12]}"
    with _governor_store(kind, region, table) as governor_store:
        values = {"TABLE_NAME": table, "AWS_REGION": region, "POLICY_PARAMETER": "", "POLICY_FILE": ""}
        if home is not None:  # the stack's account is read from its reports topic's ARN
            values["TOPIC_ARN"] = f"arn:aws:sns:{region}:{home.account}:tuning-governor-replay"
        settings = Settings.model_validate(values)
        services = Services(
            settings=settings,
            sagemaker=sagemaker,
            store=governor_store,
            clock=clock,
            policy=lambda: policy,
            quotas=None,
            catalog=catalog or bundled_catalog(),
            sagemaker_at=sagemaker.at if home is not None else None,
        )
        yield services, sagemaker, clock


# Long: the library call's contract, a sentence per option, is its docstring; the body is 20 lines.
def replay_lines(  # noqa: PLR0913 - keyword-only options of the library call, one per CLI flag
    lines: Iterable[bytes | str],
    policy: Policy,
    *,
    policy_source: str = "<policy>",
    region: str = DEFAULT_REGION,
    sweep_every: timedelta | None = DEFAULT_SWEEP_EVERY,
    probe: ReplayProbe | None = None,
    store: str | None = None,
    reread: Callable[[], Iterable[bytes | str]] | None = None,
    facts: TableFacts | None = None,
    catalog: PriceCatalog | None = None,
    on_line: Callable[[int], None] | None = None,
    home_account: str | None = None,
) -> ReplayResult:
    """Replay events (one EventBridge event per item, e.g. the lines of a JSONL file) under ``policy``.

    Lines are numbered from 1; blank lines are skipped (not counted). A line that is not a valid event
    is reported in ``rejected_events`` and the run goes on. The sweep (``tuning_governor.app.sweep.run.run_sweep``)
    runs every ``sweep_every`` of the events' time, with the clock at its own time, interleaved with the
    events (see ``governor_client.replay.engine.Replay``); None runs none. Runs inside its own ``moto.mock_aws()``
    (nesting inside another is fine: its table has a unique name and is deleted afterwards); ``region``
    is the governor's own region (the events' regions price their trials). ``store``: ``memory`` (the
    in-memory table) or ``moto`` (the DynamoDB adapter on moto); default ``$TUNING_GOVERNOR_STORE``, else
    ``memory``; both give the same result. Quiet: the handlers' logs and metrics are suppressed.
    Deterministic: the same lines and policy give the same result.
    A ``probe`` watches the run (see ``ReplayProbe``); it does not change the result. ``on_line`` is
    called with each line's number once it is replayed (a progress bar); it does not change the result.
    ``reread``: a second reading of the same lines (a file opened again). Given it, with the in-memory
    store and no probe, the replay first finds each tuning job's last line and forgets each job once
    nothing left can change it (``governor_client.replay.forget``): the same result, in memory that does
    not grow with the number of jobs that have ended.
    ``facts``: what the deployed governor stored of the jobs (:func:`governor_client.replay.facts.read_table_facts`),
    answering Describe and ListTags where the events lack a job's configuration, instances or tags.
    Jobs answered without one are listed in the result's ``facts.incomplete``.
    ``catalog``: the prices (default: the bundled catalogue; see ``governor_client.prices.export``).
    ``home_account``: the governor's own account (``replay_home``): given, or when the policy lists
    ``accounts``, each job is the job of its event's account and region, so two accounts' jobs of one
    name are two jobs, each judged and stopped in its own place.
    """
    kind = store_kind(store)
    replayed = _replay_services(policy, kind, region, facts, catalog, replay_home(policy, region, home_account))
    with quiet_handlers(), mock_aws(), replayed as (services, sagemaker, clock):
        if probe is not None:
            probe.attach(services, sagemaker)
        ends = last_lines(reread()) if reread is not None and probe is None and kind == "memory" else None
        run = Replay(
            services, sagemaker, clock, sweep_every=sweep_every, probe=probe, last_lines=ends, table_facts=facts
        )
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
    facts: TableFacts | None = None,
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
            facts=facts,
        )


def replay_events(  # noqa: PLR0913 - keyword-only options of the library call, one per CLI flag
    source: str | Path,
    policy: Policy,
    *,
    policy_source: str = "<policy>",
    sweep_every: timedelta | None = DEFAULT_SWEEP_EVERY,
    s3: Any = None,
    probe: ReplayProbe | None = None,
    store: str | None = None,
    facts_table: str | None = None,
    dynamodb: Any = None,
    catalog: PriceCatalog | None = None,
    on_line: Callable[[int], None] | None = None,
    home_account: str | None = None,
) -> ReplayResult:
    """``replay_lines`` over a JSONL file (``-`` = stdin), a capture folder or an ``s3://bucket/prefix``
    (read as :func:`governor_client.replay.sources.open_events` says). ``ReplayInputError`` with one line
    when the source cannot be read.

    ``facts_table``: the deployed governor's table (name or ARN). Before the replay, the job item of
    every tuning job the events name is read from it (BatchGetItem, with ``dynamodb`` or a boto3
    DynamoDB client of the caller's credentials), to answer what the events lack (see ``replay_lines``).
    """
    with open_events(source, s3) as events:
        facts = None
        if facts_table is not None:
            client = dynamodb if dynamodb is not None else boto3.client("dynamodb")
            facts = read_table_facts(facts_table, last_lines(events.reread()), client)
        return replay_lines(
            events.lines,
            policy,
            policy_source=policy_source,
            sweep_every=sweep_every,
            probe=probe,
            store=store,
            reread=events.reread,
            facts=facts,
            catalog=catalog,
            on_line=on_line,
            home_account=home_account,
        )
