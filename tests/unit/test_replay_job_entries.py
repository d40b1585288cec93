"""The replay result's job entries: early stopping, timing and the numbers behind each decision (issue 7, 12)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest
from pydantic import ValidationError

from governor_client.replay.model import JobResult, ReplayResult, result_schema

T = "2026-11-30T10:00:00Z"


def job_entry() -> dict[str, Any]:
    return {
        "status": "Stopped",
        "summary": "final",
        "best_training_job": "xgb-001-0a1b2c3d",
        "best_hyperparameters": {"eta": "0.1"},
        "objective": {"name": "validation:auc", "type": "Maximize", "value": 0.91},
        "trials_by_status": {"Completed": 6, "Stopped": 24},
        "billable_instance_seconds": 1800,
        "cost_usd": 0.115,
        "cost_status": "priced",
        "spot_savings_usd": 0.0,
        "stop_requested_at": T,
        "early_stopping": {
            "trials_stopped_early": 22,
            "trials_cut_by_job_stop": 2,
            "saved_billable_instance_seconds": 3600,
            "billable_instance_seconds_without_early_stopping": 5400,
        },
        "timing": {
            "wall_clock_seconds": 720,
            "estimate_without_early_stopping_seconds": 1440,
            "one_at_a_time_seconds": 5400,
        },
        "decisions": [
            {
                "rule": "budget",
                "verdict": "breach",
                "mode": "enforce",
                "action": "stopped",
                "at": T,
                "message": "spent $20.40 of a $20.00 budget",
                "numbers": {
                    "spent_usd": 20.4,
                    "spent_finished_usd": 12.1,
                    "spent_accrued_usd": 8.3,
                    "limit_usd": 20,
                    "source": "tag governance:budget-usd",
                },
            }
        ],
    }


def result_with(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "policy": {"source": "p.yaml", "mode": "enforce"},
        "events": {"lines": 1, "processed": 1, "rejected": 0, "failed": 0, "first_at": T, "last_at": T},
        "sweeps": {"every_seconds": 300, "runs": 0},
        "jobs": {"xgb": entry},
        "actions": [],
        "notifications": [],
        "rejected_events": [],
        "failed_events": [],
        "savings": {"usd": 0, "by_job": {}, "complete": True, "method": "m"},
        "facts": {"table": None, "jobs_from_table": 0, "incomplete": []},
    }


def test_a_job_entry_carries_early_stopping_timing_and_the_deciding_numbers() -> None:
    entry = JobResult.model_validate(job_entry())
    data = json.loads(entry.model_dump_json())
    assert data["early_stopping"]["trials_cut_by_job_stop"] == 2
    assert data["timing"]["estimate_without_early_stopping_seconds"] == 1440
    [decision] = data["decisions"]
    assert decision["at"] == T
    assert decision["numbers"]["spent_accrued_usd"] == 8.3
    assert decision["numbers"]["source"] == "tag governance:budget-usd"


@pytest.mark.parametrize("missing", ["early_stopping", "timing"])
def test_the_schema_requires_early_stopping_and_timing(missing: str) -> None:
    entry = job_entry()
    del entry[missing]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(result_with(entry), result_schema())
    with pytest.raises(ValidationError):
        JobResult.model_validate(entry)


def test_the_schema_requires_each_decisions_numbers() -> None:
    entry = job_entry()
    del entry["decisions"][0]["numbers"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(result_with(entry), result_schema())


def test_a_full_result_validates_against_the_schema() -> None:
    data = json.loads(ReplayResult.model_validate(result_with(job_entry())).model_dump_json())
    jsonschema.validate(data, result_schema())


def test_timing_may_be_unknown_but_not_renamed() -> None:
    entry = job_entry()
    entry["timing"] = {"wall_clock_seconds": None, "estimate_without_early_stopping_seconds": None,
                       "one_at_a_time_seconds": None}  # fmt: skip
    JobResult.model_validate(entry)
    entry["timing"]["sequential_estimate_seconds"] = 10
    with pytest.raises(ValidationError):
        JobResult.model_validate(entry)


def test_datetimes_in_numbers_are_rendered_as_iso_strings() -> None:
    entry = job_entry()
    entry["decisions"][0]["numbers"]["since"] = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    data = json.loads(JobResult.model_validate(entry).model_dump_json())
    assert data["decisions"][0]["numbers"]["since"].startswith("2026-11-30T09:00:00")
