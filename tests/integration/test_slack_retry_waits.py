"""How the Slack channel waits between attempts: the wait it checked against the invocation's deadline,
through the ``sleep`` it was given (the deployed governor's is ``time.sleep``; the offline environment's
does not wait, its webhook being a local server)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from governor_client.offline.environment import build_environment
from governor_client.offline.slack_server import SlackWebhookServer
from tuning_governor.adapters.channels.slack import SlackNotifier
from tuning_governor.domain.reports import Report
from tuning_governor.errors import DeliveryFailed

REPORT = Report(kind="decision", job_key="job", subject="a report", text="body", attributes={})


@pytest.fixture
def slack() -> Iterator[SlackWebhookServer]:
    with SlackWebhookServer() as server:
        yield server


def test_a_rate_limited_post_waits_retry_after_plus_its_jitter_bound_then_lands(slack: SlackWebhookServer) -> None:
    waits: list[float] = []
    slack.retry_after = 3
    slack.fail_next(429)
    SlackNotifier(lambda: slack.url, sleep=waits.append).send(REPORT)
    assert waits == [4.0]
    assert len(slack.messages) == 1


def test_server_errors_wait_slack_sdk_s_back_off_each_time_and_give_up_after_the_retries(
    slack: SlackWebhookServer,
) -> None:
    waits: list[float] = []
    slack.fail_next(500, 503, 500)
    with pytest.raises(DeliveryFailed, match="HTTP 500"):
        SlackNotifier(lambda: slack.url, max_retries=2, sleep=waits.append).send(REPORT)
    # slack_sdk's default back-off: 0.5 s x 2^attempt, plus up to 1 s of jitter.
    assert len(waits) == 2
    assert 0.5 <= waits[0] <= 1.5
    assert 1.0 <= waits[1] <= 2.0
    assert slack.messages == []


def test_the_offline_environment_s_slack_retries_at_once(
    mocked_aws: None, slack: SlackWebhookServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = build_environment(slack_url=slack.url)
    (notifier,) = [n for n in env.services.notifiers if n.channel == "slack"]

    def no_sleeping(seconds: float) -> None:
        raise AssertionError(f"the offline Slack channel slept {seconds} s")

    monkeypatch.setattr(time, "sleep", no_sleeping)
    slack.retry_after = 30
    slack.fail_next(429, 500)
    notifier.send(REPORT)
    assert len(slack.messages) == 1
