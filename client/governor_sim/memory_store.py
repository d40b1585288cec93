"""The governor's table in memory: the ``Store`` port for replays, the simulator and the demo.

:class:`MemoryStore` keeps the items the DynamoDB adapter (``tuning_governor.adapters.store``) would
write, with the same keys, the same shapes and the same types (the builders are shared:
``tuning_governor.adapters.table_items``; values are normalised as a DynamoDB round trip normalises
them: numbers ``Decimal``, datetimes ISO strings), and it implements each method with that method's
semantics rather than by interpreting DynamoDB expressions:

* conditional writes are first-writer-wins, with the same outcomes (False, ``StaleState``,
  ``"conflict"`` / ``"decided"``);
* a method that writes several items (a DynamoDB transaction) checks every condition first and then
  writes all of them, so it writes all or nothing;
* one lock serialises the methods (each is one request, or one transaction, in DynamoDB), so
  handlers may race in threads; nothing copies the whole table: a read copies the items it returns,
  a write touches the items it names, and the ``gsi1`` index is kept up to date as items change.

tests/contract runs one suite against this and the DynamoDB adapter on moto; it fails if they differ.
Nothing in the Lambda layer imports this module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import DYNAMODB_CONTEXT
from pydantic import ValidationError

from tuning_governor.adapters.table_items import (
    CLAIM_TIMEOUT,
    LEDGER_KEY,
    MIN_TRIAL_RETENTION_DAYS,
    PENDING_STEPS,
    decision_claim,
    decision_sk,
    delivery_claim,
    delivery_sent,
    delivery_sk,
    gaps_item,
    iso,
    job_after_trial,
    job_attributes,
    job_modified,
    job_pk,
    ledger_from_item,
    month_totals,
    new_ledger_item,
    plain,
    price_catalog_item,
    reservation_item,
    summary_item,
    summary_job_attributes,
    team_decision_claim,
    team_decision_sk,
    team_month_deltas,
    team_pk,
    training_job_attributes,
    trial_deltas,
    trial_item,
    trial_sk,
    warm_pool_item,
    warm_pool_tracked,
)
from tuning_governor.domain.pricing import RegionCatalog
from tuning_governor.errors import StaleState
from tuning_governor.governance.capacity import Holder, Ledger, Reservation
from tuning_governor.governance.rules import Decision
from tuning_governor.governance.spend import RUNNING_PREFIX, RunningTrial, running_trials
from tuning_governor.models.records import JobSummary, TrialRecord
from tuning_governor.models.sagemaker import TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TuningJob

Item = dict[str, Any]
Key = tuple[str, str]


class TransactionCanceled(Exception):
    """A transaction whose later condition failed (DynamoDB's TransactionCanceledException): nothing written."""


def stored(value: Any) -> Any:
    """``value`` as DynamoDB gives it back: floats and ints ``Decimal`` (38 digits, as boto3 serialises
    them), datetimes ISO strings, tuples lists, sets sets; a new container at every level."""
    return _dynamo(plain(value))


def _dynamo(value: Any) -> Any:
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int | Decimal):
        return DYNAMODB_CONTEXT.create_decimal(value)
    if isinstance(value, dict):
        return {str(k): _dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dynamo(v) for v in value]
    if isinstance(value, set | frozenset):
        if not value:
            raise ValueError("DynamoDB stores no empty sets")
        return {_dynamo(v) for v in value}
    raise TypeError(f"unsupported type for the store: {type(value).__name__}")


_CONTAINERS = (dict, list, set)


