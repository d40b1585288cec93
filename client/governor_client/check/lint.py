"""Config lint: what is valid against SageMaker's model but will cost or fail silently, with reasons.

Each finding names the request path it is about. Codes (stable, for CI filters): max-wait-below-runtime
(an error: SageMaker rejects it), spot-without-max-wait,
spot-without-checkpoints, no-max-runtime, early-stopping-off, unpriced-instance-type,
worst-case-over-budget, worst-case-over-team-month. ``never-fits`` comes from the verdict (verdict.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from governor_client.check.cost import DEFAULT_MAX_RUNTIME_S
from governor_client.check.result import CostEstimate
from governor_client.validate.findings import Finding
from tuning_governor.policy import Policy

#: Strategies that take TrainingJobEarlyStoppingType (Hyperband stops trials itself; Grid does not take it).
EARLY_STOPPING_STRATEGIES = ("Bayesian", "Random")


def _definitions(request: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    single = request.get("TrainingJobDefinition")
    if isinstance(single, Mapping):
        yield "TrainingJobDefinition", single
    for index, definition in enumerate(request.get("TrainingJobDefinitions") or []):
        if isinstance(definition, Mapping):
            yield f"TrainingJobDefinitions[{index}]", definition


def _definition_findings(path: str, definition: Mapping[str, Any]) -> Iterator[Finding]:
    stopping = definition.get("StoppingCondition") or {}
    wait, runtime = stopping.get("MaxWaitTimeInSeconds"), stopping.get("MaxRuntimeInSeconds")
    if definition.get("EnableManagedSpotTraining") and wait and runtime and wait < runtime:
        yield Finding(
            severity="error",
            code="max-wait-below-runtime",
            path=f"{path}.StoppingCondition.MaxWaitTimeInSeconds",
            message=f"MaxWaitTimeInSeconds {wait} < MaxRuntimeInSeconds {runtime}: SageMaker requires the wait"
            " (spot capacity + run) to be at least the runtime and rejects the request",
        )
    if definition.get("EnableManagedSpotTraining"):
        if not stopping.get("MaxWaitTimeInSeconds"):
            yield Finding(
                severity="warning",
                code="spot-without-max-wait",
                path=f"{path}.StoppingCondition.MaxWaitTimeInSeconds",
                message="managed spot without MaxWaitTimeInSeconds: nothing bounds how long a trial waits for"
                " spot capacity (set it >= MaxRuntimeInSeconds)",
            )
        if not definition.get("CheckpointConfig"):
            yield Finding(
                severity="warning",
                code="spot-without-checkpoints",
                path=f"{path}.CheckpointConfig",
                message="managed spot without CheckpointConfig: an interrupted trial starts again from scratch"
                " and bills its lost time again",
            )
    if not stopping.get("MaxRuntimeInSeconds"):
        yield Finding(
            severity="warning",
            code="no-max-runtime",
            path=f"{path}.StoppingCondition.MaxRuntimeInSeconds",
            message=f"no MaxRuntimeInSeconds: SageMaker's default ({DEFAULT_MAX_RUNTIME_S} s, one day) bounds each"
            " trial, and the worst case is costed on it",
        )


def request_findings(request: Mapping[str, Any]) -> list[Finding]:
    """The request's own mistakes (spot, runtime, early stopping), per definition where they belong."""
    found = [f for path, d in _definitions(request) for f in _definition_findings(path, d)]
    config = request.get("HyperParameterTuningJobConfig") or {}
    strategy = config.get("Strategy")
    if strategy in EARLY_STOPPING_STRATEGIES and config.get("TrainingJobEarlyStoppingType", "Off") != "Auto":
        found.append(
            Finding(
                severity="warning",
                code="early-stopping-off",
                path="HyperParameterTuningJobConfig.TrainingJobEarlyStoppingType",
                message=f"early stopping is Off, though {strategy} supports it: set Auto to stop trials unlikely"
                " to beat the best so far",
            )
        )
    return found


def cost_findings(cost: CostEstimate, policy: Policy, tags: Mapping[str, str], roles: list[str]) -> list[Finding]:
    """Unpriced types, and a worst case above the job's budget or its team's monthly budget."""
    found = [
        Finding(
            severity="warning",
            code="unpriced-instance-type",
            path=None,
            message=f"{itype} has no price in the bundled catalogue or the policy: its cost is unknown (never $0);"
            " add it to the policy's prices",
        )
        for itype in cost.unpriced_types
    ]
    worst = cost.worst_case_usd
    if worst is None:
        return found
    budget = policy.budget_for(tags, roles)
    if budget.usd is not None and worst > budget.usd:
        source = {"tag": f"the job's {policy.budget_tag} tag", "team": "its team's job budget"}.get(
            str(budget.source), "the policy's default job budget"
        )
        found.append(_over("worst-case-over-budget", worst, budget.usd, source))
    monthly = policy.team_monthly_budget(policy.team_of(tags, roles))
    if monthly is not None and worst > monthly:
        found.append(_over("worst-case-over-team-month", worst, monthly, "the team's monthly budget"))
    return found


def _over(code: str, worst: Decimal, budget: Decimal, what: str) -> Finding:
    return Finding(
        severity="warning",
        code=code,
        path=None,
        message=f"worst case ${worst:,.2f} > {what} ${budget:,.2f}: the budget rule stops the job before every"
        " trial has run",
    )
