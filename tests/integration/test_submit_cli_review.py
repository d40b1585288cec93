"""``tuning-governor submit``'s failures as the user sees them (docs/reference/cli.md): a request SageMaker's API
model refuses is not sent; AWS refusing the send names the queue and the fix; one line, no traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from governor_client.__main__ import main
from governor_client.simulator.scenarios import seed_tuning_request
from governor_client.submit import command as submit_cli
from tests.conftest import REGION, ROOT

DENIED_MESSAGE = (
    "User: arn:aws:sts::000000000000:assumed-role/intruder/ana is not authorized to perform: sqs:sendmessage on"
    " resource: arn:aws:sqs:us-east-1:000000000000:tuning-governor-submissions with an explicit deny in a"
    " resource-based policy"
)


def _write(tmp_path: Path, request: dict[str, Any]) -> Path:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request), encoding="utf-8")
    return path


@pytest.mark.usefixtures("mocked_aws")
def test_a_request_sagemaker_would_refuse_is_not_sent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="tuning-governor-submissions")["QueueUrl"]
    # Given a request whose MaxParallelTrainingJobs is text, and with no HyperParameterTuningJobConfig.Strategy
    request = seed_tuning_request("churn")
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = "two"
    path = _write(tmp_path, request)
    # When it is submitted
    code = main(["submit", str(path), "--queue-url", url, "--client-token", "t-1", "--region", REGION])
    # Then nothing reaches the queue, and one line says which field is wrong and where to see all of them
    err = capsys.readouterr().err
    assert code == 2
    assert "MaxParallelTrainingJobs" in err and "tuning-governor check" in err and len(err.strip().splitlines()) == 1
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)


@pytest.mark.usefixtures("mocked_aws")
def test_a_request_without_a_name_is_sent_the_governor_names_it(tmp_path: Path) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="tuning-governor-submissions")["QueueUrl"]
    request = seed_tuning_request("churn")
    del request["HyperParameterTuningJobName"]
    path = _write(tmp_path, request)
    assert main(["submit", str(path), "--queue-url", url, "--client-token", "t-2", "--region", REGION]) == 0
    assert len(sqs.receive_message(QueueUrl=url)["Messages"]) == 1


def test_a_send_the_queue_policy_denies_names_the_queue_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a caller whose role is not among SubmitterRoleArns: SQS answers AccessDenied
    sqs = boto3.client("sqs", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    stub = Stubber(sqs)
    stub.add_client_error(
        "send_message",
        service_error_code="AccessDenied",
        service_message=DENIED_MESSAGE,
        http_status_code=403,
    )
    stub.activate()
    monkeypatch.setattr(submit_cli, "cli_client", lambda service, region, **_: sqs)
    url = "https://sqs.us-east-1.amazonaws.com/000000000000/tuning-governor-submissions"
    path = _write(tmp_path, seed_tuning_request("churn"))
    code = main(["submit", str(path), "--queue-url", url, "--client-token", "t-3"])
    err = capsys.readouterr().err
    assert code == 3 and len(err.strip().splitlines()) == 1
    assert url in err and "access denied" in err and "SubmitterRoleArns" in err
    # docs/reference/cli.md shows this line word for word
    docs = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert err.strip() in docs
