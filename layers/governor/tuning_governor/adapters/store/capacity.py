"""The capacity area: training jobs, warm pools, holders, the admission ledger (``CapacityStore``), and
their items.

The ledger (``CAPACITY`` / ``LEDGER``) holds every admitted job's reservation and a version; admission
writes back on the condition that the version is the one it read, so arrivals are serialized in commit
order. A released reservation stays marked ``ended`` for ENDED_RETENTION (70 minutes), then is pruned.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from datetime import datetime
from typing import Any, Self

from tuning_governor.adapters.store.area import META, Area
from tuning_governor.adapters.store.conditions import all_of, eq, exists, fresh, missing, not_in
from tuning_governor.adapters.store.decisions import decision_claim
from tuning_governor.adapters.store.keys import LEDGER_KEY, SWEPT_PK, iso, job_pk
from tuning_governor.adapters.store.port import Change, Check, Delete, Put, Update, WriteConflict, assign, remove, sets
from tuning_governor.domain.capacity import Holder, Ledger, Reservation
from tuning_governor.domain.stored_item import Remembered, StoredItem
from tuning_governor.models.decisions import Decision
from tuning_governor.models.sagemaker import TRAINING_RUNNING, TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob

LEDGER = (LEDGER_KEY["pk"], LEDGER_KEY["sk"])


class Capacity(Area):
    """The ``CapacityStore`` port over the item table."""

    _ledger: tuple[str, str] = LEDGER
    """The capacity ledger's key: ``CAPACITY`` at home, one per account and region elsewhere."""

    def ledger_at(self, pk: str) -> Self:
        """This store with the capacity ledger of partition ``pk`` (one per place: ``models.place.ledger_pk``);
        every other item is the same table's."""
        view = copy.copy(self)
        view._ledger = (pk, LEDGER_KEY["sk"])
        return view

    def upsert_training_job(self, job: TrainingJob, *, team: str | None, event_time: datetime) -> bool:
        attributes = training_job_attributes(job, team=team, event_time=event_time)
        key = (f"TRAINING#{job.name.lower()}", META)
        return self._update(key, sets(attributes), fresh(TRAINING_TERMINAL, attributes["last_modified"]))

    def set_warm_pool(self, job: TrainingJob, *, team: str | None) -> None:
        """An Available warm pool holds its instances; any other warm-pool status releases them. A job that
        never asked for a pool and shows no warm-pool status has no holder to release: nothing is written."""
        if not warm_pool_tracked(job):
            return
        item = warm_pool_item(job, team=team)
        self._items.write(Put(item) if item is not None else Delete((f"WARMPOOL#{job.name.lower()}", META)))

    def release_warm_pool(self, name: str) -> None:
        self._items.write(Delete((f"WARMPOOL#{name.lower()}", META)))

    def warm_pool_names(self) -> set[str]:
        return {str(item["job_name"]) for item in self._items.index("WARMPOOL#Available")}

    def holders(self, *, tuning_jobs: bool = True) -> list[Holder]:
        return holders_from(self._items.index, tuning_jobs=tuning_jobs)

    def put_capacity_snapshot(self, snapshot: dict[str, Any]) -> None:
        self._items.write(Put({"pk": "CAPACITY", "sk": "SNAPSHOT"} | snapshot))

    def mark_place_swept(self, place: str, at: datetime) -> None:
        self._items.write(Put({"pk": SWEPT_PK, "sk": place, "swept_at": at.isoformat()}))

    def places_swept(self) -> dict[str, datetime]:
        return {str(i["sk"]): datetime.fromisoformat(str(i["swept_at"])) for i in self._items.query(SWEPT_PK)}

    def read_ledger(self) -> Ledger:
        item = self._items.get(self._ledger)
        stored = isinstance(item, StoredItem)  # its entries never change: each is read once (domain.stored_item)
        return ledger_from_item(item, lambda key, value: _RESERVATIONS(value, key, stored=stored))

    def commit_admission(
        self,
        version: int,
        job_key: str,
        reservation: Reservation | None,
        claim: tuple[Decision, str, datetime] | None = None,
        breaches: Sequence[tuple[str, Reservation | None, tuple[Decision, str, datetime]]] = (),
        prune: Sequence[str] = (),
    ) -> str:
        """One transaction: the ledger write, the check that the job has not ended (its end writes the
        terminal status before it releases the reservation), and the decision claims."""
        put = {job_key: reservation} if reservation else {}
        put |= {key: replacement for key, replacement, _ in breaches if replacement is not None}
        dropped = [key for key, replacement, _ in breaches if replacement is None] + list(prune)
        ops: list[Put | Update | Check] = [
            _ledger_write(self._ledger, version, put, dropped),
            Check((job_pk(job_key), META), not_in("status", TUNING_TERMINAL)),
        ]
        claims = ([claim] if claim is not None else []) + [c for _, _, c in breaches]
        ops.extend(Put(decision_claim(*c), missing("pk")) for c in claims)
        try:
            failed = self._items.transact(ops)
        except WriteConflict:
            return "conflict"
        if not failed:
            return "committed"
        if 1 in failed:
            return "ended"
        if claim is not None and 0 not in failed and 2 in failed:
            return "decided"
        return "conflict"  # the ledger moved on, or a breacher's decision is claimed: judge again

    def update_reservations(self, version: int, put: dict[str, Reservation], remove: list[str]) -> bool:
        if not put and not remove:
            return True
        try:
            return self._items.write(_ledger_write(self._ledger, version, dict(put), list(remove))).done
        except WriteConflict:
            return False

    def release_reservation(self, job_key: str, ended: str) -> bool:
        """The version moves on, so a judgement made before the release is made again after it."""
        held = ("reservations", job_key)
        changes: list[Change] = [assign((*held, "ended"), ended), Change("add", ("version",), 1)]
        return self._update(self._ledger, changes, all_of(exists(held), missing((*held, "ended"))))


