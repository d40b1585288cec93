"""The governor's single DynamoDB table.

Key design (``pk`` / ``sk``, GSI ``gsi1`` on ``gsi1pk`` / ``gsi1sk``):

| item            | pk             | sk                         | gsi1pk / gsi1sk                 |
|-----------------|----------------|----------------------------|---------------------------------|
| tuning job      | ``JOB#<key>``  | ``META``                   | ``STATUS#<status>`` / created   |
| finished trial  | ``JOB#<key>``  | ``TRIAL#<training job>``   | -                               |
| final summary   | ``JOB#<key>``  | ``SUMMARY``                | -                               |
| report delivery | ``JOB#<key>``  | ``DELIVERY#<kind>#<chan>`` | -                               |
| decision        | ``JOB#<key>``  | ``DECISION#<rule>#<verdict>`` | -                            |
| standalone job  | ``TRAINING#<name>`` | ``META``              | ``TRAINING#<Active|Ended>`` / - |
| warm pool       | ``WARMPOOL#<name>`` | ``META``              | ``WARMPOOL#Available`` / -      |
| capacity view   | ``CAPACITY``   | ``SNAPSHOT``               | -                               |

Access patterns: a job with its trials, decisions and summary is one Query on ``pk``; what holds
training instances (tuning jobs InProgress or Stopping, active standalone training jobs, available
warm pools) is four Queries on ``gsi1``. ``<key>`` is the lower-cased tuning job name, because
SageMaker ARNs lower-case names and trials link to their job by ARN.

Counting is exactly-once: a trial record and the job's running totals are written in one
transaction whose first condition is that the trial record does not exist yet; a job's status never
moves back from a terminal status, nor to an older LastModifiedTime.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from tuning_governor.errors import TransientError
from tuning_governor.governance.capacity import Holder
from tuning_governor.governance.rules import Decision
from tuning_governor.models.records import JobSummary, TrialRecord
from tuning_governor.models.sagemaker import (
    TRAINING_RUNNING,
    TRAINING_TERMINAL,
    TUNING_TERMINAL,
    TrainingJob,
    TuningJob,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

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
# A delivery claim older than this is presumed abandoned by a crashed invocation.
CLAIM_TIMEOUT = timedelta(minutes=5)


def iso(value: datetime) -> str:
    """Fixed-width UTC ISO time, so string order is time order in condition expressions."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds")