def _copy(value: Any) -> Any:
    """A copy of a stored value the caller may change (leaves are immutable). Stored values are built by
    :func:`stored`, so containers are exactly dict, list and set; leaves are returned without a call
    (most of an item is leaves: this copy is on every read)."""
    kind = type(value)
    if kind is dict:
        return {k: _copy(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    if kind is list:
        return [_copy(v) if type(v) in _CONTAINERS else v for v in value]
    if kind is set:
        return set(value)
    return value


def _add(item: Item, name: str, value: Any) -> None:
    """DynamoDB's ADD: numbers are summed (from 0), sets joined."""
    if isinstance(value, set):
        item[name] = set(item.get(name) or set()) | value
    else:
        item[name] = item.get(name, Decimal(0)) + value


class MemoryStore:
    """The ``Store`` port in memory; see the module docstring for what it keeps identical."""

    def __init__(self, *, trial_retention_days: int = 0) -> None:
        """``trial_retention_days`` as ``GovernorStore``'s (0: trial rows keep no expiry)."""
        if trial_retention_days != 0 and trial_retention_days < MIN_TRIAL_RETENTION_DAYS:
            raise ValueError(
                f"trial retention must be 0 (keep) or at least {MIN_TRIAL_RETENTION_DAYS} days, got {trial_retention_days}"
            )
        self._trial_retention = timedelta(days=trial_retention_days) if trial_retention_days else None
        self._lock = threading.RLock()
        # pk -> sk -> item, in insertion order (as moto keeps them).
        self._partitions: dict[str, dict[str, Item]] = {}
        # gsi1pk -> {(pk, sk): gsi1sk}: the items the sparse index lists.
        self._gsi: dict[str, dict[Key, str]] = {}

    # -- the table ------------------------------------------------------------------------------------
    def _get(self, pk: str, sk: str) -> Item | None:
        return self._partitions.get(pk, {}).get(sk)

    def _read(self, pk: str, sk: str) -> Item | None:
        with self._lock:
            item = self._get(pk, sk)
            return _copy(item) if item is not None else None

    def _unindex(self, item: Item) -> None:
        entry = _gsi_entry(item)
        if entry is not None:
            self._gsi.get(entry[0], {}).pop((item["pk"], item["sk"]), None)

    def _index(self, item: Item) -> None:
        entry = _gsi_entry(item)
        if entry is not None:
            self._gsi.setdefault(entry[0], {})[(item["pk"], item["sk"])] = entry[1]

    def _put(self, values: Item) -> None:
        item = stored(values)
        old = self._get(item["pk"], item["sk"])
        if old is not None:
            self._unindex(old)
        self._partitions.setdefault(item["pk"], {})[item["sk"]] = item
        self._index(item)

    def _delete(self, pk: str, sk: str) -> None:
        old = self._partitions.get(pk, {}).pop(sk, None)
        if old is not None:
            self._unindex(old)

    def _update(self, pk: str, sk: str, change: Callable[[Item], None]) -> None:
        """UpdateItem: change the item in place (created with its key when missing), index kept."""
        partition = self._partitions.setdefault(pk, {})
        item = partition.get(sk)
        if item is None:
            item = partition[sk] = {"pk": pk, "sk": sk}
        else:
            self._unindex(item)
        change(item)
        self._index(item)

    def _set(self, pk: str, sk: str, values: dict[str, Any]) -> None:
        self._update(pk, sk, lambda item: item.update(stored(values)))

    def _query(self, pk: str, prefix: str = "") -> list[Item]:
        with self._lock:
            partition = self._partitions.get(pk, {})
            return [_copy(partition[sk]) for sk in sorted(partition) if sk.startswith(prefix)]

    def _by_gsi(self, partition: str, below: str | None = None) -> list[Item]:
        """Items of a gsi1 partition as DynamoDB's Query orders them (gsi1sk, then the table key)."""
        with self._lock:
            entries = self._gsi.get(partition, {})
            keys = sorted((gsi1sk, pk, sk) for (pk, sk), gsi1sk in entries.items() if below is None or gsi1sk < below)
            return [_copy(self._partitions[pk][sk]) for _, pk, sk in keys]

    def scan(self) -> Iterator[Item]:
        """Every item (copies), by key: for dumps and tests, as a Scan of the table."""
        with self._lock:
            items = [_copy(item) for partition in self._partitions.values() for item in partition.values()]
        yield from sorted(items, key=lambda item: (item["pk"], item["sk"]))

    # -- tuning jobs ----------------------------------------------------------------------------------
    def upsert_job(
        self, job: TuningJob, *, region: str, team: str | None, owner: str | None, event_time: datetime
    ) -> bool:
        modified = job_modified(job, event_time)
        attributes = job_attributes(job, region=region, team=team, owner=owner, event_time=event_time)
        with self._lock:
            meta = self._get(job_pk(job.key), "META") or {}
            if not _fresh(meta, modified, TUNING_TERMINAL):
                return False

            def change(item: Item) -> None:
                item.update(stored(attributes))
                if job.status == "Stopping":
                    item.setdefault("stopping_at", modified)

            self._update(job_pk(job.key), "META", change)
            return True

    def get_job(self, job_key: str) -> dict[str, Any] | None:
        return self._read(job_pk(job_key), "META")

    def jobs_with_status(self, status: str) -> list[dict[str, Any]]:
        return self._by_gsi(f"STATUS#{status}")

    # -- trials ---------------------------------------------------------------------------------------
    def record_trial(
        self,
        record: TrialRecord,
        *,
        job: dict[str, Any] | None,
        team: str | None = None,
        stagnation: dict[str, Any] | None = None,
        latest_end: datetime | None = None,
    ) -> dict[str, Any] | None:
        pk, trial = job_pk(record.job_key), record.training_job_name.lower()
        sets: dict[str, Any] = {}
        if latest_end is not None:
            sets["last_trial_end"] = iso(latest_end)
        if stagnation is not None:
            sets["stagnation"] = stagnation
        with self._lock:
            if self._get(pk, trial_sk(record.training_job_name)) is not None:
                return None
            meta = self._get(pk, "META")
            if meta is None or "running" not in meta:
                if job is not None and "running" in job:
                    # As the DynamoDB adapter: the caller read a map that is gone, so the item changed.
                    raise StaleState("the job item changed since it was read")
                # As the DynamoDB adapter: the running map is created, then the transaction runs again.
                self._ensure_running(record.job_key)
                meta = self._get(pk, "META") or {}
            if not _job_unchanged(meta, job, checks_stagnation=stagnation is not None):
                raise StaleState("the job item changed since it was read")
            self._put(trial_item(record, self._trial_retention))
            deltas, values = stored(trial_deltas(record)), stored(sets)

            def change(item: Item) -> None:
                for name, value in deltas.items():
                    _add(item, name, value)
                item.update(_copy(values))
                item["running"].pop(trial, None)

            self._update(pk, "META", change)
            if team:
                self._team_trial_write(team, record)
        after: dict[str, Any] = job_after_trial(job, record) | stored(sets)
        return after

    def _team_trial_write(self, team: str, record: TrialRecord) -> None:
        running = f"{RUNNING_PREFIX}{record.job_key}#{record.training_job_name.lower()}"
        deltas = stored(team_month_deltas(record))

        def change(item: Item) -> None:
            item["team"] = team
            item.pop(running, None)
            for name, value in deltas.items():
                _add(item, name, value)

        self._update(team_pk(team), "RUNNING", change)

    def _ensure_running(self, job_key: str) -> None:
        self._update(job_pk(job_key), "META", lambda item: item.setdefault("running", {}))

    def update_trial_warm_pool(self, record: TrialRecord) -> bool:
        pk, sk = job_pk(record.job_key), trial_sk(record.training_job_name)
        with self._lock:
            item = self._get(pk, sk)
            if item is None:
                return False
            old = TrialRecord.model_validate(_copy(item))
            if record.warm_pool_seconds <= old.warm_pool_seconds:
                return False
            sets: dict[str, Any] = {
                "warm_pool_seconds": record.warm_pool_seconds,
                "warm_pool_instance_seconds": record.warm_pool_instance_seconds,
            }
            adds: dict[str, Any] = {
                "warm_pool_instance_seconds": record.warm_pool_instance_seconds - old.warm_pool_instance_seconds
            }
            if record.warm_pool_cost_usd is not None and old.cost_usd is not None:
                sets["warm_pool_cost_usd"] = record.warm_pool_cost_usd
                adds["cost_usd"] = record.warm_pool_cost_usd - (old.warm_pool_cost_usd or Decimal(0))
            self._set(pk, sk, sets)
            added = stored(adds)

            def change(meta: Item) -> None:
                for name, value in added.items():
                    _add(meta, name, value)

            self._update(pk, "META", change)
            return True

    def trial_records(self, job_key: str) -> list[TrialRecord]:
        return [TrialRecord.model_validate(item) for item in self._query(job_pk(job_key), "TRIAL#")]

    def track_running(self, trial: RunningTrial, *, team: str | None) -> bool:
        pk = job_pk(trial.job_key)
        entry = stored(trial.to_item())
        with self._lock:
            if self._get(pk, f"TRIAL#{trial.trial}") is not None:
                return False
            self._ensure_running(trial.job_key)
            self._update(pk, "META", lambda item: item["running"].__setitem__(trial.trial, entry))
            if team:
                name = f"{RUNNING_PREFIX}{trial.job_key}#{trial.trial}"
                self._set(team_pk(team), "RUNNING", {name: trial.to_item(), "team": team})
            return True

    def forget_running(self, job_key: str, trials: list[str], *, team: str | None) -> None:
        with self._lock:
            if not trials:
                return
            meta = self._get(job_pk(job_key), "META")
            if meta is None or not isinstance(meta.get("running"), dict):
                # DynamoDB refuses a REMOVE of a path below a map that does not exist, and writes nothing.
                raise ValueError("The document path provided in the update expression is invalid for update")

            def drop(item: Item) -> None:
                for name in trials:
                    item["running"].pop(name, None)

            self._update(job_pk(job_key), "META", drop)
            if team:
                names = [f"{RUNNING_PREFIX}{job_key}#{name}" for name in trials]

                def leave(item: Item) -> None:
                    for name in names:
                        item.pop(name, None)

                self._update(team_pk(team), "RUNNING", leave)

    def team_running(self, team: str) -> list[RunningTrial]:
        return running_trials(self._read(team_pk(team), "RUNNING"))

    def team_month(self, team: str, month: str) -> dict[str, Any]:
        return month_totals(self._read(team_pk(team), "RUNNING") or {}, month)

    def team_spend(self, team: str, month: str) -> tuple[dict[str, Any], list[RunningTrial]]:
        item = self._read(team_pk(team), "RUNNING") or {}
        return month_totals(item, month), running_trials(item)

    def team_jobs_in_progress(self, team: str) -> list[dict[str, Any]]:
        return [item for item in self._by_gsi("STATUS#InProgress") if item.get("team") == team]

    # -- summaries ------------------------------------------------------------------------------------
    def write_summary(self, summary: JobSummary) -> None:
        with self._lock:
            self._put(summary_item(summary))
            self._set(job_pk(summary.job_key), "META", summary_job_attributes(summary))

    def get_summary(self, job_key: str) -> JobSummary | None:
        item = self._read(job_pk(job_key), "SUMMARY")
        return JobSummary.model_validate(item) if item else None

    def mark_gaps(self, job_key: str, *, job_name: str, region: str, ended_at: datetime, missing: list[str]) -> None:
        with self._lock:
            self._put(gaps_item(job_key, job_name=job_name, region=region, ended_at=ended_at, missing=missing))

    def jobs_with_gaps(self) -> list[dict[str, Any]]:
        return sorted(self._by_gsi("GAPS"), key=lambda item: str(item.get("gsi1sk", "")))

    def clear_gaps(self, job_key: str) -> None:
        with self._lock:
            self._delete(job_pk(job_key), "GAPS")

    def set_summary_reported(self, job_key: str, cost_usd: Decimal, at: datetime) -> bool:
        with self._lock:
            if "summary_reported_at" in (self._get(job_pk(job_key), "META") or {}):
                return False
            self._set(job_pk(job_key), "META", {"summary_reported_usd": cost_usd, "summary_reported_at": at})
            return True

    # -- report deliveries ----------------------------------------------------------------------------
    def claim_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, token: str | None = None) -> bool:
        with self._lock:
            old = self._get(job_pk(job_key), delivery_sk(kind, channel))
            if old is not None:
                sending = old.get("state") == "sending"
                claimed_at = old.get("claimed_at")
                abandoned = sending and isinstance(claimed_at, str) and claimed_at < iso(now - CLAIM_TIMEOUT)
                own = sending and bool(token) and old.get("claim_token") == token
                if not (abandoned or own):
                    return False
            self._put(delivery_claim(job_key, kind, channel, now, token))
            return True

    def finish_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, sent: bool) -> None:
        with self._lock:
            if sent:
                self._put(delivery_sent(job_key, kind, channel, now))
            else:
                self._delete(job_pk(job_key), delivery_sk(kind, channel))

    def delivery_sent(self, job_key: str, kind: str, channel: str) -> bool:
        return (self._read(job_pk(job_key), delivery_sk(kind, channel)) or {}).get("state") == "sent"

    def items(self, job_key: str) -> list[dict[str, Any]]:
        return self._query(job_pk(job_key))

    def forget_job(self, job_key: str) -> None:
        """Drop every item of the job's partition. Not part of the ``Store`` port (the deployed governor
        keeps a job's items until their expiry): a replay drops a job no later event or sweep can
        change (``governor_sim.replay_forget``), so that its memory does not grow with the log."""
        with self._lock:
            for item in self._partitions.pop(job_pk(job_key), {}).values():
                self._unindex(item)

    # -- governance -----------------------------------------------------------------------------------
    def mark_arrival(self, job_key: str, at: datetime) -> bool:
        return self._set_once(job_pk(job_key), "META", "arrival_evaluated_at", at)

    def mark_stop_requested(self, job_key: str, at: datetime) -> bool:
        return self._set_once(job_pk(job_key), "META", "stop_requested_at", at)

    def _set_once(self, pk: str, sk: str, attribute: str, at: datetime) -> bool:
        with self._lock:
            if attribute in (self._get(pk, sk) or {}):
                return False
            self._set(pk, sk, {attribute: at})
            return True

    def set_stagnation_spend(self, job_key: str, trials_seen: int, spent_usd: Decimal) -> bool:
        with self._lock:
            meta = self._get(job_pk(job_key), "META")
            if meta is None or not _stagnation_holds(meta, trials_seen, absent_ok=False):
                return False
            spent = stored(spent_usd)
            self._update(
                job_pk(job_key), "META", lambda item: item["stagnation"].__setitem__("spent_at_improvement", spent)
            )
            return True

    def set_budget_check(self, job_key: str, at: datetime) -> bool:
        with self._lock:
            if self._get(job_pk(job_key), "META") is None:
                return False
            self._set(job_pk(job_key), "META", {"budget_check_at": at})
            return True

    def open_decision(
        self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True
    ) -> dict[str, Any] | None:
        item = decision_claim(decision, mode, now, own_report=own_report)
        with self._lock:
            old = self._get(item["pk"], item["sk"])
            if old is not None:
                return _copy(old) if old.get("state") == "pending" else None
            self._put(item)
            return self._read(item["pk"], item["sk"])

    def claim_decision(self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True) -> bool:
        stored_row = self.open_decision(decision, mode, now, own_report=own_report)
        return stored_row is not None and stored_row.get("action") is None

    def record_decision_action(
        self, decision: Decision, action: str, detail: str, *, stop_requested_at: datetime | None = None
    ) -> None:
        pk, sk = job_pk(decision.job_key), decision_sk(decision.rule, decision.verdict)
        with self._lock:
            if self._get(pk, sk) is None:
                raise StaleState(f"decision {decision.rule}#{decision.verdict} of {decision.job_key} is not claimed")
            if stop_requested_at is not None and self._get(pk, "META") is None:
                raise TransactionCanceled(f"the job item of {decision.job_key} does not exist")
            self._set(pk, sk, {"action": action, "action_detail": detail})
            if stop_requested_at is not None:
                at = stored(stop_requested_at)
                self._update(pk, "META", lambda item: item.setdefault("stop_requested_at", at))

    def finish_decision(self, decision: Decision, action: str, detail: str) -> None:
        pk, sk = job_pk(decision.job_key), decision_sk(decision.rule, decision.verdict)
        values = stored({"state": "done", "action": action, "action_detail": detail})

        def change(item: Item) -> None:
            item.update(values)
            item.pop("gsi1pk", None)
            item.pop("gsi1sk", None)

        with self._lock:
            self._update(pk, sk, change)

    def get_decision(self, job_key: str, rule: str, verdict: str) -> dict[str, Any] | None:
        return self._read(job_pk(job_key), decision_sk(rule, verdict))

    def decisions(self, job_key: str) -> list[dict[str, Any]]:
        return self._query(job_pk(job_key), "DECISION#")

    def pending_decisions(self, job_key: str) -> list[dict[str, Any]]:
        return [item for item in self.decisions(job_key) if item.get("state") == "pending"]

    def stale_pending_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]:
        return self._by_gsi(PENDING_STEPS, below=iso(claimed_before))

    def claim_team_decision(self, decision: Decision, month: str, mode: str, now: datetime) -> bool:
        item = team_decision_claim(decision, month, mode, now)
        with self._lock:
            old = self._get(item["pk"], item["sk"])
            if old is not None and old.get("state") != "pending":
                return False
            self._put(item)
            return True

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None:
        with self._lock:
            self._set(
                team_pk(decision.team or ""),
                team_decision_sk(decision.rule, decision.verdict, month),
                {"state": "done", "jobs": jobs},
            )

    def team_decisions(self, team: str) -> list[dict[str, Any]]:
        return self._query(team_pk(team), "DECISION#")

    # -- standalone training jobs, warm pools, capacity ------------------------------------------------
    def upsert_training_job(self, job: TrainingJob, *, team: str | None, event_time: datetime) -> bool:
        attributes = training_job_attributes(job, team=team, event_time=event_time)
        pk = f"TRAINING#{job.name.lower()}"
        with self._lock:
            if not _fresh(self._get(pk, "META") or {}, attributes["last_modified"], TRAINING_TERMINAL):
                return False
            self._set(pk, "META", attributes)
            return True

    def set_warm_pool(self, job: TrainingJob, *, team: str | None) -> None:
        if not warm_pool_tracked(job):
            return
        item = warm_pool_item(job, team=team)
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
        holders: list[Holder] = []
        for status in ("InProgress", "Stopping") if tuning_jobs else ():
            for item in self._by_gsi(f"STATUS#{status}"):
                holders.append(
                    Holder(
                        key=str(item["pk"]).removeprefix("JOB#"),
                        kind="tuning-job",
                        team=item.get("team") or None,
                        instances={k: int(v) for k, v in (item.get("demand") or {}).items()},
                    )
                )
        for kind, partition in (("training-job", "TRAINING#Active"), ("warm-pool", "WARMPOOL#Available")):
            for item in self._by_gsi(partition):
                holders.append(
                    Holder(
                        key=str(item["pk"]),
                        kind=kind,
                        team=item.get("team") or None,
                        instances={k: int(v) for k, v in (item.get("instances") or {}).items()},
                    )
                )
        return holders

    def put_capacity_snapshot(self, snapshot: dict[str, Any]) -> None:
        with self._lock:
            self._put({"pk": "CAPACITY", "sk": "SNAPSHOT"} | snapshot)

    # -- capacity ledger -------------------------------------------------------------------------------
    def read_ledger(self) -> Ledger:
        return ledger_from_item(self._read(LEDGER_KEY["pk"], LEDGER_KEY["sk"]))

    def _ledger_holds(self, version: int) -> bool:
        """The condition of a ledger write: at ``version`` (0: no ledger yet)."""
        ledger = self._get(LEDGER_KEY["pk"], LEDGER_KEY["sk"])
        if version == 0:
            return ledger is None
        return ledger is not None and ledger.get("version") == version

    def _write_ledger(self, version: int, put: dict[str, Reservation], remove: list[str]) -> None:
        if version == 0:
            self._put(new_ledger_item(put))
            return
        values = {key: stored(reservation_item(reservation)) for key, reservation in put.items()}

        def change(item: Item) -> None:
            item["version"] = stored(version + 1)
            reservations = item["reservations"]
            reservations.update(values)
            for key in remove:
                reservations.pop(key, None)

        self._update(LEDGER_KEY["pk"], LEDGER_KEY["sk"], change)

    def commit_admission(
        self,
        version: int,
        job_key: str,
        reservation: Reservation | None,
        claim: tuple[Decision, str, datetime] | None = None,
    ) -> str:
        with self._lock:
            if not self._ledger_holds(version):
                return "conflict"
            item = decision_claim(*claim) if claim is not None else None
            if item is not None and self._get(item["pk"], item["sk"]) is not None:
                return "decided"
            self._write_ledger(version, {job_key: reservation} if reservation else {}, [])
            if item is not None:
                self._put(item)
            return "committed"

    def update_reservations(self, version: int, put: dict[str, Reservation], remove: list[str]) -> bool:
        if not put and not remove:
            return True
        with self._lock:
            if not self._ledger_holds(version):
                return False
            self._write_ledger(version, dict(put), list(remove))
            return True

    def release_reservation(self, job_key: str) -> bool:
        with self._lock:
            ledger = self._get(LEDGER_KEY["pk"], LEDGER_KEY["sk"])
            reservations = (ledger or {}).get("reservations")
            if ledger is None or not isinstance(reservations, dict) or job_key not in reservations:
                return False

            def change(item: Item) -> None:
                del item["reservations"][job_key]
                item["version"] = item["version"] + 1

            self._update(LEDGER_KEY["pk"], LEDGER_KEY["sk"], change)
            return True

    # -- price catalogs ---------------------------------------------------------------------------------
    def put_price_catalog(self, catalog: RegionCatalog) -> None:
        with self._lock:
            self._put(price_catalog_item(catalog))

    def price_catalogs(self) -> list[RegionCatalog]:
        catalogs: list[RegionCatalog] = []
        for item in self._by_gsi("PRICES"):
            try:
                catalogs.append(RegionCatalog.model_validate(item))
            except ValidationError:
                continue
        return catalogs


