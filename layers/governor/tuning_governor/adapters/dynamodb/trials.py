"""The trial area of the DynamoDB adapter: trials counted once, running trials (``TrialStore``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from tuning_governor.adapters.dynamodb.items import trial_item
from tuning_governor.adapters.dynamodb.keys import iso, job_pk, team_pk, trial_sk
from tuning_governor.adapters.dynamodb.table import Table, marshal, unmarshal
from tuning_governor.domain.spend import RUNNING_PREFIX, RunningTrial
from tuning_governor.domain.totals import (
    job_after_trial,
    team_month_deltas,
    trial_deltas,
    warm_pool_growth,
    warm_pool_team_deltas,
)
from tuning_governor.errors import StaleState, TransientError
from tuning_governor.models.records import TrialRecord
from tuning_governor.ports import TrialStore


class TrialTable(Table):
    """The ``TrialStore`` port on the table."""

    def record_trial(
        self,
        record: TrialRecord,
        *,
        job: dict[str, Any] | None,
        team: str | None = None,
        stagnation: dict[str, Any] | None = None,
        latest_end: datetime | None = None,
    ) -> dict[str, Any] | None:
        """Write a finished trial and add it to its job's totals, once; None for a duplicate.

        ``latest_end`` (the trial's end, when later than the job item's ``last_trial_end`` as the caller
        read it) becomes the job's ``last_trial_end``: the latest moment its recorded state reflects.

        ``job`` is the job item as the caller read it (None: no item yet). The write is conditional on
        the job's totals being still those (its ``trials_recorded``), so the item it returns, ``job`` with
        this trial applied (:func:`job_after_trial`) and ``stagnation`` set, is the item as written:
        the caller judges the job on it without reading it again. A concurrent trial that wrote first
        raises ``StaleState`` (nothing written): read the item again and retry.

        One transaction of at most three items: the trial record (condition: it does not exist yet), the
        job item (:meth:`_job_trial_write`) and, for a ``team``, the team's (:meth:`_team_trial_write`).
        """
        sets: dict[str, Any] = {}
        if latest_end is not None:
            sets["last_trial_end"] = iso(latest_end)
        if stagnation is not None:
            sets["stagnation"] = stagnation
        written = self._transact_keeping_running_map(
            [
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": marshal(trial_item(record, self._trial_retention)),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                self._job_trial_write(record, job, sets, guards_stagnation=stagnation is not None),
                *([self._team_trial_write(team, record)] if team else []),
            ],
            record.job_key,
            has_map=job is not None and "running" in job,
        )
        if not written:
            return None
        after = job_after_trial(job, record)
        if sets:
            after |= unmarshal(marshal(sets))
        return after

    def _job_trial_write(
        self, record: TrialRecord, job: dict[str, Any] | None, sets: dict[str, Any], *, guards_stagnation: bool
    ) -> dict[str, Any]:
        """The job side of recording a trial, one item: its totals grow by the trial's deltas, the trial
        leaves its ``running`` map and ``sets`` are set, on the condition that the totals (and, with
        ``guards_stagnation``, the stagnation state) are still those of ``job`` as the caller read it."""
        deltas = trial_deltas(record)
        names = {"#run": record.training_job_name.lower()} | {f"#d{i}": name for i, name in enumerate(deltas)}
        values: dict[str, Any] = {f":d{i}": value for i, value in enumerate(deltas.values())}
        update = "ADD " + ", ".join(f"#d{i} :d{i}" for i in range(len(deltas)))
        # Optimistic locking on the job's trial count: the totals this caller computed the item from are
        # the ones it adds to (every change to them goes through this transaction).
        recorded = int((job or {}).get("trials_recorded") or 0)
        condition = "attribute_exists(running) AND "
        if recorded:
            condition += "trials_recorded = :recorded"
            values[":recorded"] = recorded
        else:
            condition += "attribute_not_exists(trials_recorded)"
        if guards_stagnation:
            # The state advanced from the one read (guarded by its own trial count as well).
            previous = (job or {}).get("stagnation")
            if isinstance(previous, dict) and previous.get("trials_seen") is not None:
                condition += " AND stagnation.trials_seen = :seen"
                values[":seen"] = int(previous["trials_seen"])
            else:
                condition += " AND attribute_not_exists(stagnation)"
        if sets:
            update += " SET " + ", ".join(f"{name} = :{name}" for name in sets)
            values |= {f":{name}": value for name, value in sets.items()}
        return {
            "Update": {
                "TableName": self._table,
                "Key": marshal({"pk": job_pk(record.job_key), "sk": "META"}),
                "UpdateExpression": update + " REMOVE running.#run",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": marshal(values),
            }
        }

    def update_trial_warm_pool(self, record: TrialRecord, *, team: str | None = None) -> bool:
        """Add warm-pool retention billed after the trial was recorded (the pool ended later).

        True when the record grew; False when it already holds as much (a duplicate), or a concurrent
        update won. The job's totals and, for a ``team``, its month totals move by the difference, in
        the same transaction (the team's month holds every dollar its jobs hold).
        """
        key = {"pk": job_pk(record.job_key), "sk": trial_sk(record.training_job_name)}
        item = self._client.get_item(TableName=self._table, Key=marshal(key), ConsistentRead=True).get("Item")
        if not item:
            return False
        old = TrialRecord.model_validate(unmarshal(item))
        if record.warm_pool_seconds <= old.warm_pool_seconds:
            return False
        extra_seconds, extra_usd = warm_pool_growth(old, record)
        sets: dict[str, Any] = {
            ":ws": record.warm_pool_seconds,
            ":wis": record.warm_pool_instance_seconds,
            ":old": old.warm_pool_seconds,
        }
        adds: dict[str, Any] = {":dwis": extra_seconds}
        add_expr = ["warm_pool_instance_seconds :dwis"]
        trial_set = "SET warm_pool_seconds = :ws, warm_pool_instance_seconds = :wis"
        if extra_usd is not None:
            sets[":wc"] = record.warm_pool_cost_usd
            trial_set += ", warm_pool_cost_usd = :wc"
            adds[":dcost"] = extra_usd
            add_expr.append("cost_usd :dcost")
        return self._transact_if_first_holds(
            [
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": marshal(key),
                        "UpdateExpression": trial_set,
                        "ConditionExpression": "warm_pool_seconds = :old",
                        "ExpressionAttributeValues": marshal(sets),
                    }
                },
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": marshal({"pk": job_pk(record.job_key), "sk": "META"}),
                        "UpdateExpression": "ADD " + ", ".join(add_expr),
                        "ExpressionAttributeValues": marshal(adds),
                    }
                },
                *self._team_warm_pool_write(team, record, extra_usd),
            ]
        )

    def _team_warm_pool_write(self, team: str | None, record: TrialRecord, extra_usd: Any) -> list[dict[str, Any]]:
        """The team side of a warm pool's growth: nothing without a team or dollars to add."""
        deltas = warm_pool_team_deltas(record, extra_usd) if team else {}
        if not deltas:
            return []
        names = {f"#m{i}": attribute for i, attribute in enumerate(deltas)}
        values = {f":m{i}": delta for i, delta in enumerate(deltas.values())}
        return [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": marshal({"pk": team_pk(team or ""), "sk": "RUNNING"}),
                    "UpdateExpression": "SET team = :team ADD "
                    + ", ".join(f"{n} {v}" for n, v in zip(names, values, strict=True)),
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": marshal(values | {":team": team}),
                }
            }
        ]

    def trial_records(self, job_key: str) -> list[TrialRecord]:
        items = self._all(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=marshal({":pk": job_pk(job_key), ":prefix": "TRIAL#"}),
            ConsistentRead=True,
        )
        return [TrialRecord.model_validate(item) for item in items]

    # A running trial is an entry of the job META item's ``running`` map (trial -> RunningTrial), read
    # with the item itself; the map is created on first use (a nested SET/REMOVE needs it to exist).
    # On its team's RUNNING item it is a top-level attribute ``running#<job>#<trial>``: one SET or
    # REMOVE, valid whether or not the item exists. The same item holds the team's month totals,
    # ``month#<YYYY-MM>#<total>`` attributes ADDed by record_trial.
    def track_running(self, trial: RunningTrial, *, team: str | None) -> bool:
        """Mark a trial as running on its job (and team), unless its terminal record exists already.

        False when the trial has finished: a late InProgress event never re-adds a running entry.
        Idempotent: a duplicate event writes the same entry again.
        """
        entry = trial.to_item()
        items: list[Any] = [
            {
                "ConditionCheck": {
                    "TableName": self._table,
                    "Key": marshal({"pk": job_pk(trial.job_key), "sk": f"TRIAL#{trial.trial}"}),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {
                "Update": {
                    "TableName": self._table,
                    "Key": marshal({"pk": job_pk(trial.job_key), "sk": "META"}),
                    "UpdateExpression": "SET running.#run = :entry",
                    "ConditionExpression": "attribute_exists(running)",
                    "ExpressionAttributeNames": {"#run": trial.trial},
                    "ExpressionAttributeValues": marshal({":entry": entry}),
                }
            },
        ]
        if team:
            items.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": marshal({"pk": team_pk(team), "sk": "RUNNING"}),
                        "UpdateExpression": "SET #run = :entry, team = :team",
                        "ExpressionAttributeNames": {"#run": f"{RUNNING_PREFIX}{trial.job_key}#{trial.trial}"},
                        "ExpressionAttributeValues": marshal({":entry": entry, ":team": team}),
                    }
                }
            )
        return self._transact_keeping_running_map(items, trial.job_key)

    def _transact_keeping_running_map(self, items: list[Any], job_key: str, *, has_map: bool = False) -> bool:
        """Write ``items`` atomically, the second of which updates the job's ``running`` map.

        False (nothing written) when the first item's condition fails. When the map may not exist yet
        (``has_map`` False) and the second item's condition fails, it is created empty and the
        transaction runs once more.
        """
        for attempt in range(1 if has_map else 2):
            try:
                self._client.transact_write_items(TransactItems=items)
            except ClientError as exc:
                codes = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                if codes[:1] == ["ConditionalCheckFailed"]:
                    return False
                if attempt == 0 and not has_map and codes[1:2] == ["ConditionalCheckFailed"]:
                    self._client.update_item(
                        TableName=self._table,
                        Key=marshal({"pk": job_pk(job_key), "sk": "META"}),
                        UpdateExpression="SET running = if_not_exists(running, :empty)",
                        ExpressionAttributeValues=marshal({":empty": {}}),
                    )
                    continue
                if codes[1:2] == ["ConditionalCheckFailed"]:
                    # The map exists: another condition on the job item failed (its totals or stagnation
                    # state moved on since the caller read it).
                    raise StaleState("the job item changed since it was read") from exc
                if "TransactionConflict" in codes:
                    raise TransientError("DynamoDB transaction conflict") from exc
                raise self._translate(exc) from exc
            return True
        return False

    def forget_running(self, job_key: str, trials: list[str], *, team: str | None) -> None:
        """Drop running entries of a finished job whose trials' terminal events never came."""
        for start in range(0, len(trials), 50):
            chunk = trials[start : start + 50]
            names = {f"#r{i}": name for i, name in enumerate(chunk)}
            self._client.update_item(
                TableName=self._table,
                Key=marshal({"pk": job_pk(job_key), "sk": "META"}),
                UpdateExpression="REMOVE " + ", ".join(f"running.{n}" for n in names),
                ExpressionAttributeNames=names,
            )
            if team:
                team_names = {f"#r{i}": f"{RUNNING_PREFIX}{job_key}#{name}" for i, name in enumerate(chunk)}
                self._client.update_item(
                    TableName=self._table,
                    Key=marshal({"pk": team_pk(team), "sk": "RUNNING"}),
                    UpdateExpression="REMOVE " + ", ".join(team_names),
                    ExpressionAttributeNames=team_names,
                )

    def _team_trial_write(self, team: str, record: TrialRecord) -> dict[str, Any]:
        """The team side of recording a trial, one item: it leaves the team's running trials and its
        cost is added to the totals of each month it ran in (``month#<YYYY-MM>#<total>`` attributes)."""
        names = {"#run": f"{RUNNING_PREFIX}{record.job_key}#{record.training_job_name.lower()}"}
        values: dict[str, Any] = {":team": team}
        adds: list[str] = []
        for i, (attribute, delta) in enumerate(sorted(team_month_deltas(record).items())):
            names[f"#m{i}"] = attribute
            values[f":m{i}"] = delta
            adds.append(f"#m{i} :m{i}")
        return {
            "Update": {
                "TableName": self._table,
                "Key": marshal({"pk": team_pk(team), "sk": "RUNNING"}),
                "UpdateExpression": "SET team = :team REMOVE #run ADD " + ", ".join(adds),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": marshal(values),
            }
        }


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[TrialStore] = TrialTable
