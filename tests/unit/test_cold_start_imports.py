"""A cold start imports only what the configured channels need: no slack_sdk while Slack is off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# A fresh interpreter, so nothing another test imported counts: the handlers' own import, then the
# adapters Lambda builds on first use (clients are created, no call is made).
COLD_START = """
import json, sys
import price_refresh, sweep, training_events, tuning_events
from tuning_governor.app.wiring import default_services
services = default_services()
print(json.dumps({"channels": [n.channel for n in services.notifiers],
                  "slack_sdk": sorted(m for m in sys.modules if m.split(".")[0] == "slack_sdk"),
                  "xray": sorted(m for m in sys.modules if m.split(".")[0] == "aws_xray_sdk"),
                  "heavy": sorted(m for m in sys.modules
                                  if m.startswith(("pydantic_settings", "aws_lambda_powertools.utilities.parser"))),
                  "queue_and_batch_reads": sorted(m for m in sys.modules if m in (
                      "tuning_governor.models.queue", "tuning_governor.domain.large_batch.arrival",
                      "tuning_governor.domain.large_batch.read", "tuning_governor.domain.large_batch.devices")),
                  "made": [n._client._client is not None for n in services.notifiers if n.channel == "sns"]
                          + [services.quotas._client._client is not None]}))
"""
ENVIRONMENT = {
    "TABLE_NAME": "governor-test",
    "TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:governor-reports",
    # Lambda sets both; boto3 reads the second.
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_TRACE_DISABLED": "true",
}


def _cold_start(slack_secret_arn: str, **extra: str) -> dict[str, list[str]]:
    result = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
        [sys.executable, "-c", COLD_START],
        env={**ENVIRONMENT, "SLACK_SECRET_ARN": slack_secret_arn, **extra},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, list[str]] = json.loads(result.stdout.splitlines()[-1])
    return report


@pytest.mark.parametrize(
    ("slack_secret_arn", "channels"),
    [
        ("", ["sns"]),
        # Configured but not yet used: the webhook client is built when a report goes to Slack.
        ("arn:aws:secretsmanager:us-east-1:123456789012:secret:governor/slack-AbC123", ["sns", "slack"]),
    ],
)
def test_cold_start_does_not_import_slack_sdk(slack_secret_arn: str, channels: list[str]) -> None:
    report = _cold_start(slack_secret_arn)

    assert report["channels"] == channels
    assert report["slack_sdk"] == []


def test_team_channels_configured_do_not_import_slack_sdk_at_cold_start() -> None:
    # Given a stack granting team Slack secrets and team topics (their notifiers are built per report)
    report = _cold_start(
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:governor/slack-AbC123",
        SLACK_SECRET_PREFIX="tuning-governor/teams/",
        TEAM_TOPIC_PREFIX="tg-team-",
    )

    assert report["channels"] == ["sns", "slack"]
    assert report["slack_sdk"] == []


@pytest.mark.parametrize(("disabled", "loads_xray"), [("true", False), ("false", True)])
def test_the_x_ray_sdk_is_imported_only_with_detailed_tracing(disabled: str, loads_xray: bool) -> None:
    # template.yaml: POWERTOOLS_TRACE_DISABLED is "true" unless the stack's DetailedTracing is "true"
    report = _cold_start("", POWERTOOLS_TRACE_DISABLED=disabled)

    assert bool(report["xray"]) is loads_xray


def test_cold_start_builds_no_client_it_may_not_need_and_imports_no_parser_models() -> None:
    # Given the stack's environment, after the handlers' import and their services
    report = _cold_start("arn:aws:secretsmanager:us-east-1:123456789012:secret:governor/slack-AbC123")

    # Then neither Powertools Parser's models (every AWS event source's) nor pydantic-settings are loaded
    assert report["heavy"] == []
    # And the SNS and Service Quotas clients are not made yet (the first report, the first arrival)
    assert report["made"] == [False, False]


def test_cold_start_builds_neither_the_queued_request_model_nor_the_large_batch_request_reader() -> None:
    # Given the stack's environment, after the handlers' import and their services
    report = _cold_start("")

    # Then the queue's request model (read on the queue's paths) and what the large-batch checks read of
    # a job's request (on a job's upsert) are not loaded: no first event of these handlers needs them yet
    assert report["queue_and_batch_reads"] == []


# A trial starting (the first event of a training-events function), on moto: which of the governor's
# pydantic models have their schema built, after the cold start and after the event.
TRIAL_START = """
import json, sys
from pathlib import Path
from moto import mock_aws
import boto3
import pydantic
mock = mock_aws()
mock.start()
from governor_client.offline.environment import create_table
create_table(boto3.client("dynamodb"), "governor-test")
boto3.client("ssm").put_parameter(Name="/tuning-governor/policy", Type="String", Value=Path(sys.argv[1]).read_text())
from governor_client.simulator.runner import FakeLambdaContext
def built():
    seen, todo = set(), [pydantic.BaseModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return sorted(f"{c.__module__}.{c.__qualname__}" for c in seen
                  if c.__module__.startswith("tuning_governor.") and c.__pydantic_complete__)
import training_events
training_events.default_services()
cold = built()
result = training_events.handler(json.loads(Path(sys.argv[2]).read_text()), FakeLambdaContext("training-events"))
print(json.dumps({"outcome": result.get("outcome"), "cold": cold, "event": built()}))
"""


def test_a_trial_starting_builds_no_schema_of_the_models_it_does_not_validate() -> None:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
        [
            sys.executable,
            "-c",
            TRIAL_START,
            str(root / "policy.example.yaml"),
            str(root / "events/training-inprogress.json"),
        ],
        env={
            **ENVIRONMENT,
            "SLACK_SECRET_ARN": "",
            "POLICY_PARAMETER": "/tuning-governor/policy",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "POWERTOOLS_METRICS_DISABLED": "true",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])

    # Then the cold start (import and services) built the schemas of what it validates only: the
    # settings, the bundled price catalog, and the policy's defaults made at import (its field defaults)
    assert report["cold"] == [
        "tuning_governor.domain.large_batch.settings.LargeBatchSettings",
        "tuning_governor.domain.pricing.CatalogFile",
        "tuning_governor.policy.model.Defaults",
        "tuning_governor.settings.Settings",
    ]
    # And the trial's first event built its event's and the policy's, but none of a tuning job's
    # (its summary, its records) or a report's: a trial starting validates none of them
    assert report["outcome"] == "progress"
    assert "tuning_governor.policy.model.Policy" in report["event"]
    assert [m for m in report["event"] if m.startswith(NOT_ON_A_TRIAL_START)] == []


NOT_ON_A_TRIAL_START = (
    "tuning_governor.models.tuning_job.",
    "tuning_governor.models.records.",
    "tuning_governor.domain.reports.",
)
