"""The capacity area: training jobs, warm pools, holders, the admission ledger (``CapacityStore``).

The ledger (``CAPACITY`` / ``LEDGER``) holds every admitted job's reservation and a version; admission
writes back on the condition that the version is the one it read, so arrivals are serialized in commit
order. A released reservation stays marked ``ended`` for ENDED_RETENTION (70 minutes), then is pruned.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tuning_governor.adapters.store.area import META, Area
from tuning_governor.adapters.store.capacity_items import (
    holders_from,
    ledger_from_item,
    new_ledger_item,
    reservation_item,
    training_job_attributes,
    warm_pool_item,
    warm_pool_tracked,
)
from tuning_governor.adapters.store.conditions import all_of, eq, exists, fresh, missing, not_in
from tuning_governor.adapters.store.items import decision_claim
from tuning_governor.adapters.store.keys import LEDGER_KEY, job_pk
from tuning_governor.adapters.store.port import Change, Check, Delete, Put, Update, WriteConflict, assign, remove, sets
from tuning_governor.domain.capacity import Holder, Ledger, Reservation
from tuning_governor.models.decisions import Decision
from tuning_governor.models.sagemaker import TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob

LEDGER = (LEDGER_KEY["pk"], LEDGER_KEY["sk"])


class Capacity(Area):
    """The ``CapacityStore`` port over the item table."""

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

    def read_ledger(self) -> Ledger:
        return ledger_from_item(self._items.get(LEDGER))

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
            _ledger_write(version, put, dropped),
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
            return self._items.write(_ledger_write(version, dict(put), list(remove))).done
        except WriteConflict:
            return False

    def release_reservation(self, job_key: str, ended: str) -> bool:
        """The version moves on, so a judgement made before the release is made again after it."""
        held = ("reservations", job_key)
        changes: list[Change] = [assign((*held, "ended"), ended), Change("add", ("version",), 1)]
        return self._update(LEDGER, changes, all_of(exists(held), missing((*held, "ended"))))


def _ledger_write(version: int, put: dict[str, Reservation], dropped: list[str]) -> Put | Update:
    if version == 0:
        # No ledger yet: create it whole, on the condition that nobody else just did.
        return Put(new_ledger_item(put), missing("pk"))
    changes: list[Change] = [assign("version", version + 1)]
    changes += [assign(("reservations", key), reservation_item(r)) for key, r in sorted(put.items())]
    changes += [remove(("reservations", key)) for key in sorted(dropped)]
    return Update(LEDGER, changes, eq("version", version))
