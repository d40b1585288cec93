"""Report channels fail independently and are retried without duplicates; bad events never block good ones."""

from __future__ import annotations

import json
from typing import Any

import pytest

from governor_client.simulator.runner import deliver_all, deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World

JOB = "small-hb"


def test_slack_server_error_is_retried_by_the_client(world: World) -> None:
    terminal = world.run_holding_terminal(seed_tuning_request(JOB, max_jobs=4, max_parallel=2))
    world.slack.fail_next(500)
    outcome = deliver_event(terminal[-1], world.env.services).outcome
    assert outcome["outcome"] == "finalised"
    assert outcome["reports"] == {"sns": "sent", "slack": "sent"}
    assert world.slack.requests == 2
    assert len(world.slack.messages) == 1


def test_failing_slack_does_not_lose_sns_and_the_retry_sends_only_slack(
    world: World, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    terminal = world.run_holding_terminal(seed_tuning_request(JOB, max_jobs=4, max_parallel=2))
    world.slack.fail_next(500, 500, 500, 500)  # more than the client's retries
    first = deliver_event(terminal[-1], world.env.services).outcome
    # Then the job is finalised all the same (a report is its own step, issue 18), SNS has its report
    assert first["outcome"] == "finalised" and first["reports"] == {"sns": "sent", "slack": "failed"}
    assert len(world.env.sns_messages()) == 1
    assert world.slack.messages == []
    # When the event comes again (the sweep's gaps step sends the summary the same way)
    second = deliver_event(terminal[-1], world.env.services).outcome
    assert second["reports"] == {"sns": "already-sent", "slack": "sent"}
    assert len(world.env.sns_messages()) == 1
    assert len(world.slack.messages) == 1
    # The webhook URL is a secret: never in logs, metrics or outcomes.
    logs = capsys.readouterr().out + "\n".join(str(r.__dict__) for r in caplog.records)
    assert "not-a-real-token" not in logs
    assert "not-a-real-token" not in json.dumps([first, second])


def test_malformed_events_are_rejected_and_do_not_block_their_neighbours(
    world: World, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request(JOB, max_jobs=4, max_parallel=2))
    captured: list[Any] = []
    for _ in range(24 * 60):
        world.amt.advance(60)
        captured.extend(world.amt.drain_events())
        if world.amt.idle():
            break
    broken_time = json.loads(json.dumps(captured[1]))
    broken_time["detail"]["CreationTime"] = "not-a-time"
    wrong_shape = {"detail-type": "SageMaker Training Job State Change", "source": "aws.sagemaker", "detail": "x"}
    # Given bad events interleaved with SageMaker's real ones
    mixed: list[Any] = []
    for i, event in enumerate(captured):
        mixed.append(event)
        if i in (0, 3):
            mixed.append(broken_time if i == 0 else wrong_shape)
    results = deliver_all(mixed, world.env.services)
    rejected = [r.outcome for r in results if r.outcome["outcome"] == "rejected"]
    # Then each bad event is rejected with a reason, a log line and a metric
    assert len(rejected) == 2
    assert any("CreationTime" in r["reason"] for r in rejected)
    lines = [r for r in caplog.records if r.getMessage().endswith("event rejected")]
    assert len(lines) == 2
    assert all(getattr(r, "reason", "") for r in lines)
    assert capsys.readouterr().out.count('"RejectedEvents":[1.0]') == 2
    # And every good event around them was processed: the job is summarised with all its trials
    assert not [r for r in results if r.outcome["outcome"] == "error"]
    summary = world.env.services.store.get_summary(JOB)
    assert summary is not None and summary.trials_total == 4 and summary.unaccounted_trials == []
