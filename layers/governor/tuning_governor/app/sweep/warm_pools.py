"""The sweep's warm-pool step: the capacity items of pools follow what SageMaker lists, and a trial's
pool that ended without its event reaching the governor (Reused or Terminated) is billed anyway.

A pool holds its instances while ``Available``; only the event of its end (``WarmPoolStatus`` Reused or
Terminated, with ``ResourceRetainedBillableTimeInSeconds``) carried what SageMaker bills for it. When
that event is lost, the sweep sees a pool it knows that is no longer listed Available, describes its
training job (one DescribeTrainingJob, once per pool: its item goes after) and, for a trial, grows the
trial's record, its job's totals and its team's month by the retention not yet counted (the store's
conditional write on the recorded retention makes it once, whichever of the sweep and a late event
comes first); a finalised job's summary is recomputed and its report corrected once if it moved.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.job import job_state, trial_objective
from tuning_governor.domain.trial_record import build_trial_record
from tuning_governor.models.sagemaker import TRAINING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.observability import metrics

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import GoverningStore

#: The longest a warm pool can stay Available after its training job was last modified: the largest
#: KeepAlivePeriodInSeconds SageMaker's API accepts (ResourceConfig and UpdateTrainingJob's
#: ResourceConfigForUpdate: 21,600 s in its model; the developer guide still says 3,600 s). A pool is
#: Available from its job's end (or a keep-alive update, which modifies the job) for at most that long.
MAX_KEEP_ALIVE = timedelta(seconds=21_600)


#: Clock skew and the time between a job's last change and its pool becoming Available.
WARM_POOL_MARGIN = timedelta(hours=1)


def refresh_warm_pools(
    services: AppServices[GoverningStore], team_of: Callable[..., Any], now: datetime
) -> dict[str, list[str]]:
    """New Available pools recorded (one Describe each), pools no longer Available settled and released
    (one Describe each); returns the trials whose retention this billed."""
    # Bounded in time: ListTrainingJobs applies WarmPoolStatusEquals after MaxResults, so an unbounded
    # listing pages through the account's whole training history; a pool Available now belongs to a job
    # modified within the longest keep-alive.
    recent = now - MAX_KEEP_ALIVE - WARM_POOL_MARGIN
    available = {s["TrainingJobName"] for s in services.sagemaker.list_warm_pools(modified_after=recent)}
    known = services.store.warm_pool_names()
    for name in sorted(available - known):
        job = services.sagemaker.describe_training_job(name)
        services.store.set_warm_pool(job, team=team_of(job.tags, job.roles))
    billed: list[str] = []
    for name in sorted(known - available):
        described = services.sagemaker.describe_training_job(name)
        if settle_trial_pool(described, services):
            billed.append(described.name)
        services.store.release_warm_pool(name)
    return {"warm_pools_billed": billed}


def settle_trial_pool(described: TrainingJob, services: AppServices[GoverningStore]) -> bool:
    """Bill a trial's warm-pool retention that its record lacks (its pool's end event was lost): True
    when the record, its job and its team's month grew by it (False: not a recorded trial, its pool not
    ended, or already counted)."""
    retained = described.warm_pool_status
    if described.tuning_job_key is None or described.status not in TRAINING_TERMINAL or retained is None:
        return False
    if retained.status not in {"Reused", "Terminated"} or not retained.resource_retained_billable_time_in_seconds:
        return False
    job_key = described.tuning_job_key
    job = job_state(services.store.get_job(job_key))
    policy = services.policy()
    team = (job.team if job is not None else None) or policy.team_of(described.tags, described.roles)
    objective = trial_objective(job, described)
    record = build_trial_record(
        described,
        job_key=job_key,
        region=(job.region if job is not None else None) or services.settings.region,
        objective_name=objective.metric if objective else (job.objective_name if job is not None else None),
        catalog=services.price_catalog(policy),
        event_id=f"sweep:{described.name}",
        event_time=described.training_end_time or services.clock(),
    )
    if not services.store.update_trial_warm_pool(record, team=team):
        return False
    metrics.add_metric(name="WarmPoolsBilledBySweep", unit=MetricUnit.Count, value=1)
    if job is not None and job.ended:
        from tuning_governor.app.finalise import refinalise  # noqa: PLC0415 - a pool billed after its job ended only

        refinalise(job_key, job, region=record.region, services=services)
    return True
