"""The items of capacity and prices, as values: standalone training jobs, warm pools, the admission
ledger and price catalogs, built and read back the same way by both store adapters. Nothing here
talks to AWS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from tuning_governor.adapters.store.keys import LEDGER_KEY, iso
from tuning_governor.domain.capacity import Holder, Ledger, Reservation
from tuning_governor.domain.pricing import RegionCatalog
from tuning_governor.models.sagemaker import TRAINING_RUNNING

if TYPE_CHECKING:
    from collections.abc import Callable

    from tuning_governor.models.training_job import TrainingJob


# -- standalone training jobs and warm pools ------------------------------------------------------------------------
def training_job_attributes(job: TrainingJob, *, team: str | None, event_time: datetime) -> dict[str, Any]:
    """What ``upsert_training_job`` sets on a standalone training job's item."""
    modified = iso(job.last_modified_time or event_time)
    return {
        "status": job.status,
        "last_modified": modified,
        "instances": job.instances(),
        "gsi1pk": "TRAINING#Active" if job.status in TRAINING_RUNNING else "TRAINING#Ended",
        "gsi1sk": modified,
        "job_name": job.name,
        "team": team or "",
    }


def warm_pool_tracked(job: TrainingJob) -> bool:
    """Whether a training job's warm pool has a holder to write or release: it shows a warm-pool status,
    or asked for a pool (KeepAlivePeriodInSeconds > 0). Otherwise ``set_warm_pool`` writes nothing."""
    status = job.warm_pool_status.status if job.warm_pool_status else None
    keep_alive = job.resource_config.keep_alive_period_in_seconds if job.resource_config else None
    return status is not None or bool(keep_alive)


def warm_pool_item(job: TrainingJob, *, team: str | None) -> dict[str, Any] | None:
    """The row of a warm pool that holds its instances (Available); None for any other status."""
    status = job.warm_pool_status.status if job.warm_pool_status else None
    if status != "Available":
        return None
    return {
        "pk": f"WARMPOOL#{job.name.lower()}",
        "sk": "META",
        "gsi1pk": "WARMPOOL#Available",
        "gsi1sk": job.name.lower(),
        "instances": job.instances(),
        "team": team or "",
        "job_name": job.name,
    }


def holders_from(by_gsi: Callable[[str], list[dict[str, Any]]], *, tuning_jobs: bool) -> list[Holder]:
    """Everything that holds training instances, from the ``gsi1`` partitions ``by_gsi`` lists (tuning
    jobs InProgress or Stopping by their worst-case demand, unless ``tuning_jobs`` is False; active
    standalone training jobs; available warm pools)."""
    holders: list[Holder] = []
    for status in ("InProgress", "Stopping") if tuning_jobs else ():
        for item in by_gsi(f"STATUS#{status}"):
            holders.append(
                Holder(
                    key=str(item["pk"]).removeprefix("JOB#"),
                    kind="tuning-job",
                    team=item.get("team") or None,
                    instances={k: int(v) for k, v in (item.get("demand") or {}).items()},
                )
            )
    for kind, partition in (("training-job", "TRAINING#Active"), ("warm-pool", "WARMPOOL#Available")):
        for item in by_gsi(partition):
            holders.append(
                Holder(
                    key=str(item["pk"]),
                    kind=kind,
                    team=item.get("team") or None,
                    instances={k: int(v) for k, v in (item.get("instances") or {}).items()},
                )
            )
    return holders


# -- price catalogs ----------------------------------------------------------------------------------------------------
def price_catalog_item(catalog: RegionCatalog) -> dict[str, Any]:
    return {
        "pk": f"PRICES#{catalog.region}",
        "sk": "CATALOG",
        "gsi1pk": "PRICES",
        "gsi1sk": catalog.region,
        "type": "price-catalog",
    } | catalog.model_dump(mode="python")


def catalogs_from(items: list[dict[str, Any]]) -> list[RegionCatalog]:
    """The catalogs the ``PRICES`` items hold; an item that no longer parses is skipped, not fatal."""
    catalogs: list[RegionCatalog] = []
    for item in items:
        try:
            catalogs.append(RegionCatalog.model_validate(item))
        except ValidationError:
            continue
    return catalogs


# -- capacity ledger ---------------------------------------------------------------------------------------------------
def reservation_item(reservation: Reservation) -> dict[str, Any]:
    """A reservation as the ledger item holds it (its fields but its key, counts as dicts); an ended one
    carries ``ended`` (its end in SageMaker's time) and stays in the same map until pruned."""
    values = {f.name: getattr(reservation, f.name) for f in fields(Reservation) if f.name not in {"job_key", "ended"}}
    item = {name: dict(value) if isinstance(value, Mapping) else value for name, value in values.items()}
    return item | ({"ended": reservation.ended} if reservation.ended else {})


def new_ledger_item(put: dict[str, Reservation]) -> dict[str, Any]:
    """The ledger item the first commit creates (version 1)."""
    return LEDGER_KEY | {
        "type": "capacity-ledger",
        "version": 1,
        "reservations": {k: reservation_item(r) for k, r in put.items()},
    }


def ledger_from_item(item: dict[str, Any] | None) -> Ledger:
    """The ledger an item holds (version 0 and no reservations when there is none yet), its running
    reservations apart from the ended ones."""
    item = item or {}
    every = [reservation_from_item(str(key), value) for key, value in (item.get("reservations") or {}).items()]
    return Ledger(
        version=int(item.get("version") or 0),
        reservations={r.job_key: r for r in every if not r.ended},
        ended={r.job_key: r for r in every if r.ended},
    )


def reservation_from_item(job_key: str, value: dict[str, Any]) -> Reservation:
    def counts(raw: Any) -> dict[str, int]:
        return {str(k): int(v) for k, v in (raw or {}).items()}

    return Reservation(
        job_key=job_key,
        team=str(value["team"]) if value.get("team") else None,
        on_demand=counts(value.get("on_demand")),
        spot=counts(value.get("spot")),
        plan=str(value.get("plan") or ""),
        slots=int(value.get("slots") or 1),
        per_trial_on_demand=counts(value.get("per_trial_on_demand")),
        per_trial_spot=counts(value.get("per_trial_spot")),
        created=str(value.get("created") or ""),
        over_limit=bool(value.get("over_limit")),
        version=int(value.get("version") or 0),
        job_created=str(value.get("job_created") or ""),
        incomplete=bool(value.get("incomplete")),
        ended=str(value.get("ended") or ""),
    )
