"""The governor's single DynamoDB table.

Key design (``pk`` / ``sk``, GSI ``gsi1`` on ``gsi1pk`` / ``gsi1sk``):

| item            | pk             | sk                         | gsi1pk / gsi1sk                 |
|-----------------|----------------|----------------------------|---------------------------------|
| tuning job      | ``JOB#<key>``  | ``META``                   | ``STATUS#<status>`` / created   |
| finished trial  | ``JOB#<key>``  | ``TRIAL#<training job>``   | -                               |
| final summary   | ``JOB#<key>``  | ``SUMMARY``                | -                               |
| summary gaps    | ``JOB#<key>``  | ``GAPS``                   | ``GAPS`` / job end time         |
| report delivery | ``JOB#<key>``  | ``DELIVERY#<kind>#<chan>`` | -                               |
| decision        | ``JOB#<key>``  | ``DECISION#<rule>#<verdict>`` | ``STEP#pending`` / claimed (while pending) |
| standalone job  | ``TRAINING#<name>`` | ``META``              | ``TRAINING#<Active|Ended>`` / - |
| warm pool       | ``WARMPOOL#<name>`` | ``META``              | ``WARMPOOL#Available`` / -      |
| capacity view   | ``CAPACITY``   | ``SNAPSHOT``               | -                               |
| capacity ledger | ``CAPACITY``   | ``LEDGER``                 | -                               |
| price catalog   | ``PRICES#<region>`` | ``CATALOG``           | ``PRICES`` / ``<region>``       |
| team spend      | ``TEAM#<team>`` | ``RUNNING``               | -                               |
| team decision   | ``TEAM#<team>`` | ``DECISION#<rule>#<verdict>#<YYYY-MM>`` | -                 |

Access patterns: a job with its trials, decisions and summary is one Query on ``pk``; what holds
training instances (tuning jobs InProgress or Stopping, active standalone training jobs, available
warm pools) is four Queries on ``gsi1``; every region's refreshed price catalog is one Query on ``gsi1``
(``PRICES``); decisions with a step still to do (stop, or a report on some channel) are one Query on
``gsi1`` (``STEP#pending``, older than a claim time: the sweep's backlog). ``<key>`` is the lower-cased
tuning job name, because
SageMaker ARNs lower-case names and trials link to their job by ARN.

Counting is exactly-once: a trial record and the job's running totals are written in one
transaction whose first condition is that the trial record does not exist yet; a job's status never
moves back from a terminal status, nor to an older LastModifiedTime. The same transaction takes the
trial out of the running trials (job ``running`` map, team ``running#<job>#<trial>`` attribute) and
adds its cost to its team's months (``month#<YYYY-MM>#<total>`` attributes): three items, the trial,
its job and its team. A team's running trials and month totals share the team's ``RUNNING`` item, so
a team's spend is one GetItem. The job item's update is conditional on the trial count the caller read
(optimistic locking), so the caller knows the item as written and judges the job without reading it
again. A running trial is added only while its trial record does not exist (so a late InProgress
event never makes a finished trial run again). A job's or team's spend is therefore read from one
item each, never by a scan or a per-trial read.

``GovernorStore`` is the DynamoDB adapter of the ``Store`` port (``tuning_governor.ports``); the item
shapes both adapters write are built in ``tuning_governor.adapters.table_items``, and the in-memory
adapter (``governor_sim.memory_store``, client side only) keeps the same semantics for replays, the
simulator and the demo. ``tests/contract`` runs one suite against both.

Expiry (the table's TTL attribute ``expires_at``, epoch seconds): report deliveries and decisions (job
and team) expire 90 days after they were claimed; finished trials ``trial_retention_days`` after they
ended when the stack sets ``TrialRetentionDays`` (0, the default: kept); every other item is kept.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError
from pydantic import ValidationError

from tuning_governor.adapters.table_items import (
    CLAIM_TIMEOUT,
    EXPIRY_ATTRIBUTE,
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
    job_partition,
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
from tuning_governor.errors import StaleState, TransientError
from tuning_governor.governance.capacity import Holder, Ledger, Reservation
from tuning_governor.governance.rules import Decision
from tuning_governor.governance.spend import RUNNING_PREFIX, RunningTrial, running_trials
from tuning_governor.models.records import JobSummary, TrialRecord
from tuning_governor.models.sagemaker import TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TuningJob

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["EXPIRY_ATTRIBUTE", "MIN_TRIAL_RETENTION_DAYS", "GovernorStore"]

_ser = TypeSerializer()
_de = TypeDeserializer()
THROTTLED = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
    }
)


def _item(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(v) for k, v in plain(values).items()}


def _unitem(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _de.deserialize(v) for k, v in item.items()}


class GovernorStore:
    permissions: ClassVar[dict[str, str]] = {
        "read": "dynamodb:GetItem",
        "query": "dynamodb:Query",
        "put": "dynamodb:PutItem",
        "update": "dynamodb:UpdateItem",
        "delete": "dynamodb:DeleteItem",
    }

    def __init__(self, client: DynamoDBClient, table_name: str, *, trial_retention_days: int = 0) -> None:
        """``trial_retention_days``: trial rows expire that many days after the trial ended (0: kept; else
        at least ``MIN_TRIAL_RETENTION_DAYS``, or ValueError)."""
        if trial_retention_days != 0 and trial_retention_days < MIN_TRIAL_RETENTION_DAYS:
            raise ValueError(
                f"trial retention must be 0 (keep) or at least {MIN_TRIAL_RETENTION_DAYS} days, got {trial_retention_days}"
            )
        self._client = client
        self._table = table_name
        self._trial_retention = timedelta(days=trial_retention_days) if trial_retention_days else None

    # -- tuning jobs -----------------------------------------------------------------------------
    def upsert_job(
        self,
        job: TuningJob,
        *,
        region: str,
        team: str | None,
        owner: str | None,
        event_time: datetime,
    ) -> bool:
        """Record a job's configuration and non-terminal status. False when the event is stale."""
        modified = job_modified(job, event_time)
        attributes = job_attributes(job, region=region, team=team, owner=owner, event_time=event_time)
        present = list(attributes.items())
        names = {f"#a{i}": name for i, (name, _) in enumerate(present)}
        values = {f":a{i}": value for i, (_, value) in enumerate(present)}
        update = "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(present)))
        if job.status == "Stopping":
            # When the job itself was stopped (its first Stopping change): the summary uses it to tell
            # trials early stopping ended from trials the job's stop cut.
            update += ", stopping_at = if_not_exists(stopping_at, :stopping)"
            values[":stopping"] = modified
        terminal = [f":t{i}" for i in range(len(TUNING_TERMINAL))]
        values.update(dict(zip(terminal, sorted(TUNING_TERMINAL), strict=True)))
        values[":lm"] = modified
        names.update({"#status": "status", "#lm": "last_modified"})
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=_item({"pk": job_pk(job.key), "sk": "META"}),
            UpdateExpression=update,
            ConditionExpression=(
                f"(attribute_not_exists(#status) OR NOT #status IN ({', '.join(terminal)}))"
                " AND (attribute_not_exists(#lm) OR #lm <= :lm)"
            ),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=_item(values),
        )

    def get_job(self, job_key: str) -> dict[str, Any] | None:
        response = self._client.get_item(
            TableName=self._table, Key=_item({"pk": job_pk(job_key), "sk": "META"}), ConsistentRead=True
        )
        item = response.get("Item")
        return _unitem(item) if item else None

    # -- trials ----------------------------------------------------------------------------------
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

        One transaction of at most three items: the trial record (condition: it does not exist yet),
        the job item (totals added, the trial out of its ``running`` map, ``stagnation`` set) and, for a
        ``team``, the team's item (the trial out of its running trials, its cost added to the totals of
        each month it ran in).
        """
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
        sets: dict[str, Any] = {}
        if latest_end is not None:
            sets["last_trial_end"] = iso(latest_end)
        if stagnation is not None:
            sets["stagnation"] = stagnation
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
        written = self._transact_keeping_running_map(
            [
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": _item(trial_item(record, self._trial_retention)),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": _item({"pk": job_pk(record.job_key), "sk": "META"}),
                        "UpdateExpression": update + " REMOVE running.#run",
                        "ConditionExpression": condition,
                        "ExpressionAttributeNames": names,
                        "ExpressionAttributeValues": _item(values),
                    }
                },
                *([self._team_trial_write(team, record)] if team else []),
            ],
            record.job_key,
            has_map=job is not None and "running" in job,
        )
        if not written:
            return None
        after = job_after_trial(job, record)
        if sets:
            after |= _unitem(_item(sets))
        return after

    def update_trial_warm_pool(self, record: TrialRecord) -> bool:
        """Add warm-pool retention billed after the trial was recorded (the pool ended later).

        True when the record grew; False when it already holds as much (a duplicate), or a concurrent
        update won. The job's totals move by the difference, in the same transaction.
        """
        key = {"pk": job_pk(record.job_key), "sk": trial_sk(record.training_job_name)}
        item = self._client.get_item(TableName=self._table, Key=_item(key), ConsistentRead=True).get("Item")
        if not item:
            return False
        old = TrialRecord.model_validate(_unitem(item))
        if record.warm_pool_seconds <= old.warm_pool_seconds:
            return False
        extra_seconds = record.warm_pool_instance_seconds - old.warm_pool_instance_seconds
        sets: dict[str, Any] = {
            ":ws": record.warm_pool_seconds,
            ":wis": record.warm_pool_instance_seconds,
            ":old": old.warm_pool_seconds,
        }
        adds: dict[str, Any] = {":dwis": extra_seconds}
        add_expr = ["warm_pool_instance_seconds :dwis"]
        trial_set = "SET warm_pool_seconds = :ws, warm_pool_instance_seconds = :wis"
        if record.warm_pool_cost_usd is not None and old.cost_usd is not None:
            sets[":wc"] = record.warm_pool_cost_usd
            trial_set += ", warm_pool_cost_usd = :wc"
            adds[":dcost"] = record.warm_pool_cost_usd - (old.warm_pool_cost_usd or Decimal(0))
            add_expr.append("cost_usd :dcost")
        return self._transact_if_first_holds(
            [
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": _item(key),
                        "UpdateExpression": trial_set,
                        "ConditionExpression": "warm_pool_seconds = :old",
                        "ExpressionAttributeValues": _item(sets),
                    }
                },
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": _item({"pk": job_pk(record.job_key), "sk": "META"}),
                        "UpdateExpression": "ADD " + ", ".join(add_expr),
                        "ExpressionAttributeValues": _item(adds),
                    }
                },
            ]
        )

    def trial_records(self, job_key: str) -> list[TrialRecord]:
        records: list[TrialRecord] = []
        paginator = self._client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=_item({":pk": job_pk(job_key), ":prefix": "TRIAL#"}),
            ConsistentRead=True,
        ):
            records.extend(TrialRecord.model_validate(_unitem(item)) for item in page.get("Items", []))
        return records

    # -- summaries -------------------------------------------------------------------------------
    def write_summary(self, summary: JobSummary) -> None:
        """Store the final summary and mark the job terminal (idempotent: a re-run overwrites it)."""
        meta = summary_job_attributes(summary)
        self._client.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": _item(summary_item(summary)),
                    }
                },
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": _item({"pk": job_pk(summary.job_key), "sk": "META"}),
                        "UpdateExpression": (
                            "SET #status = :status, job_name = :name, gsi1pk = :gsi, finalised_at = :at,"
                            " #region = :region"
                        ),
                        "ExpressionAttributeNames": {"#status": "status", "#region": "region"},
                        "ExpressionAttributeValues": _item(
                            {
                                ":status": meta["status"],
                                ":name": meta["job_name"],
                                ":gsi": meta["gsi1pk"],
                                ":at": meta["finalised_at"],
                                ":region": meta["region"],
                            }
                        ),
                    }
                },
            ]
        )

    def get_summary(self, job_key: str) -> JobSummary | None:
        response = self._client.get_item(
            TableName=self._table, Key=_item({"pk": job_pk(job_key), "sk": "SUMMARY"}), ConsistentRead=True
        )
        item = response.get("Item")
        return JobSummary.model_validate(_unitem(item)) if item else None

    # -- summaries still waiting for trials ------------------------------------------------------
    # A finalised job whose summary lacks trials SageMaker lists as finished, or whose first summary
    # report is not yet out on every channel, has a ``GAPS`` item
    # (gsi1pk ``GAPS``, gsi1sk its end time): the sweep finds every such job with one Query, never a
    # scan, and the item goes when the summary is complete (or the sweep gives up on the trials).
    def mark_gaps(self, job_key: str, *, job_name: str, region: str, ended_at: datetime, missing: list[str]) -> None:
        """Note that ``job_key``'s summary is missing ``missing`` (idempotent: a re-run overwrites it)."""
        item = gaps_item(job_key, job_name=job_name, region=region, ended_at=ended_at, missing=missing)
        self._client.put_item(TableName=self._table, Item=_item(item))

    def jobs_with_gaps(self) -> list[dict[str, Any]]:
        """The ``GAPS`` items of every finalised job still missing trials or a report, oldest end first."""
        return sorted(self._by_gsi("GAPS"), key=lambda item: str(item.get("gsi1sk", "")))

    def clear_gaps(self, job_key: str) -> None:
        self._client.delete_item(TableName=self._table, Key=_item({"pk": job_pk(job_key), "sk": "GAPS"}))

    def set_summary_reported(self, job_key: str, cost_usd: Decimal, at: datetime) -> bool:
        """Keep the figures the summary report first went out with (``summary_reported_usd`` on the job
        item), once: a later summary is compared with them to decide on a correction. False if set."""
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=_item({"pk": job_pk(job_key), "sk": "META"}),
            UpdateExpression="SET summary_reported_usd = :usd, summary_reported_at = :at",
            ConditionExpression="attribute_not_exists(summary_reported_at)",
            ExpressionAttributeValues=_item({":usd": cost_usd, ":at": at}),
        )

    # -- report deliveries -----------------------------------------------------------------------
    def claim_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, token: str | None = None) -> bool:
        """Claim the right to send one report on one channel. False if sent, or being sent, already.

        A claim held under the same ``token`` is taken again: the caller's own claim, whose answer was
        lost (the write happened, the caller saw an error), so nothing can have been sent under it."""
        condition = "attribute_not_exists(pk) OR (#state = :sending AND claimed_at < :stale)"
        values: dict[str, Any] = {":sending": "sending", ":stale": now - CLAIM_TIMEOUT}
        if token:
            condition += " OR (#state = :sending AND claim_token = :token)"
            values[":token"] = token
        return self._conditional(
            self._client.put_item,
            TableName=self._table,
            Item=_item(delivery_claim(job_key, kind, channel, now, token)),
            ConditionExpression=condition,
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=_item(values),
        )

    def finish_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, sent: bool) -> None:
        """Mark the report sent on the channel (for good), or give the claim up (it was not sent).
        Idempotent; a throttled or failed call raises ``TransientError``."""
        try:
            if sent:
                self._client.put_item(TableName=self._table, Item=_item(delivery_sent(job_key, kind, channel, now)))
            else:
                self._client.delete_item(
                    TableName=self._table, Key=_item({"pk": job_pk(job_key), "sk": delivery_sk(kind, channel)})
                )
        except ClientError as exc:
            raise self._translate(exc) from exc

    def delivery_sent(self, job_key: str, kind: str, channel: str) -> bool:
        """Whether the report went out on the channel (False while a claim is still ``sending``)."""
        response = self._client.get_item(
            TableName=self._table,
            Key=_item({"pk": job_pk(job_key), "sk": delivery_sk(kind, channel)}),
            ConsistentRead=True,
        )
        return _unitem(response.get("Item") or {}).get("state") == "sent"

    def items(self, job_key: str) -> list[dict[str, Any]]:
        """Every item of a job, read consistently (the finaliser's one read of the job; reports, tests)."""
        out: list[dict[str, Any]] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=_item({":pk": job_pk(job_key)}),
            ConsistentRead=True,
        ):
            out.extend(_unitem(item) for item in page.get("Items", []))
        return out

    # -- governance ------------------------------------------------------------------------------
    def mark_arrival(self, job_key: str, at: datetime) -> bool:
        """True only for the first caller: a job's arrival is judged once, never again on a later event."""
        return self._set_once(job_pk(job_key), "META", "arrival_evaluated_at", at)

    def set_stagnation_spend(self, job_key: str, trials_seen: int, spent_usd: Decimal) -> bool:
        """Store the job's spend at its last improvement, unless a later trial has advanced the state."""
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=_item({"pk": job_pk(job_key), "sk": "META"}),
            UpdateExpression="SET stagnation.spent_at_improvement = :spent",
            ConditionExpression="stagnation.trials_seen = :seen",
            ExpressionAttributeValues=_item({":spent": spent_usd, ":seen": trials_seen}),
        )

    def set_budget_check(self, job_key: str, at: datetime) -> bool:
        """Remember the time of the job's scheduled budget check, so an unchanged estimate is not asked
        for again on every event (False: the job has no item)."""
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=_item({"pk": job_pk(job_key), "sk": "META"}),
            UpdateExpression="SET budget_check_at = :at",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues=_item({":at": at}),
        )

    def mark_stop_requested(self, job_key: str, at: datetime) -> bool:
        return self._set_once(job_pk(job_key), "META", "stop_requested_at", at)

    def _set_once(self, pk: str, sk: str, attribute: str, at: datetime) -> bool:
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=_item({"pk": pk, "sk": sk}),
            UpdateExpression="SET #a = :at",
            ConditionExpression="attribute_not_exists(#a)",
            ExpressionAttributeNames={"#a": attribute},
            ExpressionAttributeValues=_item({":at": at}),
        )

    def open_decision(
        self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True
    ) -> dict[str, Any] | None:
        """Claim a decision once. The stored row when this caller must carry out its steps (a new
        claim, or one a failed attempt left pending: its stored action and figures win over the
        caller's); None when the decision is done."""
        item = decision_claim(decision, mode, now, own_report=own_report)
        try:
            self._client.put_item(
                TableName=self._table,
                Item=_item(item),
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise self._translate(exc) from exc
            old: dict[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            stored = _unitem(old) if old else self.get_decision(decision.job_key, decision.rule, decision.verdict)
            return stored if stored is not None and stored.get("state") == "pending" else None
        return _unitem(_item(item))

    def claim_decision(self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True) -> bool:
        """Record a decision once. True when this caller must act on it: new, or left pending before
        its action was recorded. A pending decision whose action is recorded is left to the step
        ledger (``guard.resume_decision``), which sends its reports with that action."""
        stored = self.open_decision(decision, mode, now, own_report=own_report)
        return stored is not None and stored.get("action") is None

    def record_decision_action(
        self, decision: Decision, action: str, detail: str, *, stop_requested_at: datetime | None = None
    ) -> None:
        """The decision's stop step is done: its action is stored (a retry never stops again) and, for
        a stop that took effect, the job item's ``stop_requested_at`` is set (once) in the same write."""
        items: list[Any] = [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": _item({"pk": job_pk(decision.job_key), "sk": decision_sk(decision.rule, decision.verdict)}),
                    "UpdateExpression": "SET #action = :action, action_detail = :detail",
                    "ConditionExpression": "attribute_exists(pk)",
                    "ExpressionAttributeNames": {"#action": "action"},
                    "ExpressionAttributeValues": _item({":action": action, ":detail": detail}),
                }
            }
        ]
        if stop_requested_at is not None:
            items.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": _item({"pk": job_pk(decision.job_key), "sk": "META"}),
                        "UpdateExpression": "SET stop_requested_at = if_not_exists(stop_requested_at, :at)",
                        "ConditionExpression": "attribute_exists(pk)",
                        "ExpressionAttributeValues": _item({":at": stop_requested_at}),
                    }
                }
            )
        if not self._transact_if_first_holds(items):
            raise StaleState(f"decision {decision.rule}#{decision.verdict} of {decision.job_key} is not claimed")

    def finish_decision(self, decision: Decision, action: str, detail: str) -> None:
        """Every step of the decision is done: it leaves the pending steps (``gsi1``)."""
        self._client.update_item(
            TableName=self._table,
            Key=_item({"pk": job_pk(decision.job_key), "sk": decision_sk(decision.rule, decision.verdict)}),
            UpdateExpression="SET #state = :done, #action = :action, action_detail = :detail REMOVE gsi1pk, gsi1sk",
            ExpressionAttributeNames={"#state": "state", "#action": "action"},
            ExpressionAttributeValues=_item({":done": "done", ":action": action, ":detail": detail}),
        )

    def pending_decisions(self, job_key: str) -> list[dict[str, Any]]:
        """A job's decisions with a step still to do (one Query on the job's partition)."""
        out: list[dict[str, Any]] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :d)",
            FilterExpression="#state = :pending",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=_item({":pk": job_pk(job_key), ":d": "DECISION#", ":pending": "pending"}),
        ):
            out.extend(_unitem(item) for item in page.get("Items", []))
        return out

    def stale_pending_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]:
        """Decisions of any job claimed before ``claimed_before`` and still pending (one Query on ``gsi1``,
        which lists only pending decisions)."""
        out: list[dict[str, Any]] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self._table,
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :p AND gsi1sk < :before",
            ExpressionAttributeValues=_item({":p": PENDING_STEPS, ":before": iso(claimed_before)}),
        ):
            out.extend(_unitem(item) for item in page.get("Items", []))
        return out

    def decisions(self, job_key: str) -> list[dict[str, Any]]:
        _, _, decisions = job_partition(self.items(job_key))
        return decisions

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
            Key=_item({"pk": f"TRAINING#{job.name.lower()}", "sk": "META"}),
            UpdateExpression=(
                "SET #status = :status, #lm = :lm, instances = :instances, gsi1pk = :gsi, gsi1sk = :lm,"
                " job_name = :name, team = :team"
            ),
            ConditionExpression=(
                f"(attribute_not_exists(#status) OR NOT #status IN ({', '.join(terminal)}))"
                " AND (attribute_not_exists(#lm) OR #lm <= :lm)"
            ),
            ExpressionAttributeNames={"#status": "status", "#lm": "last_modified"},
            ExpressionAttributeValues=_item(values),
        )

    def set_warm_pool(self, job: TrainingJob, *, team: str | None) -> None:
        """An Available warm pool holds its instances; any other warm-pool status releases them. A job
        that never asked for a pool (no KeepAlivePeriodInSeconds > 0) and shows no warm-pool status has
        no holder to release: nothing is written."""
        if not warm_pool_tracked(job):
            return
        item = warm_pool_item(job, team=team)
        if item is not None:
            self._client.put_item(TableName=self._table, Item=_item(item))
        else:
            self._client.delete_item(
                TableName=self._table, Key=_item({"pk": f"WARMPOOL#{job.name.lower()}", "sk": "META"})
            )

    def release_warm_pool(self, name: str) -> None:
        self._client.delete_item(TableName=self._table, Key=_item({"pk": f"WARMPOOL#{name.lower()}", "sk": "META"}))

    def warm_pool_names(self) -> set[str]:
        return {str(item["job_name"]) for item in self._by_gsi("WARMPOOL#Available")}

    def _by_gsi(self, partition: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self._table,
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :p",
            ExpressionAttributeValues=_item({":p": partition}),
        ):
            out.extend(_unitem(item) for item in page.get("Items", []))
        return out

    def holders(self, *, tuning_jobs: bool = True) -> list[Holder]:
        """Everything that holds training instances now (tuning jobs by their worst-case demand; the
        concurrency rule counts tuning jobs from the capacity ledger instead: ``tuning_jobs=False``)."""
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

    def jobs_with_status(self, status: str) -> list[dict[str, Any]]:
        return self._by_gsi(f"STATUS#{status}")

    # -- running trials and team months (accrued spend) --------------------------------------------
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
                    "Key": _item({"pk": job_pk(trial.job_key), "sk": f"TRIAL#{trial.trial}"}),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {
                "Update": {
                    "TableName": self._table,
                    "Key": _item({"pk": job_pk(trial.job_key), "sk": "META"}),
                    "UpdateExpression": "SET running.#run = :entry",
                    "ConditionExpression": "attribute_exists(running)",
                    "ExpressionAttributeNames": {"#run": trial.trial},
                    "ExpressionAttributeValues": _item({":entry": entry}),
                }
            },
        ]
        if team:
            items.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": _item({"pk": team_pk(team), "sk": "RUNNING"}),
                        "UpdateExpression": "SET #run = :entry, team = :team",
                        "ExpressionAttributeNames": {"#run": f"{RUNNING_PREFIX}{trial.job_key}#{trial.trial}"},
                        "ExpressionAttributeValues": _item({":entry": entry, ":team": team}),
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
                        Key=_item({"pk": job_pk(job_key), "sk": "META"}),
                        UpdateExpression="SET running = if_not_exists(running, :empty)",
                        ExpressionAttributeValues=_item({":empty": {}}),
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
                Key=_item({"pk": job_pk(job_key), "sk": "META"}),
                UpdateExpression="REMOVE " + ", ".join(f"running.{n}" for n in names),
                ExpressionAttributeNames=names,
            )
            if team:
                team_names = {f"#r{i}": f"{RUNNING_PREFIX}{job_key}#{name}" for i, name in enumerate(chunk)}
                self._client.update_item(
                    TableName=self._table,
                    Key=_item({"pk": team_pk(team), "sk": "RUNNING"}),
                    UpdateExpression="REMOVE " + ", ".join(team_names),
                    ExpressionAttributeNames=team_names,
                )

    def team_spend(self, team: str, month: str) -> tuple[dict[str, Any], list[RunningTrial]]:
        """The team's totals for ``month`` (``YYYY-MM``: finished_usd, trials, unpriced_trials, spot
        sums; empty before its first finished trial of the month) and its running trials, over all its
        tuning jobs: both are on the team's one item, read with one GetItem."""
        item = self._team_item(team)
        return month_totals(item, month), running_trials(item)

    def team_running(self, team: str) -> list[RunningTrial]:
        """The team's running trials, over all its tuning jobs (one GetItem)."""
        return running_trials(self._team_item(team))

    def team_month(self, team: str, month: str) -> dict[str, Any]:
        """The team's totals for ``month`` (see :meth:`team_spend`; one GetItem)."""
        return month_totals(self._team_item(team), month)

    def _team_item(self, team: str) -> dict[str, Any]:
        response = self._client.get_item(
            TableName=self._table, Key=_item({"pk": team_pk(team), "sk": "RUNNING"}), ConsistentRead=True
        )
        return _unitem(response["Item"]) if response.get("Item") else {}

    def team_jobs_in_progress(self, team: str) -> list[dict[str, Any]]:
        """The team's InProgress tuning jobs (one gsi1 Query, filtered by team; run per team breach only)."""
        out: list[dict[str, Any]] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self._table,
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :p",
            FilterExpression="team = :team",
            ExpressionAttributeValues=_item({":p": "STATUS#InProgress", ":team": team}),
        ):
            out.extend(_unitem(item) for item in page.get("Items", []))
        return out

    def claim_team_decision(self, decision: Decision, month: str, mode: str, now: datetime) -> bool:
        """Claim a team's decision for ``month`` once (``TEAM#<team>`` / ``DECISION#<rule>#<verdict>#<month>``).

        True when this caller must act on it (new, or a retry of an unfinished one).
        """
        item = team_decision_claim(decision, month, mode, now)
        return self._conditional(
            self._client.put_item,
            TableName=self._table,
            Item=_item(item),
            ConditionExpression="attribute_not_exists(pk) OR #state = :pending",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=_item({":pending": "pending"}),
        )

    def finish_team_decision(self, decision: Decision, month: str, jobs: list[dict[str, Any]]) -> None:
        self._client.update_item(
            TableName=self._table,
            Key=_item(
                {"pk": team_pk(decision.team or ""), "sk": team_decision_sk(decision.rule, decision.verdict, month)}
            ),
            UpdateExpression="SET #state = :done, jobs = :jobs",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=_item({":done": "done", ":jobs": jobs}),
        )

    def team_decisions(self, team: str) -> list[dict[str, Any]]:
        """Every decision item of a team (for reports, the demo and tests)."""
        out: list[dict[str, Any]] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :d)",
            ExpressionAttributeValues=_item({":pk": team_pk(team), ":d": "DECISION#"}),
        ):
            out.extend(_unitem(item) for item in page.get("Items", []))
        return out

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
                "Key": _item({"pk": team_pk(team), "sk": "RUNNING"}),
                "UpdateExpression": "SET team = :team REMOVE #run ADD " + ", ".join(adds),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": _item(values),
            }
        }

    def put_capacity_snapshot(self, snapshot: dict[str, Any]) -> None:
        self._client.put_item(TableName=self._table, Item=_item({"pk": "CAPACITY", "sk": "SNAPSHOT"} | snapshot))

    # -- price catalogs (written by the PriceRefreshFunction, read by every handler) ---------------
    def put_price_catalog(self, catalog: RegionCatalog) -> None:
        """Replace one region's refreshed price catalog (one item per region, well under 400 KB)."""
        item = price_catalog_item(catalog)
        self._client.put_item(TableName=self._table, Item=_item(item))

    def price_catalogs(self) -> list[RegionCatalog]:
        """Every region's stored catalog; an item that no longer parses is skipped, not fatal."""
        catalogs: list[RegionCatalog] = []
        for item in self._by_gsi("PRICES"):
            try:
                catalogs.append(RegionCatalog.model_validate(item))
            except ValidationError:
                continue
        return catalogs

    # -- capacity ledger ---------------------------------------------------------------------------
    # One item (pk CAPACITY, sk LEDGER) holds every admitted tuning job's reservation and a version.
    # Admission reads it, judges, and writes back on the condition that the version is still the one
    # it read (optimistic concurrency): simultaneous arrivals are serialized in ledger commit order.
    # A reservation is ~300 bytes: the 400 KB item holds over a thousand running tuning jobs.
    _LEDGER_KEY: ClassVar[dict[str, str]] = LEDGER_KEY

    def read_ledger(self) -> Ledger:
        """The ledger as last committed (version 0 and no reservations before the first admission)."""
        response = self._client.get_item(TableName=self._table, Key=_item(self._LEDGER_KEY), ConsistentRead=True)
        return ledger_from_item(_unitem(response["Item"]) if response.get("Item") else None)

    def commit_admission(
        self,
        version: int,
        job_key: str,
        reservation: Reservation | None,
        claim: tuple[Decision, str, datetime] | None = None,
    ) -> str:
        """Commit one arrival's judgement against ledger ``version``, atomically with its decision claim.

        Returns "committed", "conflict" (the ledger moved on since it was read: judge again), or
        "decided" (the decision was claimed already, by a retry racing this one). The ledger's version
        moves on even when nothing is reserved, so every judgement takes a place in the commit order.
        """
        ledger_write = self._ledger_write(version, {job_key: reservation} if reservation else {}, [])
        items: list[Any] = [ledger_write]
        if claim is not None:
            decision, mode, now = claim
            items.append(
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": _item(decision_claim(decision, mode, now)),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons", [])
            codes = [r.get("Code") for r in reasons]
            if codes[:1] == ["ConditionalCheckFailed"] or "TransactionConflict" in codes:
                return "conflict"
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                return "decided"
            if exc.response.get("Error", {}).get("Code") == "TransactionConflictException":
                return "conflict"
            raise self._translate(exc) from exc
        return "committed"

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

    def release_reservation(self, job_key: str) -> bool:
        """Give a finished job's instances back. False when it held none (never admitted, or released).

        The version moves on, so a judgement made before the release is made again after it.
        """
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=_item(self._LEDGER_KEY),
            UpdateExpression="REMOVE reservations.#job SET version = version + :one",
            ConditionExpression="attribute_exists(reservations.#job)",
            ExpressionAttributeNames={"#job": job_key},
            ExpressionAttributeValues=_item({":one": 1}),
        )

    def get_decision(self, job_key: str, rule: str, verdict: str) -> dict[str, Any] | None:
        response = self._client.get_item(
            TableName=self._table,
            Key=_item({"pk": job_pk(job_key), "sk": decision_sk(rule, verdict)}),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return _unitem(item) if item else None

    def _ledger_write(self, version: int, put: dict[str, Reservation], remove: list[str]) -> dict[str, Any]:
        if version == 0:
            # No ledger yet: create it whole, on the condition that nobody else just did.
            return {
                "Put": {
                    "TableName": self._table,
                    "Item": _item(new_ledger_item(put)),
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
            "Key": _item(self._LEDGER_KEY),
            "UpdateExpression": update,
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": _item(values),
        }
        if names:
            request["ExpressionAttributeNames"] = names
        return {"Update": request}

    def _transact_if_first_holds(self, items: list[Any]) -> bool:
        """Write ``items`` atomically: False (nothing written) if the first item's condition does not hold."""
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons", [])
            if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                return False
            if any(r.get("Code") == "TransactionConflict" for r in reasons):
                raise TransientError("DynamoDB transaction conflict") from exc
            raise self._translate(exc) from exc
        return True

    def _conditional(self, call: Any, **request: Any) -> bool:
        """Run a conditional write: True if it was applied, False if its condition did not hold."""
        try:
            call(**request)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise self._translate(exc) from exc
        return True

    @staticmethod
    def _translate(exc: ClientError) -> Exception:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in THROTTLED or code == "TransactionConflictException":
            return TransientError(f"DynamoDB {code}")
        return exc
