"""``tuning-governor submit``: the request reaches the queue as the consumer reads it; bad input is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from governor_sim.cli import main
from governor_sim.scenarios import seed_tuning_request
from tests.conftest import REGION
from tuning_governor.app.queue_requests import read_record


@pytest.mark.usefixtures("mocked_aws")
def test_submit_sends_the_request_with_its_client_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="tuning-governor-submissions")["QueueUrl"]
    request = tmp_path / "request.json"
    request.write_text(json.dumps(seed_tuning_request("churn")))
    assert main(["submit", str(request), "--queue-url", url, "--client-token", "churn-1", "--region", REGION]) == 0
    assert "submitted churn-1" in capsys.readouterr().out
    [message] = sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=["All"])["Messages"]
    record = {"messageId": message["MessageId"], "body": message["Body"], "attributes": message["Attributes"]}
    submission = read_record(record)
    assert (submission.client_token, submission.request) == ("churn-1", seed_tuning_request("churn"))


@pytest.mark.parametrize(("text", "problem"), [("[1]", "must hold one JSON object"), ("{", "is not JSON")])
def test_submit_refuses_what_is_not_a_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    request = tmp_path / "request.json"
    request.write_text(text)
    assert main(["submit", str(request), "--queue-url", "https://sqs.invalid/q", "--client-token", "t"]) == 2
    err = capsys.readouterr().err
    assert problem in err and len(err.strip().splitlines()) == 1


@pytest.mark.usefixtures("mocked_aws")
def test_submit_with_fit_to_share_sends_the_consent(tmp_path: Path) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="tuning-governor-submissions")["QueueUrl"]
    request = tmp_path / "request.json"
    request.write_text(json.dumps(seed_tuning_request("churn")))
    args = ["submit", str(request), "--queue-url", url, "--client-token", "churn-2", "--region", REGION]
    assert main([*args, "--fit-to-share"]) == 0
    [message] = sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=["All"])["Messages"]
    record = {"messageId": message["MessageId"], "body": message["Body"], "attributes": message["Attributes"]}
    assert read_record(record).fit_to_share
