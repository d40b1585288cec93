"""Integration fixtures: the governor's resources on moto, the AMT stand-in, a local Slack webhook."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import OfflineEnvironment, build_environment
from governor_client.offline.slack_server import SlackWebhookServer
from governor_client.simulator.runner import Delivery, deliver_all, deliver_event

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass
class World:
    amt: AmtStandIn
    env: OfflineEnvironment
    slack: SlackWebhookServer
    deliveries: list[Delivery]

    def pump(self, seconds: float = 60.0) -> list[Delivery]:
        """Advance the virtual clock and deliver what SageMaker emitted, in order."""
        self.amt.advance(seconds)
        delivered = deliver_all(self.amt.drain_events(), self.env.services)
        self.deliveries.extend(delivered)
        return delivered

    def run_until_idle(self, step: float = 60.0, limit: float = 48 * 3600) -> None:
        elapsed = 0.0
        while elapsed < limit:
            self.pump(step)
            elapsed += step
            if self.amt.idle() and not self.amt.events:
                return
        raise AssertionError("the stand-in did not go idle")

    def run_holding_terminal(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """Create a tuning job and run it to the end, delivering every event except the job's terminal
        one, which is returned (held back) instead."""
        self.env.sagemaker.create_hyper_parameter_tuning_job(**request)
        held: list[dict[str, Any]] = []
        for _ in range(48 * 60):
            self.amt.advance(60)
            for event in self.amt.drain_events():
                if event["detail"].get("HyperParameterTuningJobStatus") in {"Completed", "Stopped", "Failed"}:
                    held.append(event)
                else:
                    deliver_event(event, self.env.services)
            if self.amt.idle():
                break
        assert held, "the tuning job never finished"
        return held

    def outcomes(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [d.outcome for d in self.deliveries if kind is None or d.function == kind]


@pytest.fixture
def slack() -> Iterator[SlackWebhookServer]:
    with SlackWebhookServer() as server:
        yield server


@pytest.fixture
def world(mocked_aws: None, slack: SlackWebhookServer) -> Iterator[World]:
    clock = VirtualClock(T0)
    with AmtStandIn(clock=clock, seed=7) as amt:
        env = build_environment(slack_url=slack.url, clock=clock.now)
        yield World(amt=amt, env=env, slack=slack, deliveries=[])


@pytest.fixture
def roomy_quota(request: pytest.FixtureRequest) -> None:
    """For tests about money or notices, not capacity: the applied ml.p3.8xlarge quota of the test's
    ``world`` (when it has one) is 1,000, so every job fits. A module applies it with
    ``pytestmark = pytest.mark.usefixtures("roomy_quota")``."""
    if "world" in request.fixturenames:
        request.getfixturevalue("world").amt.set_applied_quota("ml.p3.8xlarge", 1000)
