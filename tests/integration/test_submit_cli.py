"""``tuning-governor submit``: the request reaches the queue as the consumer reads it; bad input is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from governor_client.__main__ import main
from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import REGION
from tuning_governor.app.queue.requests import read_record


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


@pytest.mark.usefixtures("mocked_aws")
def test_submit_takes_the_region_from_the_queue_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a queue in eu-west-1 and no region configured anywhere
    sqs = boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="tuning-governor-submissions")["QueueUrl"]
    assert url.startswith("https://sqs.eu-west-1.amazonaws.com/")
    for key in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    request = tmp_path / "request.json"
    request.write_text(json.dumps(seed_tuning_request("churn")))

    # When it is submitted without --region
    code = main(["submit", str(request), "--queue-url", url, "--client-token", "churn-3"])

    # Then it is sent to that queue (the URL names the region)
    assert code == 0, capsys.readouterr().err
    assert len(sqs.receive_message(QueueUrl=url)["Messages"]) == 1


@pytest.mark.parametrize(
    ("url", "region"),
    [
        ("https://sqs.eu-west-1.amazonaws.com/123456789012/q", "eu-west-1"),
        ("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q", "cn-north-1"),
        ("https://eu-central-1.queue.amazonaws.com/123456789012/q", "eu-central-1"),  # the legacy form
        ("https://sqs.us-gov-west-1.amazonaws.com/123456789012/q", "us-gov-west-1"),
        ("http://127.0.0.1:4566/000000000000/q", None),  # a local endpoint names none
    ],
)
def test_queue_region_reads_the_url(url: str, region: str | None) -> None:
    from governor_client.submit.command import queue_region

    assert queue_region(url) == region
