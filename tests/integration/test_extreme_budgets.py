"""Budgets at the edges of their range, through the real handlers (issue 18, finding 6): no arithmetic on
them may overflow a datetime or a Decimal, on any event, check or sweep."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import budget_check
from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import build_environment
from governor_client.offline.slack_server import SlackWebhookServer
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from tests.integration.conftest import T0, World
from tests.integration.test_accrued_budgets import P3_8X, LongTrials, big_job, run_sweep
from tests.integration.test_governance import decisions, use_policy
from tuning_governor.policy import PolicyError
from tuning_governor.policy.fields import MAX_BUDGET_USD
from tuning_governor.ports import CHECK_KEY

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("extreme_budgets")

_names = itertools.count()


@pytest.fixture(scope="module")
def shared_world(slack_module: SlackWebhookServer) -> Iterator[World]:
    from moto import mock_aws

    with mock_aws():
        clock = VirtualClock(T0)
        with AmtStandIn(clock=clock, seed=7) as amt:
            amt.set_applied_quota(P3_8X, 100_000)
            env = build_environment(slack_url=slack_module.url, clock=clock.now)
            yield World(amt=amt, env=env, slack=slack_module, deliveries=[])


@pytest.fixture(scope="module")
def slack_module() -> Iterator[SlackWebhookServer]:
    with SlackWebhookServer() as server:
        yield server


def run_job(world: World, name: str, tags: dict[str, str]) -> list[dict[str, Any]]:
    """One small job (1 trial of 8 x ml.p3.8xlarge for an hour, $117.50) run to its end; every event's
    outcome, a one-time check and a sweep while it runs."""
    world.amt.engine.behaviour = LongTrials(hours=1)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job(name, max_parallel=1, max_jobs=1, tags=tags))
    outcomes: list[dict[str, Any]] = []
    for minute in range(100):
        world.amt.advance(60)
        outcomes += [deliver_event(e, world.env.services).outcome for e in world.amt.drain_events()]
        if minute == 20:
            outcomes.append(
                budget_check.handler(
                    {CHECK_KEY: {"job": name}}, FakeLambdaContext("budget-check"), services=world.env.services
                )
            )
            outcomes.append(run_sweep(world))
        if world.amt.idle() and not world.amt.events:
            break
    return outcomes


AMOUNTS = st.one_of(
    st.sampled_from(["100000000", "1" + "0" * 15, "9" * 38, "1" + "0" * 30, "0.01", "1"]),
    st.integers(min_value=1, max_value=10**40).map(str),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tag=AMOUNTS, default=st.sampled_from(["1e30", "100000000", "1e9", "50", "1e12"]))
def test_extreme_budgets_never_fail_an_event_a_check_or_a_sweep(shared_world: World, tag: str, default: str) -> None:
    # Given a policy whose default budget is at the edge (or past it: then the policy is refused) and a job
    # whose budget tag is an extreme amount
    text = f"mode: enforce\ndefaults:\n  job_budget_usd: {default}\n"
    if Decimal(default) > MAX_BUDGET_USD:
        with pytest.raises(PolicyError, match="job_budget_usd"):
            use_policy(shared_world, text)
        text = "mode: enforce\n"
    policy = use_policy(shared_world, text)
    tags = {"governance:budget-usd": tag}
    name = f"edge-{next(_names)}"
    # When the job runs, a one-time check fires and a sweep judges it
    outcomes = run_job(shared_world, name, tags)
    # Then nothing fails: no event is retried to the DLQ, the check and the sweep judged
    assert [o for o in outcomes if o.get("outcome") == "error"] == []
    assert [o for o in outcomes if o.get("errors")] == []
    # and the budget in force (a tag past the largest budget is ignored: the default decides) is judged
    budget = policy.budget_for(tags).usd
    breached = [d for d in decisions(shared_world, name) if d["sk"] == "DECISION#budget#breach"]
    assert bool(breached) == (budget is not None and budget < 100), (budget, breached)
