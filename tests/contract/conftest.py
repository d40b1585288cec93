"""The store contract's fixtures: one suite, run against every adapter of the ``Store`` port.

``adapter`` is parametrized: ``moto`` is the DynamoDB adapter (``GovernorStore``) on the table as
template.yaml declares it (``governor_client.offline.environment.create_table``) in moto's DynamoDB; ``memory`` is
``MemoryStore``. Each test gets a fresh, empty table.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer

from governor_client.memory import MemoryStore
from governor_client.offline.environment import TABLE_NAME, create_table
from tests.conftest import REGION, load_event
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.app.envelope import parse_event
from tuning_governor.domain.capacity import Reservation
from tuning_governor.domain.pricing import RegionCatalog
from tuning_governor.domain.spend import RunningTrial
from tuning_governor.domain.summary import summarise
from tuning_governor.models.decisions import Decision
from tuning_governor.models.events import TrainingJobStateChange, TuningJobStateChange
from tuning_governor.models.records import JobSummary, TrialRecord
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.ports import Store

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
ADAPTERS = ("moto", "memory")


@dataclass
class Adapter:
    kind: str
    store: Store
    dump: Callable[[], list[dict[str, Any]]]
    """Every item of the table, deserialized, sorted by (pk, sk)."""


def moto_dump(client: Any, table: str = TABLE_NAME) -> list[dict[str, Any]]:
    de = TypeDeserializer()
    items = [
        {k: de.deserialize(v) for k, v in item.items()}
        for page in client.get_paginator("scan").paginate(TableName=table)
        for item in page["Items"]
    ]
    return sorted(items, key=lambda item: (item["pk"], item["sk"]))


@contextlib.contextmanager
def open_adapter(kind: str) -> Iterator[Adapter]:
    """A fresh, empty table behind the ``kind`` adapter (moto's is inside its own ``mock_aws``)."""
    if kind == "memory":
        memory = MemoryStore()
        yield Adapter(kind, memory, lambda: list(memory.scan()))
        return
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        create_table(client)
        yield Adapter(kind, GovernorStore(client, TABLE_NAME), lambda: moto_dump(client))


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest, aws_credentials: None) -> Iterator[Adapter]:
    with open_adapter(str(request.param)) as opened:
        yield opened


@pytest.fixture
def store(adapter: Adapter) -> Store:
    return adapter.store


# -- the domain values the suite stores ---------------------------------------------------------------------
def tuning_job(status: str = "InProgress", *, modified: datetime = T0, name: str | None = None) -> TuningJob:
    """The sample tuning job (events/tuning-inprogress.json) with ``status`` and LastModifiedTime ``modified``."""
    event = load_event("tuning-inprogress")
    event["detail"]["HyperParameterTuningJobStatus"] = status
    event["detail"]["LastModifiedTime"] = int(modified.timestamp() * 1000)
    if name is not None:
        event["detail"]["HyperParameterTuningJobName"] = name
        arn = event["detail"]["HyperParameterTuningJobArn"]
        event["detail"]["HyperParameterTuningJobArn"] = arn.rsplit("/", 1)[0] + "/" + name.lower()
    return parse_event(event, TuningJobStateChange).detail


def upsert(store: Store, status: str = "InProgress", minutes: int = 0, team: str | None = "nlp") -> bool:
    """The sample tuning job upserted with ``status`` at T0 + ``minutes`` for ``team``."""
    job = tuning_job(status, modified=T0 + timedelta(minutes=minutes))
    return store.upsert_job(job, region="us-east-1", team=team, owner="ana", event_time=T0)


