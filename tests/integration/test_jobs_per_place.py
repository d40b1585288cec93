"""Jobs in another account and region, on moto: the envelope's place travels with the job.

The hub is moto's default account in us-east-1 (the world's stack). A member account in eu-west-1 is
reached through the client factory with a credentials provider that assumes a role there (moto keys
every backend by account and region, so a call made with the wrong credentials lands elsewhere).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
import pytest

from governor_client.simulator.runner import deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tuning_governor.adapters.assumed_roles import AssumedRoles
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.sessions import Clients
from tuning_governor.app.sweep.run import run_sweep
from tuning_governor.models.place import Place
from tuning_governor.policy import parse_policy

HOME = Place("123456789012", "us-east-1")
MEMBER = Place("111111111111", "eu-west-1")
NAME = "p3-budget"
P3_8X = "ml.p3.8xlarge"
BUDGET = "mode: enforce\ndefaults: {budget_stop_lead_seconds: 0}\n"


class MemberRoles:
    """A credentials provider: moto credentials of an assumed role in the place's account."""

    def __init__(self) -> None:
        self.roles = AssumedRoles(boto3.client("sts", region_name=HOME.region), "tg-member")

    def session_for(self, place: Place) -> Any:
        return boto3.session.Session(**self.roles.session_kwargs(place.account, place.region))


def _member_world(world: World, policy_text: str = BUDGET) -> tuple[Any, list[str]]:
    """The world's services reaching the member place through the factory; the member's SageMaker
    client (made with its own credentials) and the stop calls the governor made there."""
    services = world.env.services
    assert services.home == HOME
    clients = Clients(HOME.region, HOME.account, provider=MemberRoles())
    stops: list[str] = []

    @cache  # as in Lambda (app.wiring.place_sagemaker): one gateway per place
    def place_sagemaker(place: Place) -> SageMakerGateway:
        client = clients.for_place(place).sagemaker
        client.meta.events.register(
            "provide-client-params.sagemaker.StopHyperParameterTuningJob",
            lambda params, **_: stops.append(f"{place}/{params['HyperParameterTuningJobName']}"),
        )
        return SageMakerGateway(client, sleep=lambda _s: None, place=place)

    services.sagemaker_at = place_sagemaker
    policy = parse_policy(policy_text, "test")
    services.policy = lambda: policy
    member = MemberRoles().session_for(MEMBER).client("sagemaker", region_name=MEMBER.region)
    return member, stops


def _status(client: Any, name: str) -> str:
    return str(
        client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)["HyperParameterTuningJobStatus"]
    )


def _request(budget: str | None, max_jobs: int = 50) -> dict[str, Any]:
    tags = {"governance:budget-usd": budget} if budget else None
    return seed_tuning_request(
        NAME, team="nlp", instance_type=P3_8X, instance_count=8, max_parallel=2, max_jobs=max_jobs, extra_tags=tags
    )


def _run(world: World, limit: int = 48 * 60) -> list[dict[str, Any]]:
    outcomes = []
    for _ in range(limit):
        world.amt.advance(60)
        outcomes += [deliver_event(event, world.env.services).outcome for event in world.amt.drain_events()]
        if world.amt.idle():
            break
    return outcomes


@pytest.mark.usefixtures("roomy_quota")
def test_a_member_jobs_stop_lands_in_its_account_and_region_and_its_items_carry_the_place(world: World) -> None:
    member, stops = _member_world(world)
    # Given a job named NAME at home (no budget) and one of the same name in the member place ($50 budget)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**_request(None))
    member.create_hyper_parameter_tuning_job(**_request("50"))

    # When their events are delivered until the member job crosses its budget and stops, a sweep
    # (which lists the home place only) running meanwhile
    _run(world, limit=5)
    swept = run_sweep(world.env.services)
    _run(world)

    # Then the sweep took the member job for neither lost nor its home namesake
    assert (swept["errors"], swept["finalised"], swept["discovered"]) == ([], [], [])

    # Then the stop was made in the member's account and region only
    assert stops == [f"{MEMBER}/{NAME}"]
    assert _status(member, NAME) == "Stopped"
    assert _status(world.env.sagemaker, NAME) != "Stopped"
    store = world.env.services.store
    away_key = f"{MEMBER.account}/{MEMBER.region}/{NAME}"
    # And each job has its own items: the member's under the qualified key, the home one's plain
    away, home = store.items(away_key), store.items(NAME)
    assert {i["pk"] for i in away} == {f"JOB#{away_key}"}
    assert {i["pk"] for i in home} == {f"JOB#{NAME}"}
    away_decisions = {i["sk"] for i in away if str(i["sk"]).startswith("DECISION#")}
    assert "DECISION#budget#breach" in away_decisions
    assert not any(str(i["sk"]).startswith("DECISION#budget") for i in home)
    # And the trials of each went to its own job (same trial names in both places)
    away_trials = [i for i in away if str(i["sk"]).startswith("TRIAL#")]
    home_trials = [i for i in home if str(i["sk"]).startswith("TRIAL#")]
    assert away_trials and home_trials
    assert all(i["job_key"] == away_key for i in away_trials)
    assert all(i["job_key"] == NAME for i in home_trials)
    summary = store.get_summary(away_key)
    assert summary is not None and summary.status == "Stopped"


@pytest.mark.usefixtures("roomy_quota")
def test_each_place_admits_against_its_own_ledger(world: World) -> None:
    # Given a policy quota of 16 ml.p3.8xlarge: one job of 2 x 8 instances fills it
    member, stops = _member_world(world, f"mode: enforce\nquotas: {{{P3_8X}: 16}}\n")
    home_stops: list[str] = []
    world.env.sagemaker.meta.events.register(
        "provide-client-params.sagemaker.StopHyperParameterTuningJob",
        lambda params, **_: home_stops.append(params["HyperParameterTuningJobName"]),
    )
    world.env.sagemaker.create_hyper_parameter_tuning_job(**_request(None, max_jobs=2))
    member.create_hyper_parameter_tuning_job(**_request(None, max_jobs=2))

    # When both arrive (one in each place) and run
    world.amt.advance(60)
    for event in world.amt.drain_events():
        deliver_event(event, world.env.services)
    store = world.env.services.store
    home_ledger = store.read_ledger()
    member_ledger = store.ledger_at("CAPACITY#111111111111#eu-west-1").read_ledger()

    # Then each is admitted in its own place's ledger (one shared ledger would refuse the second)
    assert stops == [] and home_stops == []
    assert set(home_ledger.reservations) == {NAME}
    assert set(member_ledger.reservations) == {f"{MEMBER.account}/{MEMBER.region}/{NAME}"}
    # And each one's end releases its own reservation (marked ended, or pruned once that is old)
    _run(world)
    home_ledger, member_ledger = store.read_ledger(), store.ledger_at("CAPACITY#111111111111#eu-west-1").read_ledger()
    assert (home_ledger.reservations, member_ledger.reservations) == ({}, {})
    assert set(home_ledger.ended) == {NAME}
    assert set(member_ledger.ended) == {f"{MEMBER.account}/{MEMBER.region}/{NAME}"}
    assert stops == [] and home_stops == []
