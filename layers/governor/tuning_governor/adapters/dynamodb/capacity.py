"""The capacity area of the DynamoDB adapter: training jobs, warm pools, holders, the ledger (``CapacityStore``)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Self

from botocore.exceptions import ClientError

from tuning_governor.adapters.dynamodb.capacity_items import (
    holders_from,
    ledger_from_item,
    new_ledger_item,
    reservation_item,
    training_job_attributes,
    warm_pool_item,
    warm_pool_tracked,
)
from tuning_governor.adapters.dynamodb.items import decision_claim
from tuning_governor.adapters.dynamodb.keys import LEDGER_KEY, SWEPT_PK, job_pk
from tuning_governor.adapters.dynamodb.table import Table, marshal, unmarshal
from tuning_governor.domain.capacity import Holder, Ledger, Reservation
from tuning_governor.models.decisions import Decision
from tuning_governor.models.sagemaker import TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.ports import CapacityStore, SweepStore


class CapacityTable(Table):
    """The ``CapacityStore`` port on the table."""

    def upsert_training_job(self, job: TrainingJob, *, team: str | None, event_time: datetime) -> bool:
        """Track a standalone training job's instances while it runs. False when the event is stale."""
        attributes = training_job_attributes(job, team=team, event_time=event_time)
        terminal = [f":t{i}" for i in range(len(TRAINING_TERMINAL))]
        values: dict[str, Any] = {
            ":status": attributes["status"],
            ":lm": attributes["last_modified"],
            ":instances": attributes["instances"],
            ":gsi": attributes["gsi1pk"],
            ":name": attributes["job_name"],
            ":team": attributes["team"],
        } | dict(zip(terminal, sorted(TRAINING_TERMINAL), strict=True))
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": f"TRAINING#{job.name.lower()}", "sk": "META"}),
            UpdateExpression=(
                "SET #status = :status, #lm = :lm, instances = :instances, gsi1pk = :gsi, gsi1sk = :lm,"
                " job_name = :name, team = :team"
            ),
            ConditionExpression=(
                f"(attribute_not_exists(#status) OR NOT #status IN ({', '.join(terminal)}))"
                " AND (attribute_not_exists(#lm) OR #lm <= :lm)"
            ),
            ExpressionAttributeNames={"#status": "status", "#lm": "last_modified"},
            ExpressionAttributeValues=marshal(values),
        )

    def set_warm_pool(self, job: TrainingJob, *, team: str | None) -> None:
        """An Available warm pool holds its instances; any other warm-pool status releases them. A job
        that never asked for a pool (no KeepAlivePeriodInSeconds > 0) and shows no warm-pool status has
        no holder to release: nothing is written."""
        if not warm_pool_tracked(job):
            return
        item = warm_pool_item(job, team=team)
        if item is not None:
            self._client.put_item(TableName=self._table, Item=marshal(item))
        else:
            self._client.delete_item(
                TableName=self._table, Key=marshal({"pk": f"WARMPOOL#{job.name.lower()}", "sk": "META"})
            )

    def release_warm_pool(self, name: str) -> None:
        self._client.delete_item(TableName=self._table, Key=marshal({"pk": f"WARMPOOL#{name.lower()}", "sk": "META"}))

    def warm_pool_names(self) -> set[str]:
        return {str(item["job_name"]) for item in self._by_gsi("WARMPOOL#Available")}

    def holders(self, *, tuning_jobs: bool = True) -> list[Holder]:
        """Everything that holds training instances now (tuning jobs by their worst-case demand; the
        concurrency rule counts tuning jobs from the capacity ledger instead: ``tuning_jobs=False``)."""
        return holders_from(self._by_gsi, tuning_jobs=tuning_jobs)

    def put_capacity_snapshot(self, snapshot: dict[str, Any]) -> None:
        self._client.put_item(TableName=self._table, Item=marshal({"pk": "CAPACITY", "sk": "SNAPSHOT"} | snapshot))

    def mark_place_swept(self, place: str, at: datetime) -> None:
        item = {"pk": SWEPT_PK, "sk": place, "swept_at": at.isoformat()}
        self._client.put_item(TableName=self._table, Item=marshal(item))

    def places_swept(self) -> dict[str, datetime]:
        return {str(i["sk"]): datetime.fromisoformat(str(i["swept_at"])) for i in self._query(SWEPT_PK)}

    # -- capacity ledger ---------------------------------------------------------------------------
    # One item (pk CAPACITY, sk LEDGER) holds every admitted tuning job's reservation and a version.
    # Admission reads it, judges, and writes back on the condition that the version is still the one
    # it read (optimistic concurrency): simultaneous arrivals are serialized in ledger commit order.
    # A released reservation stays in the map, marked ``ended`` (its end in SageMaker's time), for
    # ENDED_RETENTION (70 minutes), then a later write prunes it. A reservation is at most ~400 bytes:
    # the 400 KB item holds about 1,000 running tuning jobs plus those ended in the last 70 minutes.
    _LEDGER_KEY: dict[str, str] = LEDGER_KEY

    def ledger_at(self, pk: str) -> Self:
        """This table with the capacity ledger of partition ``pk`` (one per place: ``models.place.ledger_pk``)."""
        view = copy.copy(self)
        view._LEDGER_KEY = {"pk": pk, "sk": "LEDGER"}
        return view

    def read_ledger(self) -> Ledger:
        """The ledger as last committed (version 0 and no reservations before the first admission)."""
        response = self._client.get_item(TableName=self._table, Key=marshal(self._LEDGER_KEY), ConsistentRead=True)
        return ledger_from_item(unmarshal(response["Item"]) if response.get("Item") else None)

    def commit_admission(
        self,
        version: int,
        job_key: str,
        reservation: Reservation | None,
        claim: tuple[Decision, str, datetime] | None = None,
        breaches: Sequence[tuple[str, Reservation | None, tuple[Decision, str, datetime]]] = (),
        prune: Sequence[str] = (),
    ) -> str:
        """Commit one arrival's judgement against ledger ``version``, atomically with its decision claim
        and those of the later-created jobs it displaces (``breaches``).

        Returns "committed", "conflict" (the ledger moved on since it was read, or a breacher's claim
        exists: judge again), "decided" (the decision was claimed already, by a retry racing this one),
        or "ended" (the job's item has a terminal status). The ledger's version moves on even when
        nothing is reserved, so every judgement takes a place in the commit order.

        The job's status is checked in the same transaction: its end writes the terminal status (with
        its summary) before it releases the reservation, so either the commit comes first and the
        release finds the reservation, or the end comes first and nothing is reserved.
        """
        put = {job_key: reservation} if reservation else {}
        put |= {key: replacement for key, replacement, _ in breaches if replacement is not None}
        remove = [key for key, replacement, _ in breaches if replacement is None] + list(prune)
        items: list[Any] = [self._ledger_write(version, put, remove), self._still_running(job_key)]
        claims = ([claim] if claim is not None else []) + [c for _, _, c in breaches]
        items.extend(self._claim_put(*c) for c in claims)
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons", [])
            codes = [r.get("Code") for r in reasons]
            if codes[1:2] == ["ConditionalCheckFailed"]:
                return "ended"
            if codes[:1] == ["ConditionalCheckFailed"] or "TransactionConflict" in codes:
                return "conflict"
            if claim is not None and codes[2:3] == ["ConditionalCheckFailed"]:
                return "decided"
            if "ConditionalCheckFailed" in codes[2:]:
                return "conflict"  # a breacher's decision is claimed: the next pass reads it
            if exc.response.get("Error", {}).get("Code") == "TransactionConflictException":
                return "conflict"
            raise self._translate(exc) from exc
        return "committed"

    def _claim_put(self, decision: Decision, mode: str, now: datetime) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self._table,
                "Item": marshal(decision_claim(decision, mode, now)),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def _still_running(self, job_key: str) -> dict[str, Any]:
        """A transaction's check that the tuning job has not ended (no item yet counts as running)."""
        terminal = {f":t{i}": status for i, status in enumerate(sorted(TUNING_TERMINAL))}
        return {
            "ConditionCheck": {
                "TableName": self._table,
                "Key": marshal({"pk": job_pk(job_key), "sk": "META"}),
                "ConditionExpression": f"attribute_not_exists(#status) OR NOT #status IN ({', '.join(terminal)})",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": marshal(terminal),
            }
        }

    def update_reservations(self, version: int, put: dict[str, Reservation], remove: list[str]) -> bool:
        """Reconcile: set and remove reservations in one write, if the ledger is still at ``version``."""
        if not put and not remove:
            return True
        items: list[Any] = [self._ledger_write(version, dict(put), list(remove))]
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            codes = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if "ConditionalCheckFailed" in codes or "TransactionConflict" in codes:
                return False
            raise self._translate(exc) from exc
        return True

    def release_reservation(self, job_key: str, ended: str) -> bool:
        """Give a finished job's instances back: its reservation is marked ended at ``ended`` (SageMaker's
        time) and kept until pruned. False when it held none (never admitted, or released).

        The version moves on, so a judgement made before the release is made again after it.
        """
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal(self._LEDGER_KEY),
            UpdateExpression="SET reservations.#job.ended = :ended, version = version + :one",
            ConditionExpression="attribute_exists(reservations.#job) AND attribute_not_exists(reservations.#job.ended)",
            ExpressionAttributeNames={"#job": job_key},
            ExpressionAttributeValues=marshal({":one": 1, ":ended": ended}),
        )

    def _ledger_write(self, version: int, put: dict[str, Reservation], remove: list[str]) -> dict[str, Any]:
        if version == 0:
            # No ledger yet: create it whole, on the condition that nobody else just did.
            return {
                "Put": {
                    "TableName": self._table,
                    "Item": marshal(new_ledger_item(put, self._LEDGER_KEY)),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        names: dict[str, str] = {}
        values: dict[str, Any] = {":v": version, ":next": version + 1}
        sets = ["version = :next"]
        for i, (key, reservation) in enumerate(sorted(put.items())):
            names[f"#p{i}"] = key
            values[f":p{i}"] = reservation_item(reservation)
            sets.append(f"reservations.#p{i} = :p{i}")
        removes = []
        for i, key in enumerate(sorted(remove)):
            names[f"#r{i}"] = key
            removes.append(f"reservations.#r{i}")
        update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": marshal(self._LEDGER_KEY),
            "UpdateExpression": update,
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": marshal(values),
        }
        if names:
            request["ExpressionAttributeNames"] = names
        return {"Update": request}


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[CapacityStore] = CapacityTable
_SWEEP_PORT: type[SweepStore] = CapacityTable