def _ledger_write(
    ledger: tuple[str, str], version: int, put: dict[str, Reservation], dropped: list[str]
) -> Put | Update:
    if version == 0:
        # No ledger yet: create it whole, on the condition that nobody else just did.
        return Put(new_ledger_item(put, ledger), missing("pk"))
    changes: list[Change] = [assign("version", version + 1)]
    changes += [assign(("reservations", key), reservation_item(r)) for key, r in sorted(put.items())]
    changes += [remove(("reservations", key)) for key in sorted(dropped)]
    return Update(ledger, changes, eq("version", version))


# -- the items: standalone training jobs, warm pools, the ledger ----------------------------------------------------
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
    jobs = [(f"STATUS#{status}", "tuning-job", "demand") for status in ("InProgress", "Stopping") if tuning_jobs]
    others = [("TRAINING#Active", "training-job", "instances"), ("WARMPOOL#Available", "warm-pool", "instances")]
    return [
        Holder(
            key=str(item["pk"]).removeprefix("JOB#") if kind == "tuning-job" else str(item["pk"]),
            kind=kind,
            team=item.get("team") or None,
            instances={k: int(v) for k, v in (item.get(counts) or {}).items()},
        )
        for partition, kind, counts in [*jobs, *others]
        for item in by_gsi(partition)
    ]


def reservation_item(reservation: Reservation) -> dict[str, Any]:
    """A reservation as the ledger item holds it (its fields but its key, counts as dicts); an ended one
    carries ``ended`` (its end in SageMaker's time) and stays in the same map until pruned."""
    values = {f.name: getattr(reservation, f.name) for f in fields(Reservation) if f.name not in {"job_key", "ended"}}
    item = {name: dict(value) if isinstance(value, Mapping) else value for name, value in values.items()}
    return item | ({"ended": reservation.ended} if reservation.ended else {})


def new_ledger_item(put: dict[str, Reservation], ledger: tuple[str, str] = LEDGER) -> dict[str, Any]:
    """The ledger item the first commit creates (version 1), at ``ledger`` (one per place)."""
    reservations = {k: reservation_item(r) for k, r in put.items()}
    return {"pk": ledger[0], "sk": ledger[1], "type": "capacity-ledger", "version": 1, "reservations": reservations}


def ledger_from_item(
    item: dict[str, Any] | None, read: Callable[[str, dict[str, Any]], Reservation] | None = None
) -> Ledger:
    """The ledger an item holds (version 0 and no reservations when there is none yet), its running
    reservations apart from the ended ones; each entry read by ``read`` (default ``reservation_from_item``)."""
    item, read = item or {}, read or reservation_from_item
    every = [read(str(key), value) for key, value in (item.get("reservations") or {}).items()]
    return Ledger(
        version=int(item.get("version") or 0),
        reservations={r.job_key: r for r in every if not r.ended},
        ended={r.job_key: r for r in every if r.ended},
    )


#: How a reservation's field is read back, by its type: counts as ints, an empty team as None.
_READ: dict[str, Callable[[Any], Any]] = {
    "str": lambda raw: str(raw or ""),
    "str | None": lambda raw: str(raw) if raw else None,
    "int": lambda raw: int(raw or 0),
    "bool": bool,
    "Mapping[str, int]": lambda raw: {str(k): int(v) for k, v in (raw or {}).items()},
}


def reservation_from_item(job_key: str, value: dict[str, Any]) -> Reservation:
    """A reservation from its ledger entry (``reservation_item``'s inverse; ``slots`` 1 when absent)."""
    reservation = Reservation(job_key, *[read(value.get(name)) for name, read in _READERS])
    return reservation if reservation.slots else replace(reservation, slots=1)


_READERS = [(f.name, _READ[str(f.type)]) for f in fields(Reservation)][1:]  # all but job_key, in order
_RESERVATIONS = Remembered(lambda value, key: reservation_from_item(key, value), slot=lambda _value, key: key)
