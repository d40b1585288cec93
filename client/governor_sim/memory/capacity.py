"""The capacity area of ``MemoryStore``: training jobs, warm pools, holders, the ledger (``CapacityStore``)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Self

from governor_sim.memory.table import Item, MemoryTable, fresh, stored
from tuning_governor.adapters.dynamodb import capacity_items
from tuning_governor.adapters.dynamodb.items import decision_claim
from tuning_governor.adapters.dynamodb.keys import LEDGER_KEY, SWEPT_PK, job_pk
from tuning_governor.domain.capacity import Holder, Ledger, Reservation
from tuning_governor.models.decisions import Decision
from tuning_governor.models.sagemaker import TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.ports import CapacityStore, SweepStore


class CapacityItems(MemoryTable):
    """The ``CapacityStore`` port in memory."""

    _ledger_key: dict[str, str] = LEDGER_KEY

    def ledger_at(self, pk: str) -> Self:
        """This table with the capacity ledger of partition ``pk`` (one per place: ``models.place.ledger_pk``)."""
        view = copy.copy(self)
        view._ledger_key = {"pk": pk, "sk": "LEDGER"}
        return view

    def upsert_training_job(self, job: TrainingJob, *, team: str | None, event_time: datetime) -> bool:
        attributes = capacity_items.training_job_attributes(job, team=team, event_time=event_time)
        pk = f"TRAINING#{job.name.lower()}"
        with self._lock:
            if not fresh(self._get(pk, "META") or {}, attributes["last_modified"], TRAINING_TERMINAL):
                return False
            self._set(pk, "META", attributes)
            return True

    def set_warm_pool(self, job: TrainingJob, *, team: str | None) -> None:
        if not capacity_items.warm_pool_tracked(job):
            return
        item = capacity_items.warm_pool_item(job, team=team)
        with self._lock:
            if item is not None:
                self._put(item)
            else:
                self._delete(f"WARMPOOL#{job.name.lower()}", "META")

    def release_warm_pool(self, name: str) -> None:
        with self._lock:
            self._delete(f"WARMPOOL#{name.lower()}", "META")

    def warm_pool_names(self) -> set[str]:
        return {str(item["job_name"]) for item in self._by_gsi("WARMPOOL#Available")}

    def holders(self, *, tuning_jobs: bool = True) -> list[Holder]:
        return capacity_items.holders_from(self._by_gsi, tuning_jobs=tuning_jobs)

    def put_capacity_snapshot(self, snapshot: dict[str, Any]) -> None:
        with self._lock:
            self._put({"pk": "CAPACITY", "sk": "SNAPSHOT"} | snapshot)

    def mark_place_swept(self, place: str, at: datetime) -> None:
        with self._lock:
            self._put({"pk": SWEPT_PK, "sk": place, "swept_at": at.isoformat()})

    def places_swept(self) -> dict[str, datetime]:
        return {str(i["sk"]): datetime.fromisoformat(str(i["swept_at"])) for i in self._query(SWEPT_PK)}

    def read_ledger(self) -> Ledger:
        return capacity_items.ledger_from_item(self._read(self._ledger_key["pk"], self._ledger_key["sk"]))

    def _ledger_holds(self, version: int) -> bool:
        """The condition of a ledger write: at ``version`` (0: no ledger yet)."""
        ledger = self._get(self._ledger_key["pk"], self._ledger_key["sk"])
        if version == 0:
            return ledger is None
        return ledger is not None and ledger.get("version") == version

    def _write_ledger(self, version: int, put: dict[str, Reservation], remove: list[str]) -> None:
        if version == 0:
            self._put(capacity_items.new_ledger_item(put, self._ledger_key))
            return
        values = {key: stored(capacity_items.reservation_item(reservation)) for key, reservation in put.items()}

        def change(item: Item) -> None:
            item["version"] = stored(version + 1)
            reservations = item["reservations"]
            reservations.update(values)
            for key in remove:
                reservations.pop(key, None)

        self._update(self._ledger_key["pk"], self._ledger_key["sk"], change)

    def commit_admission(
        self,
        version: int,
        job_key: str,
        reservation: Reservation | None,
        claim: tuple[Decision, str, datetime] | None = None,
        breaches: Sequence[tuple[str, Reservation | None, tuple[Decision, str, datetime]]] = (),
        prune: Sequence[str] = (),
    ) -> str:
        with self._lock:
            # As the DynamoDB adapter: the job's status is checked in the same write as the ledger.
            if (self._get(job_pk(job_key), "META") or {}).get("status") in TUNING_TERMINAL:
                return "ended"
            if not self._ledger_holds(version):
                return "conflict"
            item = decision_claim(*claim) if claim is not None else None
            if item is not None and self._get(item["pk"], item["sk"]) is not None:
                return "decided"
            claims = [decision_claim(*c) for _, _, c in breaches]
            if any(self._get(c["pk"], c["sk"]) is not None for c in claims):
                return "conflict"
            put = {job_key: reservation} if reservation else {}
            put |= {key: replacement for key, replacement, _ in breaches if replacement is not None}
            remove = [key for key, replacement, _ in breaches if replacement is None] + list(prune)
            self._write_ledger(version, put, remove)
            for written in [item, *claims]:
                if written is not None:
                    self._put(written)
            return "committed"

    def update_reservations(self, version: int, put: dict[str, Reservation], remove: list[str]) -> bool:
        if not put and not remove:
            return True
        with self._lock:
            if not self._ledger_holds(version):
                return False
            self._write_ledger(version, dict(put), list(remove))
            return True

    def release_reservation(self, job_key: str, ended: str) -> bool:
        with self._lock:
            ledger = self._get(self._ledger_key["pk"], self._ledger_key["sk"])
            reservations = (ledger or {}).get("reservations")
            if ledger is None or not isinstance(reservations, dict) or job_key not in reservations:
                return False
            if "ended" in reservations[job_key]:
                return False

            def change(item: Item) -> None:
                item["reservations"][job_key]["ended"] = stored(ended)
                item["version"] = item["version"] + 1

            self._update(self._ledger_key["pk"], self._ledger_key["sk"], change)
            return True


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[CapacityStore] = CapacityItems
_SWEEP_PORT: type[SweepStore] = CapacityItems
