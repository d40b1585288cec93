"""The trial area of ``MemoryStore``: trials counted once, running trials (``TrialStore``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from governor_sim.memory.table import Item, MemoryTable, add_to, copied, stored
from tuning_governor.adapters.dynamodb.items import trial_item
from tuning_governor.adapters.dynamodb.keys import iso, job_pk, team_pk, trial_sk
from tuning_governor.domain.spend import RUNNING_PREFIX, RunningTrial
from tuning_governor.domain.totals import (
    job_after_trial,
    team_month_deltas,
    trial_deltas,
    warm_pool_growth,
    warm_pool_team_deltas,
)
from tuning_governor.errors import StaleState
from tuning_governor.models.records import TrialRecord
from tuning_governor.ports import TrialStore


class TrialItems(MemoryTable):
    """The ``TrialStore`` port in memory."""

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
                    add_to(item, name, value)
                item.update(copied(values))
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
                add_to(item, name, value)

        self._update(team_pk(team), "RUNNING", change)

    def _ensure_running(self, job_key: str) -> None:
        self._update(job_pk(job_key), "META", lambda item: item.setdefault("running", {}))

    def update_trial_warm_pool(self, record: TrialRecord, *, team: str | None = None) -> bool:
        pk, sk = job_pk(record.job_key), trial_sk(record.training_job_name)
        with self._lock:
            item = self._get(pk, sk)
            if item is None:
                return False
            old = TrialRecord.model_validate(copied(item))
            if record.warm_pool_seconds <= old.warm_pool_seconds:
                return False
            sets: dict[str, Any] = {
                "warm_pool_seconds": record.warm_pool_seconds,
                "warm_pool_instance_seconds": record.warm_pool_instance_seconds,
            }
            extra_seconds, extra_usd = warm_pool_growth(old, record)
            adds: dict[str, Any] = {"warm_pool_instance_seconds": extra_seconds}
            if extra_usd is not None:
                sets["warm_pool_cost_usd"] = record.warm_pool_cost_usd
                adds["cost_usd"] = extra_usd
            self._set(pk, sk, sets)
            added = stored(adds)

            def change(meta: Item) -> None:
                for name, value in added.items():
                    add_to(meta, name, value)

            self._update(pk, "META", change)
            team_adds = stored(warm_pool_team_deltas(record, extra_usd)) if team else {}
            if team and team_adds:

                def grow(item: Item) -> None:
                    item["team"] = team
                    for name, value in team_adds.items():
                        add_to(item, name, value)

                self._update(team_pk(team), "RUNNING", grow)
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


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[TrialStore] = TrialItems
