"""The table's TTL attribute (``expires_at``, epoch seconds) is written on the rows that may go.

Delivery and decision rows expire 90 days after they were claimed; trial rows only when the stack's
``TrialRetentionDays`` is set (then that many days after the trial ended); everything else stays.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from governor_client.offline.environment import TABLE_NAME
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tuning_governor.adapters.dynamodb import EXPIRY_ATTRIBUTE, GovernorStore
from tuning_governor.policy import Policy

JOB = "ttl-hb"
DAY = 86400


def _table(world: World) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in world.env.dynamodb.get_paginator("scan").paginate(TableName=TABLE_NAME):
        items.extend(page["Items"])
    return items


def _epoch(item: dict[str, Any], attribute: str) -> int:
    return int(datetime.fromisoformat(item[attribute]["S"]).timestamp())


def _run(world: World) -> list[dict[str, Any]]:
    # A budget far below one trial: the monitor-mode budget rule decides (and reports) once.
    policy = Policy.model_validate({"defaults": {"job_budget_usd": Decimal("0.01")}})
    world.env.services.policy = lambda: policy
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request(JOB, max_jobs=4, max_parallel=2))
    world.run_until_idle()
    return _table(world)


def test_deliveries_and_decisions_expire_after_90_days_and_trials_are_kept_by_default(world: World) -> None:
    items = _run(world)
    deliveries = [i for i in items if i["sk"]["S"].startswith("DELIVERY#")]
    decisions = [i for i in items if i["sk"]["S"].startswith("DECISION#")]
    trials = [i for i in items if i["sk"]["S"].startswith("TRIAL#")]
    assert deliveries and decisions and len(trials) == 4
    # Then each delivery and decision row carries a Number TTL 90 days after its claim
    for item in deliveries:
        assert item["state"]["S"] == "sent"
        assert int(item[EXPIRY_ATTRIBUTE]["N"]) == _epoch(item, "sent_at") + 90 * DAY
    for item in decisions:
        assert int(item[EXPIRY_ATTRIBUTE]["N"]) == _epoch(item, "claimed_at") + 90 * DAY
    # And nothing else expires: trials (retention 0 = keep), the job, its summary
    kept = [i for i in items if not i["sk"]["S"].startswith(("DELIVERY#", "DECISION#"))]
    assert kept and all(EXPIRY_ATTRIBUTE not in i for i in kept)


def test_trial_rows_expire_after_the_configured_retention(world: World) -> None:
    world.env.services.store = GovernorStore(world.env.dynamodb, TABLE_NAME, trial_retention_days=400)
    trials = [i for i in _run(world) if i["sk"]["S"].startswith("TRIAL#")]
    assert len(trials) == 4
    for item in trials:
        assert int(item[EXPIRY_ATTRIBUTE]["N"]) == _epoch(item, "end_time") + 400 * DAY


@pytest.mark.parametrize("days", [-1, 1, 199])
def test_a_trial_retention_shorter_than_a_tuning_job_can_run_is_refused(world: World, days: int) -> None:
    # A trial row is what makes its counting exactly-once while its job runs (up to 182.5 days).
    with pytest.raises(ValueError, match="200"):
        GovernorStore(world.env.dynamodb, TABLE_NAME, trial_retention_days=days)


def test_expiry_is_counted_from_the_claim(world: World) -> None:
    store = world.env.services.store
    now = datetime.fromisoformat("2026-12-01T00:00:00+00:00")
    assert store.claim_delivery("some-job", "final", "sns", now)
    (item,) = [i for i in _table(world) if i["pk"]["S"] == "JOB#some-job"]
    assert int(item[EXPIRY_ATTRIBUTE]["N"]) == int((now + timedelta(days=90)).timestamp())
