"""The replay result's contract: its checked-in JSON Schema, its JSON shape, and the savings formula."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from governor_client.replay.model import (
    ReplayResult,
    avoidable_cost,
    schema_text,
    stopped_job_savings,
    trial_interval,
)
from tests.conftest import ROOT
from tuning_governor.models.records import TrialRecord

SCHEMA = ROOT / "docs" / "replay-result.schema.json"
T = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def trial(start_min: float | None, end_min: float | None, cost: str | None, billable: int = 600) -> TrialRecord:
    """A trial billed from T + start_min to T + end_min (minutes), costing ``cost`` USD."""
    end = T + timedelta(minutes=end_min) if end_min is not None else None
    return TrialRecord(
        job_key="job",
        training_job_name=f"job-{start_min}-{end_min}",
        status="Completed",
        region="us-east-1",
        instances={"ml.m5.xlarge": 1},
        instance_count=1,
        spot=False,
        training_seconds=billable,
        billable_seconds=billable,
        billable_instance_seconds=billable,
        warm_pool_seconds=0,
        warm_pool_instance_seconds=0,
        hourly_usd=Decimal("0.23") if cost is not None else None,
        cost_usd=Decimal(cost) if cost is not None else None,
        warm_pool_cost_usd=Decimal("5") if cost is not None else None,
        spot_savings_usd=None,
        start_time=T + timedelta(minutes=start_min) if start_min is not None else None,
        end_time=end,
        event_id="e",
        event_time=(end or T) + timedelta(seconds=2),
    )


def test_the_checked_in_schema_is_generated_from_the_model() -> None:
    assert SCHEMA.read_text() == schema_text(), (
        "docs/replay-result.schema.json is stale: run"
        " `.venv/bin/python -m governor_client.replay.schema > docs/replay-result.schema.json`"
    )


def test_the_schema_closes_every_object() -> None:
    schema = json.loads(schema_text())

    def objects(node: Any) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                found.append(node)
            for value in node.values():
                found += objects(value)
        elif isinstance(node, list):
            for value in node:
                found += objects(value)
        return found

    assert objects(schema)
    assert all(o.get("additionalProperties") is False for o in objects(schema))


def minimal() -> dict[str, Any]:
    return {
        "policy": {"source": "p.yaml", "mode": "enforce"},
        "events": {"lines": 1, "processed": 1, "rejected": 0, "failed": 0, "first_at": T, "last_at": T},
        "sweeps": {"every_seconds": 300, "runs": 0},
        "jobs": {},
        "actions": [{"job": "a", "action": "stop", "rule": "budget", "at": T}],
        "notifications": [],
        "rejected_events": [],
        "failed_events": [],
        "savings": {"usd": 1.5, "by_job": {"a": 1.5, "b": None}, "complete": False, "method": "m"},
        "facts": {"table": None, "jobs_from_table": 0, "incomplete": []},
    }


def test_times_are_iso_utc_and_money_is_a_number_or_null() -> None:
    data = json.loads(ReplayResult.model_validate(minimal()).model_dump_json())
    assert data["actions"][0]["at"] == "2026-11-30T10:00:00Z"
    assert data["savings"]["by_job"] == {"a": 1.5, "b": None}


def test_unknown_keys_are_not_part_of_the_result() -> None:
    data = minimal()
    data["savings"]["dollars"] = 3
    with pytest.raises(ValidationError):
        ReplayResult.model_validate(data)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (-20, -10, "0"),  # ended before the stop: nothing avoidable
        (-10, 0, "0"),  # ended at the stop
        (0, 10, "6.000000"),  # started at the stop: all of it
        (5, 15, "6.000000"),  # started after: all of it
        (-5, 15, "4.500000"),  # running at the stop: 15 of its 20 minutes
        (-10, 20, "4.000000"),  # 20 of 30 minutes
    ],
)
def test_avoidable_cost_is_the_share_billed_after_the_stop(start: float, end: float, expected: str) -> None:
    assert avoidable_cost(trial(start, end, "6"), T) == Decimal(expected)


def test_warm_pool_cost_is_never_counted() -> None:
    record = trial(0, 10, "6")
    assert record.warm_pool_cost_usd == Decimal(5)
    assert avoidable_cost(record, T) == Decimal(6)


def test_an_unpriced_trial_makes_the_job_unpriced_only_if_it_counts() -> None:
    before = trial(-20, -10, None)
    after = trial(-5, 15, None)
    assert avoidable_cost(before, T) == 0
    assert avoidable_cost(after, T) is None
    assert stopped_job_savings([before, trial(0, 10, "6")], T) == Decimal(6)
    assert stopped_job_savings([after, trial(0, 10, "6")], T) is None


def test_missing_times_place_the_trial_by_its_event() -> None:
    no_start = trial(None, 10, "6", billable=1200)
    assert trial_interval(no_start) == (T - timedelta(minutes=10), T + timedelta(minutes=10))
    assert avoidable_cost(no_start, T) == Decimal(3)
    no_times = trial(None, None, "6", billable=0)
    start, end = trial_interval(no_times)
    assert start == end == no_times.event_time


def test_a_job_saves_the_sum_of_its_trials() -> None:
    records = [trial(-20, -10, "6"), trial(-5, 15, "6"), trial(5, 15, "2.5")]
    assert stopped_job_savings(records, T) == Decimal("7.000000")
    assert stopped_job_savings([], T) == 0
