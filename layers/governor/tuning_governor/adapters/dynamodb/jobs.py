"""The job area of the DynamoDB adapter: tuning jobs, summaries, summary gaps, a job's items (``JobStore``)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from tuning_governor.adapters.dynamodb.items import (
    gaps_item,
    job_attributes,
    job_modified,
    summary_item,
    summary_job_attributes,
)
from tuning_governor.adapters.dynamodb.keys import iso, job_pk
from tuning_governor.adapters.dynamodb.table import Table, marshal, unmarshal
from tuning_governor.models.records import JobSummary
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.ports import JobStore


class JobTable(Table):
    """The ``JobStore`` port on the table."""

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
            Key=marshal({"pk": job_pk(job.key), "sk": "META"}),
            UpdateExpression=update,
            ConditionExpression=(
                f"(attribute_not_exists(#status) OR NOT #status IN ({', '.join(terminal)}))"
                " AND (attribute_not_exists(#lm) OR #lm <= :lm)"
            ),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=marshal(values),
        )

    def refresh_tags(self, job_key: str, *, tags: dict[str, str], owner: str | None, read_at: datetime) -> bool:
        values: dict[str, Any] = {":tags": dict(tags), ":at": iso(read_at), ":owner": owner}
        terminal = [f":t{i}" for i in range(len(TUNING_TERMINAL))]
        values.update(dict(zip(terminal, sorted(TUNING_TERMINAL), strict=True)))
        update = "SET tags = :tags, tags_read_at = :at" + (", #owner = :owner" if owner else " REMOVE #owner")
        if not owner:
            del values[":owner"]
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": job_pk(job_key), "sk": "META"}),
            UpdateExpression=update,
            ConditionExpression=(
                f"attribute_exists(pk) AND NOT #status IN ({', '.join(terminal)})"
                " AND (attribute_not_exists(tags_read_at) OR tags_read_at <= :at)"
            ),
            ExpressionAttributeNames={"#status": "status", "#owner": "owner"},
            ExpressionAttributeValues=marshal(values),
        )

    def get_job(self, job_key: str) -> dict[str, Any] | None:
        response = self._client.get_item(
            TableName=self._table, Key=marshal({"pk": job_pk(job_key), "sk": "META"}), ConsistentRead=True
        )
        item = response.get("Item")
        return unmarshal(item) if item else None

    def jobs_with_status(self, status: str) -> list[dict[str, Any]]:
        return self._by_gsi(f"STATUS#{status}")

    def items(self, job_key: str) -> list[dict[str, Any]]:
        """Every item of a job, read consistently (the finaliser's one read of the job; reports, tests)."""
        return self._query(job_pk(job_key))

    def write_summary(self, summary: JobSummary) -> None:
        """Store the final summary and mark the job terminal (idempotent: a re-run overwrites it)."""
        meta = summary_job_attributes(summary)
        self._client.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": marshal(summary_item(summary)),
                    }
                },
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": marshal({"pk": job_pk(summary.job_key), "sk": "META"}),
                        "UpdateExpression": (
                            "SET #status = :status, job_name = :name, gsi1pk = :gsi, finalised_at = :at,"
                            " #region = :region"
                        ),
                        "ExpressionAttributeNames": {"#status": "status", "#region": "region"},
                        "ExpressionAttributeValues": marshal(
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
            TableName=self._table, Key=marshal({"pk": job_pk(job_key), "sk": "SUMMARY"}), ConsistentRead=True
        )
        item = response.get("Item")
        return JobSummary.model_validate(unmarshal(item)) if item else None

    # A finalised job whose summary lacks trials SageMaker lists as finished, or whose first summary
    # report is not yet out on every channel, has a ``GAPS`` item
    # (gsi1pk ``GAPS``, gsi1sk its end time): the sweep finds every such job with one Query, never a
    # scan, and the item goes when the summary is complete (or the sweep gives up on the trials).
    def mark_gaps(self, job_key: str, *, job_name: str, region: str, ended_at: datetime, missing: list[str]) -> None:
        """Note that ``job_key``'s summary is missing ``missing`` (idempotent: a re-run overwrites it)."""
        item = gaps_item(job_key, job_name=job_name, region=region, ended_at=ended_at, missing=missing)
        self._client.put_item(TableName=self._table, Item=marshal(item))

    def jobs_with_gaps(self) -> list[dict[str, Any]]:
        """The ``GAPS`` items of every finalised job still missing trials or a report, oldest end first."""
        return sorted(self._by_gsi("GAPS"), key=lambda item: str(item.get("gsi1sk", "")))

    def clear_gaps(self, job_key: str) -> None:
        self._client.delete_item(TableName=self._table, Key=marshal({"pk": job_pk(job_key), "sk": "GAPS"}))

    def set_summary_reported(self, job_key: str, cost_usd: Decimal, at: datetime) -> bool:
        """Keep the figures the summary report first went out with (``summary_reported_usd`` on the job
        item), once: a later summary is compared with them to decide on a correction. False if set."""
        return self._conditional(
            self._client.update_item,
            TableName=self._table,
            Key=marshal({"pk": job_pk(job_key), "sk": "META"}),
            UpdateExpression="SET summary_reported_usd = :usd, summary_reported_at = :at",
            ConditionExpression="attribute_not_exists(summary_reported_at)",
            ExpressionAttributeValues=marshal({":usd": cost_usd, ":at": at}),
        )


# mypy checks that the area class implements its port (the contract tests check the signatures too).
_PORT: type[JobStore] = JobTable
