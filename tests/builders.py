"""Test builders shared by every layer: the facts a rule judges, the quotas it reads.

A test module names only what its tests are about (``facts_builder(demand={P3: 4})``); every other field
of :class:`JobFacts` comes from :data:`BASE_FACTS`, so a field added to the facts lands here once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from tuning_governor.domain.capacity import Quota
from tuning_governor.governance.facts import JobFacts

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

#: A tuning job of team ``vision`` just created at :data:`T0`, nothing spent, nothing finished.
BASE_FACTS: dict[str, Any] = {
    "job_key": "job",
    "job_name": "job",
    "team": "vision",
    "tags": {"team": "vision"},
    "status": "InProgress",
    "created_at": T0,
    "now": T0,
    "max_parallel": 1,
    "max_trials": 30,
    "demand": {},
    "spent_usd": Decimal(0),
    "trials_finished": 0,
    "trials_failed": 0,
    "objective_type": "Maximize",
}


def job_facts(**fields: Any) -> JobFacts:
    """:data:`BASE_FACTS` with ``fields`` replaced, validated as the engine's facts."""
    return JobFacts.model_validate(BASE_FACTS | fields)


def facts_builder(**defaults: Any) -> Callable[..., JobFacts]:
    """A module's own ``facts(**changes)``: :func:`job_facts` with that module's ``defaults`` first."""

    def facts(**changes: Any) -> JobFacts:
        return job_facts(**(defaults | changes))

    return facts


def quota(name: str, value: int, *, applied: bool = True) -> Quota:
    """A Service Quotas value named ``name`` (its code derived from the name)."""
    return Quota(code=f"L-{abs(hash(name)) % 10**8:08d}", name=name, value=value, applied=applied)
