"""What a rule may look at: a snapshot of one tuning job, and of the account's capacity."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict

Trigger = Literal["arrival", "trial", "sweep"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class JobFacts(Frozen):
    """One tuning job as the governor knows it at the moment of a decision."""

    job_key: str
    job_name: str
    team: str | None
    tags: dict[str, str]
    status: str
    created_at: datetime | None
    now: datetime
    """The time the decision is made at: the deciding event's time, or the sweep's clock."""
    max_parallel: int
    max_trials: int | None
    demand: dict[str, int]
    spent_usd: Decimal | None
    """Cost of the finished trials; None when any of them is unpriced."""
    trials_finished: int
    trials_failed: int
    objective_type: str | None
    completed_objectives: list[float]
    """Objective values of completed trials, in the order they finished."""


class LimitSource(Frozen):
    limit: int
    source: str


class CapacityFacts(Frozen):
    """Concurrent training instances per instance type, excluding the job being decided on."""

    usage: dict[str, int]
    team_usage: dict[str, int]
    account_limits: dict[str, LimitSource]
    """The effective account limit per type: the lower of the policy quota and the applied Service Quota."""
    team_limits: dict[str, int]
    unknown_limits: list[str] = []
