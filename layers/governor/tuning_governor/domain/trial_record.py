"""A finished trial as the governor records it: its cost and objective, from DescribeTrainingJob (pure)."""

from __future__ import annotations

from datetime import datetime

from tuning_governor.domain.cost import trial_cost
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.models.records import TrialRecord
from tuning_governor.models.training_job import TrainingJob

OBJECTIVE_HYPERPARAMETER = "_tuning_objective_metric"


def build_trial_record(
    job: TrainingJob,
    *,
    job_key: str,
    region: str,
    objective_name: str | None,
    catalog: PriceCatalog,
    event_id: str,
    event_time: datetime,
) -> TrialRecord:
    cost = trial_cost(job, region, catalog)
    name = job.hyper_parameters.get(OBJECTIVE_HYPERPARAMETER, "").strip('"') or objective_name
    return TrialRecord(
        job_key=job_key,
        training_job_name=job.name,
        status=job.status,
        secondary_status=job.secondary_status,
        failure_reason=job.failure_reason,
        region=region,
        instances=cost.instances,
        instance_count=cost.instance_count,
        spot=cost.spot,
        training_seconds=cost.training_seconds,
        billable_seconds=cost.billable_seconds,
        billable_instance_seconds=cost.billable_instance_seconds,
        warm_pool_seconds=cost.warm_pool_seconds,
        warm_pool_instance_seconds=cost.warm_pool_instance_seconds,
        hourly_usd=cost.hourly_usd,
        cost_usd=cost.cost_usd,
        warm_pool_cost_usd=cost.warm_pool_cost_usd,
        spot_savings_usd=cost.spot_savings_usd,
        unpriced_types=list(cost.unpriced_types),
        approximate_price=cost.approximate_price,
        approximate_types=list(cost.approximate_types),
        objective_name=name,
        objective_value=job.metric(name) if name else None,
        hyperparameters=dict(job.hyper_parameters),
        start_time=job.training_start_time,
        end_time=job.training_end_time,
        event_id=event_id,
        event_time=event_time,
    )
