"""The governor's single DynamoDB table: its key design, and the plumbing every area of the adapter shares.

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
| place swept     | ``SWEPT``      | ``<account>/<region>``     | -                               |
| price catalog   | ``PRICES#<region>`` | ``CATALOG``           | ``PRICES`` / ``<region>``       |
| team spend      | ``TEAM#<team>`` | ``RUNNING``               | -                               |
| team decision   | ``TEAM#<team>`` | ``DECISION#<rule>#<verdict>#<YYYY-MM>`` | -                 |

Access patterns: a job with its trials, decisions and summary is one Query on ``pk``; what holds
training instances (tuning jobs InProgress or Stopping, active standalone training jobs, available
warm pools) is four Queries on ``gsi1``; every region's refreshed price catalog is one Query on ``gsi1``
(``PRICES``); decisions with a step still to do (stop, or a report on some channel) are one Query on
``gsi1`` (``STEP#pending``, older than a claim time: the sweep's backlog). ``<key>`` is the lower-cased
tuning job name, because SageMaker ARNs lower-case names and trials link to their job by ARN; outside
the stack's own account and region it is ``<account>/<region>/<name>``, and the capacity ledger's pk is
``CAPACITY#<account>#<region>`` (``models.place.job_key``, ``ledger_pk``).

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

``GovernorStore`` (:mod:`tuning_governor.adapters.dynamodb.store`) is the DynamoDB adapter of the
``Store`` port (``tuning_governor.ports``), one module per area of the port over :class:`Table` (this
module: the client, (un)marshalling, conditional writes, transactions and error translation). The item
shapes both adapters write are built in ``keys``, ``items`` and ``capacity_items`` beside it, and the
in-memory adapter (``governor_sim.memory``, client side only) keeps the same semantics for replays, the
simulator and the demo. ``tests/contract`` runs one suite per area against both.

Expiry (the table's TTL attribute ``expires_at``, epoch seconds): report deliveries and decisions (job
and team) expire 90 days after they were claimed; finished trials ``trial_retention_days`` after they
ended when the stack sets ``TrialRetentionDays`` (0, the default: kept); every other item is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from tuning_governor.adapters.dynamodb.keys import plain, trial_retention
from tuning_governor.errors import TransientError

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


def marshal(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` as a DynamoDB item (plain values, typed attribute values)."""
    return {k: _ser.serialize(v) for k, v in plain(values).items()}


def unmarshal(item: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB item as plain values (numbers ``Decimal``)."""
    return {k: _de.deserialize(v) for k, v in item.items()}


class Table:
    """The table and its client, shared by every area of the adapter (each a mixin over this class)."""

    def __init__(self, client: DynamoDBClient, table_name: str, *, trial_retention_days: int = 0) -> None:
        """``trial_retention_days``: trial rows expire that many days after the trial ended (0: kept; else
        at least ``MIN_TRIAL_RETENTION_DAYS``, or ValueError)."""
        self._client = client
        self._table = table_name
        self._trial_retention = trial_retention(trial_retention_days)

    def _all(self, **query: Any) -> list[dict[str, Any]]:
        """Every item a Query of the table (or of ``IndexName``) returns, over all its pages, in order."""
        out: list[dict[str, Any]] = []
        for page in self._client.get_paginator("query").paginate(TableName=self._table, **query):
            out.extend(unmarshal(raw) for raw in page.get("Items", []))
        return out

    def _query(self, pk: str) -> list[dict[str, Any]]:
        """Every item of partition ``pk``, read consistently, by sort key."""
        return self._all(
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=marshal({":pk": pk}),
            ConsistentRead=True,
        )

    def _by_gsi(self, partition: str) -> list[dict[str, Any]]:
        return self._all(
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :p",
            ExpressionAttributeValues=marshal({":p": partition}),
        )

    def _conditional(self, call: Any, **request: Any) -> bool:
        """Run a conditional write: True if it was applied, False if its condition did not hold."""
        try:
            call(**request)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise self._translate(exc) from exc
        return True

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

    @staticmethod
    def _translate(exc: ClientError) -> Exception:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in THROTTLED or code == "TransactionConflictException":
            return TransientError(f"DynamoDB {code}")
        return exc
