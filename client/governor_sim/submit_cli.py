"""``tuning-governor submit REQUEST.json --queue-url URL --client-token TOKEN``: send a tuning-job
request to the governor's submission queue (docs/queue.md) with your AWS credentials.

REQUEST.json is what ``aws sagemaker create-hyper-parameter-tuning-job --cli-input-json`` takes. Your
team is the one whose ``teams.<team>.submitters`` lists the role you send as; the governor reports
queued (position), admitted, expired or refused to your team's channels. Exit 0 sent, 2 bad input,
3 AWS refused (no credentials, not a listed submitter: the queue policy denies the send).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from governor_sim.cli_aws import cli_client
from governor_sim.cli_errors import CommandError
from governor_sim.submissions import send_submission

DESCRIPTION = (
    "Send REQUEST (a CreateHyperParameterTuningJob request as `aws sagemaker create-hyper-parameter-tuning-job"
    " --cli-input-json` takes it) to the governor's submission queue (the stack's SubmissionQueueUrl output)"
    " with your AWS credentials. The governor creates the job when it fits your team's share and the"
    " account's quota; the same --client-token again is the same submission. See docs/queue.md."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("request", metavar="REQUEST.json", help="the CreateHyperParameterTuningJob request")
    parser.add_argument("--queue-url", required=True, help="the stack's SubmissionQueueUrl output")
    parser.add_argument(
        "--client-token", required=True, help="your name for this submission (1-128 characters; repeat = same job)"
    )
    parser.add_argument("--region", default=None, help="the queue's region (default: your AWS configuration's)")
    parser.add_argument(
        "--fit-to-share",
        action="store_true",
        help="consent to be admitted now with a lower MaxParallelTrainingJobs rather than wait (teams with shares)",
    )


def _request(path: str) -> dict[str, object]:
    try:
        loaded = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path} is not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(loaded, dict):
        raise CommandError(f"{path} must hold one JSON object (the request)")
    return loaded


def run_command(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    """0 with the message id printed; ``CommandError`` (2) for bad input; AWS errors go to ``run_guarded`` (3)."""
    token = str(args.client_token)
    if not 1 <= len(token) <= 128:
        raise CommandError("--client-token must be 1 to 128 characters")
    request = _request(args.request)
    sqs = cli_client("sqs", args.region)
    message_id = send_submission(sqs, args.queue_url, request, token, fit_to_share=bool(args.fit_to_share))
    print(
        f"submitted {token} (message {message_id}); the governor reports queued, admitted or refused",
        file=stdout or sys.stdout,
    )
    return 0
