"""Submitting to the governor's queue (docs/explanation/queue.md), for users and for the offline stand-in.

``send_submission`` is what a data scientist's code calls (boto3's SQS client, the stack's
``SubmissionQueueUrl`` output). ``lambda_event`` turns what a queue holds into the event Lambda's SQS
poller hands the consumer, for running the consumer offline on moto; ``StaticPrincipals`` maps role
unique ids to ARNs without IAM, for the simulator.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from tuning_governor.ports.submissions import Principals


def send_submission(
    sqs: Any, queue_url: str, request: Mapping[str, Any], client_token: str, *, fit_to_share: bool = False
) -> str:
    """Send one CreateHyperParameterTuningJob request; its SQS MessageId. The same ``client_token``
    again is the same submission (one tuning job at most). ``fit_to_share``: consent to be admitted
    with a lower MaxParallelTrainingJobs rather than wait (teams with shares)."""
    message: dict[str, Any] = {"request": dict(request), "client_token": client_token}
    if fit_to_share:
        message["fit_to_share"] = True
    body = json.dumps(message)
    return str(sqs.send_message(QueueUrl=queue_url, MessageBody=body)["MessageId"])


def lambda_event(sqs: Any, queue_url: str, *, sender_id: str | None = None, limit: int = 10) -> dict[str, Any]:
    """The Lambda SQS event of up to ``limit`` messages the queue holds (received, not deleted: the
    poller deletes what the consumer did not report as failed). ``sender_id`` replaces SQS's SenderId:
    moto gives every message one fixed id whoever sends it, where AWS gives the sending role's unique
    id and session (``AROA...:session``)."""
    got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=limit, MessageSystemAttributeNames=["All"])
    records = []
    for message in got.get("Messages", []):
        attributes = dict(message.get("Attributes") or {})
        if sender_id is not None:
            attributes["SenderId"] = sender_id
        records.append(
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": attributes,
                "eventSource": "aws:sqs",
            }
        )
    return {"Records": records}


class StaticPrincipals:
    """The ``Principals`` port from a map of role unique id -> role ARN (no IAM); the map is read at each
    call, so a simulation may add roles as it meets them."""

    def __init__(self, ids: Mapping[str, str]) -> None:
        self._ids = ids

    def role_arn(self, sender_id: str, candidates: Iterable[str]) -> str | None:
        wanted = self._ids.get(sender_id.split(":", 1)[0], "").casefold()
        return next((arn for arn in sorted(candidates) if arn.casefold() == wanted), None)


# mypy checks that the stand-in implements the port.
_PORT: type[Principals] = StaticPrincipals
