"""Fresh facts before a stop: the job's status and tags as SageMaker has them now.

Every path that stops a job (a trial event, the one-time check, a grace period's end, the sweep, an
arrival or a displacement) reaches the stop through ``governance.actions``; there, right before the
stop call, the job is described and its tags listed (DescribeHyperParameterTuningJob and ListTags: two
calls per stop, none for a judgement that stops nothing), so that:

- a job its owner (or anyone) stopped first is recorded as ``already-stopping`` / ``already-ended``,
  never as stopped by the governor;
- an exemption tagged since the table was written wins (``exempt``);
- a budget raised by its tag since then is judged again: a breach that no longer holds is recorded as
  ``passed`` (verdict and action), and the rule may decide again later against the new budget.

A tag event that is late or lost is thereby never the reason for a stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.errors import JobNotFound
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import Decision, registry
from tuning_governor.models.place import Place
from tuning_governor.observability import metrics
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.ports import JobStore

#: The verdict (and action) of a breach that no longer holds when the governor comes to act on it.
PASSED = "passed"
NOT_FOUND = "NotFound"


@dataclass(frozen=True)
class Fresh:
    """What SageMaker says about a job at the moment of a stop."""

    status: str
    tags: dict[str, str] | None
    """Its tags from ListTags (None: Describe gave no ARN to list them by)."""


def read_fresh(services: EngineServices[JobStore], job_name: str, place: Place | None = None) -> Fresh:
    """One DescribeHyperParameterTuningJob and one ListTags where the job runs (``place``; None: the
    home place); status ``NotFound``: SageMaker does not know the job, as a stop would have answered."""
    sagemaker = services.sagemaker_for(place)
    try:
        described = sagemaker.describe_tuning_job(job_name)
        tags = sagemaker.list_tags(described.arn) if described.arn else None
    except JobNotFound:
        return Fresh(NOT_FOUND, None)
    metrics.add_metric(name="FreshReadsBeforeStop", unit=MetricUnit.Count, value=1)
    return Fresh(described.status, tags)


def would_stop(decision: Decision, tags: dict[str, str], policy: Policy) -> bool:
    """Whether acting on ``decision`` makes a stop call (as the table's tags say)."""
    return decision.wants_stop and policy.enforcing and not policy.is_exempt(tags)


def not_running(status: str) -> tuple[str, str]:
    """The action and detail for a job SageMaker no longer runs when the governor comes to stop it."""
    if status == NOT_FOUND:
        return "not-found", "SageMaker does not know the job: no stop made"
    action = "already-stopping" if status == "Stopping" else "already-ended"
    return (
        action,
        f"SageMaker had the job {status} before this decision's stop call (its owner, or an earlier stop): no stop made for it",
    )


def rejudged(
    decision: Decision, job: JobFacts, fresh: Fresh, policy: Policy, services: EngineServices[JobStore]
) -> tuple[Decision, JobFacts]:
    """The decision and facts on the tags SageMaker has now. Tags that changed are stored (the owner
    with them); a job-scoped rule's breach is judged again on them (a raised budget tag, say): one that
    no longer holds becomes a ``passed`` decision, which stops nothing."""
    if fresh.tags is None or fresh.tags == job.tags:
        return decision, job
    services.store.refresh_tags(
        job.job_key, tags=fresh.tags, owner=fresh.tags.get(services.settings.owner_tag), read_at=services.clock()
    )
    facts = job.model_copy(update={"tags": fresh.tags, "budget": policy.budget_for(fresh.tags, job.roles)})
    rule = registry.get(decision.rule)
    if rule.scope != "job" or rule.admission_judged or policy.is_exempt(fresh.tags):
        return decision, facts
    again = rule.evaluate(policy, facts, None)
    if again is not None and again.wants_stop:
        return decision, facts
    metrics.add_metric(name="BreachesPassedBeforeStop", unit=MetricUnit.Count, value=1)
    return passed(decision, "the job's tags read from SageMaker before the stop clear it"), facts


def passed(decision: Decision, why: str, **numbers: object) -> Decision:
    """``decision`` recorded as a breach that no longer held at the moment of acting: no stop."""
    return decision.model_copy(
        update={
            "verdict": PASSED,
            "message": f"{decision.message}; no longer a breach when the governor came to act: {why}",
            "numbers": decision.numbers | numbers,
        }
    )
