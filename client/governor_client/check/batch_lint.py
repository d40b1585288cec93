"""Large-batch findings of ``check``: ``domain.large_batch`` on the request, each finding with its source
and the worst-case cost of the trials it puts at risk (priced from the request's own cost estimate)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from governor_client.check.result import CheckFinding, CostEstimate
from tuning_governor.domain.large_batch import BatchFinding, findings
from tuning_governor.policy import Policy

SECONDS_PER_HOUR = Decimal(3600)


def trial_worst_case(cost: CostEstimate) -> Decimal | None:
    """One trial's worst case: the dearest cluster's hourly price for the longest MaxRuntimeInSeconds."""
    if cost.hourly_usd_per_trial is None:
        return None
    return cost.hourly_usd_per_trial * cost.max_trial_runtime_seconds / SECONDS_PER_HOUR


def batch_findings(
    request: Mapping[str, Any], policy: Policy, cost: CostEstimate, team: str | None
) -> list[CheckFinding]:
    """The request's large-batch findings under the policy's ``large_batch`` thresholds: an info one
    is a ``note``; a trial cost is never put above the job's own worst case."""
    per_trial = trial_worst_case(cost)
    found = findings(
        request,
        settings=policy.large_batch,
        worst_case_trial_dollars=float(per_trial) if per_trial is not None else None,
        team=team,
    )
    return [_as_check(f, cost.worst_case_usd) for f in found]


def _as_check(finding: BatchFinding, job_worst: Decimal | None) -> CheckFinding:
    usd = Decimal(str(finding.dollars)).quantize(Decimal("0.01")) if finding.dollars is not None else None
    if usd is not None and job_worst is not None:
        usd = min(usd, job_worst)
    return CheckFinding(
        severity="note" if finding.severity == "info" else "warning",
        code=finding.code,
        path=finding.definition,
        message=finding.reason,
        source=finding.source,
        usd_at_risk=usd,
    )