def _gsi_entry(item: Item) -> tuple[str, str] | None:
    """(gsi1pk, gsi1sk) when the item is in ``gsi1`` (both keys present and non-empty strings)."""
    pk, sk = item.get("gsi1pk"), item.get("gsi1sk")
    if isinstance(pk, str) and isinstance(sk, str) and pk and sk:
        return pk, sk
    return None


def _fresh(meta: Item, modified: str, terminal: frozenset[str]) -> bool:
    """An upsert's condition: the stored status is not terminal and not modified after ``modified``."""
    status, last = meta.get("status"), meta.get("last_modified")
    if status is not None and status in terminal:
        return False
    return last is None or (isinstance(last, str) and last <= modified)


def _stagnation_holds(meta: Item, seen: int, *, absent_ok: bool = True) -> bool:
    """The optimistic lock on the stagnation state: still at ``seen`` trials (0: none yet)."""
    state = meta.get("stagnation")
    if seen == 0 and absent_ok:
        return "stagnation" not in meta
    return isinstance(state, dict) and state.get("trials_seen") == seen


def _job_unchanged(meta: Item, job: dict[str, Any] | None, *, checks_stagnation: bool) -> bool:
    """The optimistic lock of ``record_trial``: the job item still has the trial count the caller read
    in ``job`` (none: no trial yet) and, when the stagnation state is written, still the state read."""
    recorded = int((job or {}).get("trials_recorded") or 0)
    if recorded and meta.get("trials_recorded") != recorded:
        return False
    if not recorded and "trials_recorded" in meta:
        return False
    if not checks_stagnation:
        return True
    previous = (job or {}).get("stagnation")
    if isinstance(previous, dict) and previous.get("trials_seen") is not None:
        state = meta.get("stagnation")
        return isinstance(state, dict) and state.get("trials_seen") == int(previous["trials_seen"])
    return "stagnation" not in meta