def _plain(value: Any) -> Any:
    """Make a JSON-ish value storable: floats become Decimal, datetimes ISO strings (None stays NULL)."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _item(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(v) for k, v in _plain(values).items()}


def _unitem(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _de.deserialize(v) for k, v in item.items()}


def job_pk(job_key: str) -> str:
    return f"JOB#{job_key}"


class GovernorStore:
    permissions: ClassVar[dict[str, str]] = {
        "read": "dynamodb:GetItem",
        "query": "dynamodb:Query",
        "put": "dynamodb:PutItem",
        "update": "dynamodb:UpdateItem",
        "delete": "dynamodb:DeleteItem",
    }

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

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
        modified = iso(job.last_modified_time or event_time)
        created = iso(job.creation_time or event_time)
        attributes: dict[str, Any] = {
            "job_name": job.name,
            "region": region,
            "status": job.status,
            "last_modified": modified,
            "creation_time": created,
            "max_parallel": job.max_parallel,
            "demand": job.demand(),
            "tags": dict(job.tags),
            "gsi1pk": f"STATUS#{job.status}",
            "gsi1sk": created,
            "max_trials": job.max_trials,
            "strategy": job.config.strategy if job.config else None,
            "objective_name": job.objective.metric_name if job.objective else None,
            "objective_type": job.objective.type if job.objective else None,
            "arn": job.arn,
            "team": team,
            "owner": owner,
        }
        present = [(name, value) for name, value in attributes.items() if value is not None]
        names = {f"#a{i}": name for i, (name, _) in enumerate(present)}
        values = {f":a{i}": value for i, (_, value) in enumerate(present)}
        update = "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(present)))
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
    def record_trial(self, record: TrialRecord) -> bool:
        """Write a finished trial and add it to its job's totals, once. False for a duplicate."""
        status_attr = f"trials_{record.status.lower()}"
        adds: dict[str, Any] = {
            ":one": 1,
            ":bis": record.billable_instance_seconds,
            ":wis": record.warm_pool_instance_seconds,
        }
        expr = ["trials_recorded :one", "billable_instance_seconds :bis", "warm_pool_instance_seconds :wis"]
        expr.append(f"{status_attr} :one")
        if record.cost_usd is not None:
            adds[":cost"] = record.cost_usd + (record.warm_pool_cost_usd or Decimal(0))
            adds[":spot"] = record.spot_savings_usd or Decimal(0)
            expr += ["cost_usd :cost", "spot_savings_usd :spot"]
        else:
            adds[":types"] = set(record.unpriced_types) or {"unknown"}
            expr += ["unpriced_trials :one", "unpriced_types :types"]
        trial_item = _item(
            {"pk": job_pk(record.job_key), "sk": f"TRIAL#{record.training_job_name.lower()}", "type": "trial"}
            | record.model_dump(mode="python")
        )
        return self._transact_if_first_holds(
            [
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": trial_item,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": _item({"pk": job_pk(record.job_key), "sk": "META"}),
                        "UpdateExpression": "ADD " + ", ".join(expr),
                        "ExpressionAttributeValues": _item(adds),
                    }
                },
            ]
        )

    def update_trial_warm_pool(self, record: TrialRecord) -> bool:
        """Add warm-pool retention billed after the trial was recorded (the pool ended later).

        True when the record grew; False when it already holds as much (a duplicate), or a concurrent
        update won. The job's totals move by the difference, in the same transaction.
        """
        key = {"pk": job_pk(record.job_key), "sk": f"TRIAL#{record.training_job_name.lower()}"}
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
        data = summary.model_dump(mode="python")
        self._client.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": _item({"pk": job_pk(summary.job_key), "sk": "SUMMARY", "type": "summary"} | data),
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
                                ":status": summary.status,
                                ":name": summary.job_name,
                                ":gsi": f"STATUS#{summary.status}",
                                ":at": summary.finalised_at,
                                ":region": summary.region,
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

    # -- report deliveries -----------------------------------------------------------------------
    def claim_delivery(self, job_key: str, kind: str, channel: str, now: datetime) -> bool:
        """Claim the right to send one report on one channel. False if sent, or being sent, already."""
        key = {"pk": job_pk(job_key), "sk": f"DELIVERY#{kind}#{channel}"}
        return self._conditional(
            self._client.put_item,
            TableName=self._table,
            Item=_item(key | {"state": "sending", "claimed_at": now}),
            ConditionExpression="attribute_not_exists(pk) OR (#state = :sending AND claimed_at < :stale)",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=_item({":sending": "sending", ":stale": now - CLAIM_TIMEOUT}),
        )

    def finish_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, sent: bool) -> None:
        key = _item({"pk": job_pk(job_key), "sk": f"DELIVERY#{kind}#{channel}"})
        if sent:
            self._client.put_item(
                TableName=self._table,
                Item=_item(
                    {
                        "pk": job_pk(job_key),
                        "sk": f"DELIVERY#{kind}#{channel}",
                        "state": "sent",
                        "sent_at": now,
                    }
                ),
            )
        else:
            self._client.delete_item(TableName=self._table, Key=key)

    def items(self, job_key: str) -> list[dict[str, Any]]:
        """Every item of a job (for reports, the demo and tests)."""
        out: list[dict[str, Any]] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=_item({":pk": job_pk(job_key)}),
        ):
            out.extend(_unitem(item) for item in page.get("Items", []))
        return out

    # -- governance ------------------------------------------------------------------------------
    def mark_arrival(self, job_key: str, at: datetime) -> bool:
        """True only for the first caller: a job's arrival is judged once, never again on a later event."""
        return self._set_once(job_pk(job_key), "META", "arrival_evaluated_at", at)

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

    def claim_decision(self, decision: Decision, mode: str, now: datetime) -> bool:
        """Record a decision once. True when this caller must act on it (new, or a retry of an unfinished one)."""
        key = {"pk": job_pk(decision.job_key), "sk": f"DECISION#{decision.rule}#{decision.verdict}"}
        item = key | {
            "type": "decision",
            "rule": decision.rule,
            "verdict": decision.verdict,
            "mode": mode,
            "state": "pending",
            "message": decision.message,
            "numbers": decision.numbers,
            "at": decision.at,
            "claimed_at": now,
            "team": decision.team,
            "job_name": decision.job_name,
        }
        return self._conditional(
            self._client.put_item,
            TableName=self._table,
            Item=_item(item),
            ConditionExpression="attribute_not_exists(pk) OR #state = :pending",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=_item({":pending": "pending"}),
        )

    def finish_decision(self, decision: Decision, action: str, detail: str) -> None:
        self._client.update_item(
            TableName=self._table,
            Key=_item({"pk": job_pk(decision.job_key), "sk": f"DECISION#{decision.rule}#{decision.verdict}"}),
            UpdateExpression="SET #state = :done, #action = :action, action_detail = :detail",
            ExpressionAttributeNames={"#state": "state", "#action": "action"},
            ExpressionAttributeValues=_item({":done": "done", ":action": action, ":detail": detail}),
        )

    def decisions(self, job_key: str) -> list[dict[str, Any]]:
        return [item for item in self.items(job_key) if str(item.get("sk", "")).startswith("DECISION#")]

    def upsert_training_job(self, job: TrainingJob, *, team: str | None, event_time: datetime) -> bool:
        """Track a standalone training job's instances while it runs. False when the event is stale."""
        active = job.status in TRAINING_RUNNING
        modified = iso(job.last_modified_time or event_time)
        terminal = [f":t{i}" for i in range(len(TRAINING_TERMINAL))]
        values: dict[str, Any] = {
            ":status": job.status,
            ":lm": modified,
            ":instances": job.instances(),
            ":gsi": "TRAINING#Active" if active else "TRAINING#Ended",
            ":name": job.name,
            ":team": team or "",
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
        """An Available warm pool holds its instances; any other warm-pool status releases them."""
        key = _item({"pk": f"WARMPOOL#{job.name.lower()}", "sk": "META"})
        status = job.warm_pool_status.status if job.warm_pool_status else None
        if status == "Available":
            self._client.put_item(
                TableName=self._table,
                Item=_item(
                    {
                        "pk": f"WARMPOOL#{job.name.lower()}",
                        "sk": "META",
                        "gsi1pk": "WARMPOOL#Available",
                        "gsi1sk": job.name.lower(),
                        "instances": job.instances(),
                        "team": team or "",
                        "job_name": job.name,
                    }
                ),
            )
        else:
            self._client.delete_item(TableName=self._table, Key=key)

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

    def holders(self) -> list[Holder]:
        """Everything that holds training instances now, as the capacity rule counts it."""
        holders: list[Holder] = []
        for status in ("InProgress", "Stopping"):
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

    def put_capacity_snapshot(self, snapshot: dict[str, Any]) -> None:
        self._client.put_item(TableName=self._table, Item=_item({"pk": "CAPACITY", "sk": "SNAPSHOT"} | snapshot))

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
