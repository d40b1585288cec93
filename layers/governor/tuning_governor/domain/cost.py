"""Cost of a trial: SageMaker bills BillableTimeInSeconds x instances x the instance price.

Managed spot bills fewer seconds than it trains (savings = training - billable seconds, priced at the
on-demand rate, as the DescribeTrainingJob docs define it). Warm-pool retention is billed separately:
ResourceRetainedBillableTimeInSeconds x instances. Money is Decimal, rounded to micro-dollars per trial.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from pydantic import ConfigDict

from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.model_base import GovernorModel
from tuning_governor.models.training_job import TrainingJob

MICRO = Decimal("0.000001")
SECONDS_PER_HOUR = Decimal(3600)


def usd(value: Decimal) -> Decimal:
    return value.quantize(MICRO)


class ClusterRate(GovernorModel):
    """The hourly price of a whole cluster; ``hourly_usd`` is None if any type in it is unpriced everywhere.

    ``approximate_types`` were priced on the fallback (the type's highest price in any region), because
    the catalog has no price for them in the job's region; ``approximate`` is also True when a price's
    own quality is not AWS's list price (secondary, hosting-proxy).
    """

    model_config = ConfigDict(frozen=True)

    hourly_usd: Decimal | None
    unpriced_types: tuple[str, ...] = ()
    approximate: bool = False
    approximate_types: tuple[str, ...] = ()


def cluster_rate(instances: dict[str, int], region: str, catalog: PriceCatalog) -> ClusterRate:
    """The cluster's hourly price in ``region``, worked out once per catalog (each judgement prices every
    running trial again, and the clusters are few)."""
    key = (region, *sorted(instances.items()))
    rate: ClusterRate | None = catalog.rates.get(key)
    if rate is None:
        rate = catalog.rates[key] = _cluster_rate(instances, region, catalog)
    return rate


def _cluster_rate(instances: dict[str, int], region: str, catalog: PriceCatalog) -> ClusterRate:
    total = Decimal(0)
    unpriced: list[str] = []
    fallback: list[str] = []
    approximate = False
    for itype, count in sorted(instances.items()):
        quote = catalog.quote(region, itype)
        if quote is None:
            unpriced.append(itype)
            continue
        approximate = approximate or quote.approximate
        if quote.basis != "exact":
            fallback.append(itype)
        total += quote.usd_per_hour * count
    if unpriced or not instances:
        return ClusterRate(
            hourly_usd=None,
            unpriced_types=tuple(unpriced),
            approximate=approximate,
            approximate_types=tuple(fallback),
        )
    return ClusterRate(hourly_usd=total, approximate=approximate, approximate_types=tuple(fallback))


class PricingFacts(GovernorModel):
    """How well a job's instance types are priced in its region (what the ``pricing`` rule reports)."""

    model_config = ConfigDict(frozen=True)

    unpriced_types: tuple[str, ...] = ()
    """Priced in no region and by no policy: cost unknown, never $0."""
    approximate_types: tuple[str, ...] = ()
    """Priced on the fallback: the highest price of the type in another region."""
    notes: dict[str, str] = {}
    """Per type, the price used and where it comes from."""


def pricing_facts(
    instance_types: Iterable[str],
    region: str | None,
    catalog: PriceCatalog,
    *,
    recorded_unpriced: Iterable[str] = (),
    recorded_approximate: Iterable[str] = (),
) -> PricingFacts:
    """Judge ``instance_types`` (a job's demand) in ``region`` against the catalog, plus what its
    recorded trials already found (a trial may use a type its demand did not list)."""
    unpriced = set(recorded_unpriced) - {"unknown"}
    approximate = set(recorded_approximate)
    notes: dict[str, str] = {}
    for itype in sorted(set(instance_types) | unpriced | approximate):
        quote = catalog.quote(region, itype) if region else None
        if quote is None:
            if region or itype in unpriced:
                unpriced.add(itype)
                approximate.discard(itype)
                notes[itype] = "no price in any region or in the policy"
            continue
        if quote.basis != "exact":
            approximate.add(itype)
            unpriced.discard(itype)
        if itype in approximate:
            notes[itype] = quote.describe()
    return PricingFacts(
        unpriced_types=tuple(sorted(unpriced)), approximate_types=tuple(sorted(approximate)), notes=notes
    )


class TrialCost(GovernorModel):
    model_config = ConfigDict(frozen=True)

    instances: dict[str, int]
    instance_count: int
    spot: bool
    training_seconds: int
    billable_seconds: int
    warm_pool_seconds: int
    billable_instance_seconds: int
    warm_pool_instance_seconds: int
    hourly_usd: Decimal | None
    cost_usd: Decimal | None
    warm_pool_cost_usd: Decimal | None
    spot_savings_usd: Decimal | None
    unpriced_types: tuple[str, ...] = ()
    approximate_price: bool = False
    approximate_types: tuple[str, ...] = ()


def billable_seconds(job: TrainingJob) -> int:
    """BillableTimeInSeconds, else the billed interval TrainingEndTime - TrainingStartTime, else 0.

    A failed job may lack both; if it never started training nothing was billed.
    """
    if job.billable_time_in_seconds is not None:
        return job.billable_time_in_seconds
    if job.training_start_time and job.training_end_time:
        return max(0, round((job.training_end_time - job.training_start_time).total_seconds()))
    return 0


def training_seconds(job: TrainingJob) -> int:
    if job.training_time_in_seconds is not None:
        return job.training_time_in_seconds
    return billable_seconds(job)


def trial_cost(job: TrainingJob, region: str, catalog: PriceCatalog) -> TrialCost:
    instances = job.instances()
    count = sum(instances.values())
    billable = billable_seconds(job)
    trained = training_seconds(job)
    warm = 0
    if job.warm_pool_status and job.warm_pool_status.resource_retained_billable_time_in_seconds:
        warm = job.warm_pool_status.resource_retained_billable_time_in_seconds
    rate = cluster_rate(instances, region, catalog)
    cost = warm_cost = savings = None
    if rate.hourly_usd is not None:
        cost = usd(rate.hourly_usd * billable / SECONDS_PER_HOUR)
        warm_cost = usd(rate.hourly_usd * warm / SECONDS_PER_HOUR)
        saved_seconds = max(0, trained - billable) if job.enable_managed_spot_training else 0
        savings = usd(rate.hourly_usd * saved_seconds / SECONDS_PER_HOUR)
    return TrialCost(
        instances=instances,
        instance_count=count,
        spot=job.enable_managed_spot_training,
        training_seconds=trained,
        billable_seconds=billable,
        warm_pool_seconds=warm,
        billable_instance_seconds=billable * count,
        warm_pool_instance_seconds=warm * count,
        hourly_usd=rate.hourly_usd,
        cost_usd=cost,
        warm_pool_cost_usd=warm_cost,
        spot_savings_usd=savings,
        unpriced_types=rate.unpriced_types,
        approximate_price=rate.approximate,
        approximate_types=rate.approximate_types,
    )
