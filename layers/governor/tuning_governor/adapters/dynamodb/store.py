"""``GovernorStore``: the DynamoDB adapter of the ``Store`` port, one mixin per area over :class:`Table`.

Mixins rather than a class holding area objects: every area shares the one client, table name and
retention, which :class:`Table` holds, so the façade is its base list and no method is written twice
(a delegating façade would repeat each of the port's 47 signatures).
"""

from __future__ import annotations

from typing import ClassVar

from tuning_governor.adapters.dynamodb.capacity import CapacityTable
from tuning_governor.adapters.dynamodb.decisions import DecisionTable
from tuning_governor.adapters.dynamodb.jobs import JobTable
from tuning_governor.adapters.dynamodb.prices import PriceTable
from tuning_governor.adapters.dynamodb.queue import QueueTable
from tuning_governor.adapters.dynamodb.team_months import TeamMonthTable
from tuning_governor.adapters.dynamodb.trials import TrialTable
from tuning_governor.ports import Store

__all__ = ["GovernorStore"]


class GovernorStore(JobTable, TrialTable, DecisionTable, TeamMonthTable, CapacityTable, PriceTable, QueueTable):
    """The governor's table on DynamoDB (see :mod:`tuning_governor.adapters.dynamodb.table`)."""

    permissions: ClassVar[dict[str, str]] = {
        "read": "dynamodb:GetItem",
        "query": "dynamodb:Query",
        "put": "dynamodb:PutItem",
        "update": "dynamodb:UpdateItem",
        "delete": "dynamodb:DeleteItem",
        # The ConditionCheck item of a transaction (an admission checks its job has not ended).
        "check": "dynamodb:ConditionCheckItem",
    }


# mypy checks that the façade implements the whole port.
_PORT: type[Store] = GovernorStore
