"""The Slack webhook URL is a secret: no log line at any level (ours, slack_sdk's, botocore's, moto's)
and no DynamoDB item ever holds it, even while the webhook fails and the client retries."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import pytest

from governor_client.offline.environment import TABLE_NAME
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tuning_governor.adapters.channels.slack import SlackNotifier
from tuning_governor.domain.reports import Report
from tuning_governor.errors import DeliveryFailed
from tuning_governor.observability import logger as governor_logger
from tuning_governor.policy import Policy


class _Everything(logging.Handler):
    """Every record any logger emits, formatted as a log line would be (message, args, exception)."""

    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + " " + repr(record.__dict__))


@pytest.fixture
def debug_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Everything]:
    """Root and the governor's Powertools logger at DEBUG, as with POWERTOOLS_LOG_LEVEL=DEBUG and a
    debugging operator; the handler also sits on every logger that does not propagate."""
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "DEBUG")
    handler = _Everything()
    root = logging.getLogger()
    previous = root.level, governor_logger.log_level
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    governor_logger.setLevel("DEBUG")
    extra = [governor_logger._logger]  # Powertools' logger does not propagate to root
    for item in extra:
        item.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        for item in extra:
            item.removeHandler(handler)
        root.setLevel(previous[0])
        governor_logger.setLevel(previous[1])


def _secrets(url: str) -> list[str]:
    # The whole URL, its path (the part that authorises posting), and its last segment (the token).
    path = urlsplit(url).path
    return [url, path, path.rsplit("/", 1)[-1]]


def _table_text(world: World) -> str:
    items: list[dict[str, Any]] = []
    for page in world.env.dynamodb.get_paginator("scan").paginate(TableName=TABLE_NAME):
        items.extend(page["Items"])
    assert items
    return repr(items)


def _assert_nowhere(secret_url: str, *texts: str) -> None:
    for text in texts:
        for secret in _secrets(secret_url):
            assert secret not in text, f"the webhook secret {secret!r} leaked: ...{_around(text, secret)}..."


def _around(text: str, secret: str) -> str:
    at = text.find(secret)
    return text[max(0, at - 200) : at + 100]


@pytest.mark.parametrize("failures", [(), (500, 429), (500, 500, 500, 500)], ids=["ok", "retried", "gave-up"])
def test_a_full_scenario_at_debug_never_logs_or_stores_the_webhook_url(
    world: World,
    debug_logs: _Everything,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    failures: tuple[int, ...],
) -> None:
    caplog.set_level(logging.DEBUG)
    # Given an enforcing policy with a budget one trial exceeds (decisions, a stop, reports)
    policy = Policy.model_validate({"mode": "enforce", "defaults": {"job_budget_usd": Decimal("0.05")}})
    world.env.services.policy = lambda: policy
    world.slack.fail_next(*failures)
    # When a tuning job runs to its end, every event delivered at DEBUG
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request("leak-hb", max_jobs=4, max_parallel=2))
    world.run_until_idle()
    # Then Slack was really used (the secret was read and posted to), failures retried as configured
    assert world.slack.requests >= 1 + min(len(failures), 3)
    if failures != (500, 500, 500, 500):
        assert world.slack.messages
    # (not vacuous: botocore logged the GetSecretValue response at DEBUG, redacted)
    assert any(line.startswith("botocore.parsers DEBUG Response body: <redacted") for line in debug_logs.lines)
    # And the URL, its path and its token are in no log line, no captured output, no item
    captured = capsys.readouterr()
    records = "\n".join(f"{r.name} {r.getMessage()} {r.__dict__!r}" for r in caplog.records)
    _assert_nowhere(world.slack.url, "\n".join(debug_logs.lines), records, captured.out, captured.err)
    _assert_nowhere(world.slack.url, _table_text(world))


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/services/T000FAKE/B000FAKE/closed-port-token"


@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG])
def test_connection_retries_do_not_log_the_url(
    debug_logs: _Everything, caplog: pytest.LogCaptureFixture, level: int
) -> None:
    # slack_sdk logs "Going to retry the same request: POST <url>" at INFO on connection errors.
    caplog.set_level(level)
    logging.getLogger().setLevel(level)
    url = _closed_port_url()
    notifier = SlackNotifier(lambda: url, max_retries=1, timeout=1)
    report = Report(kind="final", job_key="some-job", subject="s", text="t", blocks=[], attributes={})
    with pytest.raises(DeliveryFailed) as raised:
        notifier.send(report)
    # (not vacuous: slack_sdk logged the failed connection, through the governor's pinned logger)
    assert any("Failed to send a request to Slack API server" in line for line in debug_logs.lines)
    _assert_nowhere(url, "\n".join(debug_logs.lines), str(raised.value), repr(raised.value.__cause__))