def training_job(
    name: str = "solo-train",
    status: str = "InProgress",
    *,
    modified: datetime = T0,
    warm_pool: str | None = None,
    keep_alive: int | None = None,
) -> TrainingJob:
    """The sample standalone training job with ``name``, ``status`` and optionally a warm-pool status and
    a requested warm pool (``keep_alive``: ResourceConfig.KeepAlivePeriodInSeconds)."""
    event = load_event("training-standalone-inprogress")
    detail = event["detail"]
    if keep_alive is not None:
        detail["ResourceConfig"]["KeepAlivePeriodInSeconds"] = keep_alive
    detail["TrainingJobName"] = name
    detail["TrainingJobStatus"] = status
    detail["LastModifiedTime"] = int(modified.timestamp() * 1000)
    if warm_pool is not None:
        detail["WarmPoolStatus"] = {"Status": warm_pool, "ResourceRetainedBillableTimeInSeconds": 60}
    return parse_event(event, TrainingJobStateChange).detail


def trial(
    index: int = 1,
    *,
    job_key: str = "job-a",
    status: str = "Completed",
    cost: Decimal | None = Decimal("1.250000"),
    spot: bool = False,
    warm_pool_seconds: int = 0,
    start: datetime = T0,
    seconds: int = 600,
) -> TrialRecord:
    """A finished trial on 2 x ml.m5.xlarge (unpriced when ``cost`` is None)."""
    return TrialRecord(
        job_key=job_key,
        training_job_name=f"{job_key}-{index:03d}-Trial",
        status=status,
        region=REGION,
        instances={"ml.m5.xlarge": 2},
        instance_count=2,
        spot=spot,
        training_seconds=seconds,
        billable_seconds=seconds,
        billable_instance_seconds=seconds * 2,
        warm_pool_seconds=warm_pool_seconds,
        warm_pool_instance_seconds=warm_pool_seconds * 2,
        hourly_usd=Decimal("0.46") if cost is not None else None,
        cost_usd=cost,
        warm_pool_cost_usd=Decimal(0) if cost is not None else None,
        spot_savings_usd=Decimal("0.500000") if cost is not None and spot else (Decimal(0) if cost else None),
        unpriced_types=[] if cost is not None else ["ml.m5.xlarge"],
        objective_value=0.5 + index / 100,
        objective_name="validation:auc",
        hyperparameters={"eta": "0.1"},
        start_time=start,
        end_time=start + timedelta(seconds=seconds),
        event_id=f"event-{index}",
        event_time=start + timedelta(seconds=seconds),
    )


def running(index: int = 1, *, job_key: str = "job-a") -> RunningTrial:
    return RunningTrial(
        job_key=job_key,
        trial=f"{job_key}-{index:03d}-trial",
        start=T0,
        instances={"ml.m5.xlarge": 2},
        region=REGION,
        max_seconds=3600,
    )


def decision(
    rule: str = "budget",
    verdict: str = "breach",
    *,
    job_key: str = "job-a",
    team: str | None = "nlp",
    at: datetime = T0,
    message: str = "over budget",
) -> Decision:
    return Decision(
        rule=rule,
        verdict=verdict,  # type: ignore[arg-type]
        job_key=job_key,
        job_name=job_key.upper(),
        team=team,
        message=message,
        numbers={"spent_usd": 12.5, "limit_usd": 10, "types": ["ml.p3.2xlarge"]},
        at=at,
    )


def reservation(job_key: str = "job-a", count: int = 2) -> Reservation:
    return Reservation(
        job_key=job_key,
        team="nlp",
        on_demand={"ml.p3.2xlarge": count},
        spot={},
        plan="max-parallel",
        slots=count,
        per_trial_on_demand={"ml.p3.2xlarge": 1},
        per_trial_spot={},
        created="2026-11-30T09:00:00.000+00:00",
    )


def summary(job: TuningJob, records: list[TrialRecord], *, now: datetime = T0) -> JobSummary:
    return summarise(job, [], records, region=REGION, team=job.tags.get("team"), owner_tag="owner", now=now)


def catalog(region: str = "eu-north-1") -> RegionCatalog:
    return RegionCatalog(region=region, billing_code="EUN1", fetched_at=T0, prices={})
