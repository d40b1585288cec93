"""The trial area: trials counted once, running trials (``TrialStore``).

A finished trial is one transaction of at most three items: its record (condition: it does not exist
yet), its job's totals (optimistic locking on the trial count the caller read, so the caller judges the
job on the item as written) and its team's month totals. A running trial is an entry of the job item's
``running`` map (created on first use: a nested SET/REMOVE needs it to exist) and a top-level attribute
``running#<job>#<trial>`` of its team's ``RUNNING`` item, added only while its record does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from tuning_governor.adapters.store.area import META, Area
from tuning_governor.adapters.store.conditions import Cond, all_of, eq, exists, missing
from tuning_governor.adapters.store.keys import EXPIRY_ATTRIBUTE, expires_at, iso, job_pk, team_pk, trial_sk
from tuning_governor.adapters.store.port import (
    Check,
    Put,
    TransactionCanceled,
    Update,
    adds,
    assign,
    remove,
    sets,
    stored,
)
from tuning_governor.domain import totals
from tuning_governor.domain.spend import RUNNING_PREFIX, RunningTrial
from tuning_governor.domain.stored_item import Remembered
from tuning_governor.errors import StaleState
from tuning_governor.models.records import TrialRecord

_RECORDS = Remembered(
    TrialRecord.model_validate, slot=lambda item: (item.get("pk"), item.get("sk"))
)  # a stored record item is validated once (domain.stored_item)


class Trials(Area):
    """The ``TrialStore`` port over the item table."""

    def record_trial(
        self,
        record: TrialRecord,
        *,
        job: dict[str, Any] | None,
        team: str | None = None,
        stagnation: dict[str, Any] | None = None,
        latest_end: datetime | None = None,
    ) -> dict[str, Any] | None:
        written: dict[str, Any] = {}
        if latest_end is not None:
            written["last_trial_end"] = iso(latest_end)
        if stagnation is not None:
            written["stagnation"] = stagnation
        ops: list[Put | Update | Check] = [
            Put(trial_item(record, self._trial_retention), missing("pk")),
            _job_trial_write(record, job, written, guards_stagnation=stagnation is not None),
            *([_team_trial_write(team, record)] if team else []),
        ]
        if not self._transact_keeping_running_map(ops, record.job_key, has_map=job is not None and "running" in job):
            return None
        after: dict[str, Any] = totals.job_after_trial(job, record) | stored(written)
        return after

    def update_trial_warm_pool(self, record: TrialRecord, *, team: str | None = None) -> bool:
        key = (job_pk(record.job_key), trial_sk(record.training_job_name))
        item = self._items.get(key)
        if not item:
            return False
        old = TrialRecord.model_validate(item)
        if record.warm_pool_seconds <= old.warm_pool_seconds:
            return False
        extra_seconds, extra_usd = totals.warm_pool_growth(old, record)
        trial_sets: dict[str, Any] = {
            "warm_pool_seconds": record.warm_pool_seconds,
            "warm_pool_instance_seconds": record.warm_pool_instance_seconds,
        }
        job_adds: dict[str, Any] = {"warm_pool_instance_seconds": extra_seconds}
        if extra_usd is not None:
            trial_sets["warm_pool_cost_usd"] = record.warm_pool_cost_usd
            job_adds["cost_usd"] = extra_usd
        ops = [
            Update(key, sets(trial_sets), eq("warm_pool_seconds", old.warm_pool_seconds)),
            Update((key[0], META), adds(job_adds)),
        ]
        team_adds = totals.warm_pool_team_deltas(record, extra_usd) if team else {}
        if team and team_adds:
            ops.append(Update((team_pk(team), "RUNNING"), [assign("team", team), *adds(team_adds)]))
        failed = self._items.transact(ops)
        if failed and 0 not in failed:
            raise TransactionCanceled(f"warm pool of {record.training_job_name}: a later write was refused")
        return not failed

    def trial_records(self, job_key: str) -> list[TrialRecord]:
        return [_RECORDS(item) for item in self._items.query(job_pk(job_key), "TRIAL#")]

    def track_running(self, trial: RunningTrial, *, team: str | None) -> bool:
        entry, pk = trial.to_item(), job_pk(trial.job_key)
        ops: list[Put | Update | Check] = [
            Check((pk, f"TRIAL#{trial.trial}"), missing("pk")),
            Update((pk, META), [assign(("running", trial.trial), entry)], exists("running")),
        ]
        if team:
            running = f"{RUNNING_PREFIX}{trial.job_key}#{trial.trial}"
            ops.append(Update((team_pk(team), "RUNNING"), sets({running: entry, "team": team})))
        return self._transact_keeping_running_map(ops, trial.job_key)

    def _transact_keeping_running_map(
        self, ops: Sequence[Put | Update | Check], job_key: str, *, has_map: bool = False
    ) -> bool:
        """Write ``ops`` atomically (the second updates the job's ``running`` map); False when the first's
        condition fails. A map that may not exist yet (not ``has_map``) is created, and the write run again."""
        for attempt in range(1 if has_map else 2):
            failed = self._items.transact(ops)
            if not failed:
                return True
            if 0 in failed:
                return False
            if attempt == 0 and not has_map and 1 in failed:
                self._update((job_pk(job_key), META), [assign("running", {}, if_missing=True)])
                continue
            if 1 in failed:
                # The map exists: another condition on the job item failed (its totals or stagnation
                # state moved on since the caller read it).
                raise StaleState("the job item changed since it was read")
            raise TransactionCanceled(f"a trial of {job_key}: the team's write was refused")
        return False

    def forget_running(self, job_key: str, trials: list[str], *, team: str | None) -> None:
        for start in range(0, len(trials), 50):
            chunk = trials[start : start + 50]
            self._update((job_pk(job_key), META), [remove(("running", name)) for name in chunk])
            if team:
                names = [remove(f"{RUNNING_PREFIX}{job_key}#{name}") for name in chunk]
                self._update((team_pk(team), "RUNNING"), names)


def _job_trial_write(
    record: TrialRecord, job: dict[str, Any] | None, written: dict[str, Any], *, guards_stagnation: bool
) -> Update:
    """The job side of recording a trial: its totals grow by the trial's deltas, the trial leaves its
    ``running`` map and ``written`` is set, on the condition that the totals (and, with
    ``guards_stagnation``, the stagnation state) are still those of ``job`` as the caller read it."""
    recorded = int((job or {}).get("trials_recorded") or 0)
    conds: list[Cond] = [exists("running"), eq("trials_recorded", recorded) if recorded else missing("trials_recorded")]
    if guards_stagnation:
        previous = (job or {}).get("stagnation")
        if isinstance(previous, dict) and previous.get("trials_seen") is not None:
            conds.append(eq(("stagnation", "trials_seen"), int(previous["trials_seen"])))
        else:
            conds.append(missing("stagnation"))
    changes = [
        *adds(totals.trial_deltas(record)),
        *sets(written),
        remove(("running", record.training_job_name.lower())),
    ]
    return Update((job_pk(record.job_key), META), changes, all_of(*conds))


def _team_trial_write(team: str, record: TrialRecord) -> Update:
    """The team side: the trial leaves the team's running trials and its cost is added to the totals of
    each month it ran in (``month#<YYYY-MM>#<total>`` attributes)."""
    running = f"{RUNNING_PREFIX}{record.job_key}#{record.training_job_name.lower()}"
    months = adds(dict(sorted(totals.team_month_deltas(record).items())))
    return Update((team_pk(team), "RUNNING"), [assign("team", team), remove(running), *months])


# -- the items -----------------------------------------------------------------------------------------------------
def trial_item(record: TrialRecord, retention: timedelta | None) -> dict[str, Any]:
    """A finished trial's row (expiring ``retention`` after the trial ended; None: kept)."""
    values: dict[str, Any] = {"pk": job_pk(record.job_key), "sk": trial_sk(record.training_job_name), "type": "trial"}
    values |= record.model_dump(mode="python")
    if retention is not None:
        ended = record.end_time or datetime.now(UTC)
        values[EXPIRY_ATTRIBUTE] = expires_at(ended, retention)
    return values
