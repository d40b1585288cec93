"""``tuning-governor submit REQUEST.json --queue-url URL --client-token TOKEN``: send a tuning-job
request to the governor's submission queue (docs/explanation/queue.md) with your AWS credentials.

REQUEST.json is what ``aws sagemaker create-hyper-parameter-tuning-job --cli-input-json`` takes. Your
team is the one whose ``teams.<team>.submitters`` lists the role you send as; the governor reports
queued (position), admitted, expired or refused to your team's channels. Exit 0 sent, 2 bad input (a
file that cannot be read, not JSON, or a request SageMaker's API model refuses: nothing is sent), 3 AWS
refused (no credentials, not a listed submitter: the queue policy denies the send).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from governor_client.cli.aws import cli_client
from governor_client.cli.errors import DENIED, CommandError, ExitCode, aws_problem

#: The name the governor replaces (``q-`` + a hash of team and token): a request may leave it out.
PLACEHOLDER_NAME = "named-by-the-governor"

DESCRIPTION = (
    "Send REQUEST (a CreateHyperParameterTuningJob request as `aws sagemaker create-hyper-parameter-tuning-job"
    " --cli-input-json` takes it) to the governor's submission queue (the stack's SubmissionQueueUrl output)"
    " with your AWS credentials. The governor creates the job when it fits your team's share and the"
    " account's quota; the same --client-token again is the same submission. See docs/explanation/queue.md."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("request", metavar="REQUEST.json", help="the CreateHyperParameterTuningJob request")
    parser.add_argument("--queue-url", required=True, help="the stack's SubmissionQueueUrl output")
    parser.add_argument(
        "--client-token", required=True, help="your name for this submission (1-128 characters; repeat = same job)"
    )
    parser.add_argument(
        "--region",
        default=None,
        help="the queue's region when its URL names none (a local endpoint); default: the URL's, else your AWS configuration's",
    )
    parser.add_argument(
        "--fit-to-share",
        action="store_true",
        help="consent to be admitted now with a lower MaxParallelTrainingJobs rather than wait (teams with shares)",
    )


#: SQS queue URLs: https://sqs.<region>.amazonaws.com[.cn]/<account>/<name>, and the legacy
#: https://<region>.queue.amazonaws.com/<account>/<name>.
_QUEUE_HOST = re.compile(r"^(?:sqs\.(?P<region>[a-z0-9-]+)|(?P<legacy>[a-z0-9-]+)\.queue)\.amazonaws\.com(?:\.cn)?$")


def queue_region(url: str) -> str | None:
    """The region a queue URL names (None: a URL that names none, such as a local endpoint's)."""
    matched = _QUEUE_HOST.match(urlsplit(url).hostname or "")
    return (matched["region"] or matched["legacy"]) if matched else None


def _region(args: argparse.Namespace) -> str | None:
    named = queue_region(args.queue_url)
    if named and args.region and args.region != named:
        raise CommandError(
            f"--region {args.region} is not the queue's: {args.queue_url} is in {named}; leave --region out"
        )
    return named or args.region


def _request(path: str) -> dict[str, object]:
    try:
        loaded = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}; check the path") from None
    except json.JSONDecodeError as exc:
        raise CommandError(
            f"{path} is not JSON: {exc.msg} (line {exc.lineno}); give the request as --cli-input-json takes it"
        ) from None
    if not isinstance(loaded, dict):
        raise CommandError(f"{path} must hold one JSON object (the request)")
    return loaded


def _check_shape(path: str, request: dict[str, object]) -> None:
    """Refuse, before sending, what SageMaker's API model (botocore's, offline) refuses: the governor
    would only refuse it later, in a report."""
    from governor_client.check.validation import model_findings  # noqa: PLC0415 - botocore's model, when it runs

    errors = [
        f for f in model_findings({"HyperParameterTuningJobName": PLACEHOLDER_NAME} | request) if f.severity == "error"
    ]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise CommandError(
            f"{path} breaks SageMaker's API model: {errors[0].path}: {errors[0].message}{more}; nothing was sent:"
            f" `tuning-governor check {path}` lists every problem"
        )


def _send(args: argparse.Namespace, request: dict[str, object], token: str) -> str:
    """The message id; AWS's refusal as one line naming the queue (and, denied, who may send)."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - the SDK, once it sends

    try:
        sqs = cli_client("sqs", _region(args), credentials_first=True)
        from governor_client.submit.submissions import send_submission  # noqa: PLC0415 - once there are credentials

        return send_submission(sqs, args.queue_url, request, token, fit_to_share=bool(args.fit_to_share))
    except (BotoCoreError, ClientError) as exc:
        failed: BotoCoreError | ClientError = exc
    # Raised outside the handler: classify() reads the chain and would put its own words over these.
    problem = aws_problem(failed) or str(failed)
    if isinstance(failed, ClientError) and failed.response.get("Error", {}).get("Code") in DENIED:
        said = str(failed.response.get("Error", {}).get("Message", "")).rstrip(".")
        problem = (
            f"access denied ({said}); only the roles in the stack's SubmitterRoleArns may send: ask the"
            " platform team to list the role you send as there and under teams.<team>.submitters"
        )
    raise CommandError(f"cannot send to {args.queue_url}: {problem}", ExitCode.AWS)


def run_command(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    """0 with the message id printed; ``CommandError`` (2) for bad input; AWS errors go to ``run_guarded`` (3)."""
    token = str(args.client_token)
    if not 1 <= len(token) <= 128:
        raise CommandError("--client-token must be 1 to 128 characters")
    _region(args)
    request = _request(args.request)
    _check_shape(args.request, request)
    message_id = _send(args, request, token)
    print(
        f"submitted {token} (message {message_id}); the governor reports queued, admitted or refused",
        file=stdout or sys.stdout,
    )
    return 0
