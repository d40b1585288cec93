"""An organisation on moto: 3 accounts x 2 regions governed by one hub, its sweep walking every place.

The hub is moto's default account in us-east-1 (the world's stack). Every other place (the hub's own
account in eu-west-1, two member accounts in both regions) is reached through the client factory with
a credentials provider that assumes the member role there (moto keys every backend by account and
region, so a call made with the wrong credentials lands elsewhere; AssumeRole into another account id
works). The AMT stand-in runs the jobs of every account and region and emits each one's events with
its own envelope.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from governor_client.simulator.runner import deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tuning_governor.adapters.assumed_roles import AssumedRoles
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.sessions import Clients
from tuning_governor.app.sweep.run import run_sweep
from tuning_governor.models.place import Place
from tuning_governor.policy import parse_policy

pytestmark = pytest.mark.usefixtures("roomy_quota")

HOME = Place("123456789012", "us-east-1")
HUB, A, B = "123456789012", "111111111111", "222222222222"
REGIONS = ("us-east-1", "eu-west-1")
PLACES = [Place(account, region) for account in (HUB, A, B) for region in REGIONS]
NAME = "p3-budget"
P3_8X = "ml.p3.8xlarge"


def policy_text(accounts: Collection[str] = (HUB, A, B), extra: str = "") -> str:
    listed = "".join(f'  "{a}": {{mode: enforce, regions: [us-east-1, eu-west-1]}}\n' for a in accounts)
    return f"mode: enforce\ndefaults: {{budget_stop_lead_seconds: 0}}\n{extra}accounts:\n{listed}"


class _Sts:
    """STS whose AssumeRole into the ``denied`` accounts is refused (their member role does not trust us)."""

    def __init__(self, denied: Collection[str]) -> None:
        self.inner = boto3.client("sts", region_name=HOME.region)
        self.denied = set(denied)

    def assume_role(self, **request: Any) -> Any:
        if request["RoleArn"].split(":")[4] in self.denied:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not trusted"}}, "AssumeRole")
        return self.inner.assume_role(**request)


class Roles:
    """A credentials provider: moto credentials of the member role assumed in the place's account."""

    def __init__(self, denied: Collection[str] = ()) -> None:
        self.roles = AssumedRoles(_Sts(denied), "tg-member")

    def session_for(self, place: Place) -> Any:
        return boto3.session.Session(**self.roles.session_kwargs(place.account, place.region))


@dataclass
class Org:
    world: World
    stops: list[str] = field(default_factory=list)
    """Every StopHyperParameterTuningJob the governor made, as ``<account>/<region>/<name>``."""
    clients: dict[Place, Any] = field(default_factory=dict)
    """Each place's own SageMaker client (its own credentials), to create and read its jobs."""

    def use_policy(self, text: str) -> None:
        policy = parse_policy(text, "test")
        self.world.env.services.policy = lambda: policy

    def create(self, place: Place, request: dict[str, Any]) -> None:
        self.clients[place].create_hyper_parameter_tuning_job(**request)

    def status(self, place: Place, name: str = NAME) -> str:
        job = self.clients[place].describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        return str(job["HyperParameterTuningJobStatus"])

    def run(self, keep: Callable[[dict[str, Any]], bool], minutes: int, sweep_every: int = 5) -> list[dict[str, Any]]:
        """Advance ``minutes`` minutes: deliver the events ``keep`` keeps (the others are lost), and sweep
        every ``sweep_every`` minutes. Returns the sweeps' reports."""
        reports = []
        for minute in range(1, minutes + 1):
            self.world.amt.advance(60)
            for event in self.world.amt.drain_events():
                if keep(event):
                    deliver_event(event, self.world.env.services)
            if minute % sweep_every == 0:
                reports.append(run_sweep(self.world.env.services))
            if self.world.amt.idle():
                break
        return reports


def organisation(world: World, text: str = "", denied: Collection[str] = ()) -> Org:
    """The world's services reaching every place through the factory (``denied`` accounts' roles refuse)."""
    services = world.env.services
    assert services.home == HOME
    org = Org(world)
    clients = Clients(HOME.region, HOME.account, provider=Roles(denied))

    def record(where: str) -> Callable[..., None]:
        return lambda params, **_: org.stops.append(f"{where}/{params['HyperParameterTuningJobName']}")

    @cache  # as in Lambda (app.wiring.place_sagemaker): one gateway per place
    def place_sagemaker(place: Place) -> SageMakerGateway:
        client = clients.for_place(place).sagemaker
        client.meta.events.register("provide-client-params.sagemaker.StopHyperParameterTuningJob", record(str(place)))
        return SageMakerGateway(client, sleep=lambda _s: None, place=place)

    services.sagemaker_at = place_sagemaker
    # One place at a time: moto's DynamoDB transactions deep-copy the table unlocked, so concurrent
    # ones race in moto (DynamoDB itself takes concurrent calls: the default is 4 places at once).
    services.settings = services.settings.model_copy(update={"sweep_parallel_places": 1})
    world.env.sagemaker.meta.events.register(
        "provide-client-params.sagemaker.StopHyperParameterTuningJob", record(str(HOME))
    )
    org.use_policy(text or policy_text())
    for place in PLACES:
        org.clients[place] = (
            world.env.sagemaker
            if place == HOME
            else Roles().session_for(place).client("sagemaker", region_name=place.region)
        )
    return org


def budget_job(budget: str = "50", team: str = "nlp", max_jobs: int = 50) -> dict[str, Any]:
    return seed_tuning_request(
        NAME,
        team=team,
        instance_type=P3_8X,
        instance_count=8,
        max_parallel=2,
        max_jobs=max_jobs,
        extra_tags={"governance:budget-usd": budget},
    )


def none(_event: dict[str, Any]) -> bool:
    return False


def at(event: dict[str, Any]) -> Place:
    return Place(event["account"], event["region"])


def test_with_every_event_lost_the_sweep_stops_each_places_job_in_its_own_account_and_region(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    org = organisation(world)
    # Given a job of the same name over a $50 budget in each of the 6 places, and every event lost
    for place in PLACES:
        org.create(place, budget_job())

    # When the sweep runs every 5 minutes until they end
    reports = org.run(none, minutes=6 * 60)

    # Then each place's job was stopped once, in its own account and region, and never another's
    assert sorted(org.stops) == sorted(f"{place}/{NAME}" for place in PLACES)
    assert all(org.status(place) == "Stopped" for place in PLACES)
    # And the sweep walked the 5 places away from home every time, none failing
    assert all(
        {p: r["outcome"] for p, r in report["places"].items()} == {str(p): "swept" for p in PLACES[1:]}
        for report in reports
    )
    assert all(report["errors"] == [] for report in reports)
    assert [r for report in reports for r in report["places"].values() if r["errors"]] == []
    # And the dashboard's per-account figures: one stop in each place
    captured = capsys.readouterr().out
    blobs = [json.loads(line) for line in captured.splitlines() if line.startswith('{"_aws"')]
    stops = sorted(f"{b['account']}/{b['region']}" for b in blobs if "StopsByAccount" in b)
    assert stops == sorted(str(place) for place in PLACES)


def test_the_sweep_finds_the_job_whose_events_were_all_lost_in_one_member_account_and_region(world: World) -> None:
    org = organisation(world)
    lost = Place(A, "eu-west-1")
    for place in PLACES:
        org.create(place, budget_job())

    # When every event is delivered but those of member A in eu-west-1
    [first] = org.run(lambda event: at(event) != lost, minutes=5)

    # Then the first sweep discovers that job there, and only there
    places = first["places"]
    assert places[str(lost)]["discovered"] == [NAME]
    assert {p for p, r in places.items() if r["discovered"]} == {str(lost)}
    assert first["discovered"] == []
    # And it is governed from then on: stopped on its budget in its own place
    org.run(lambda event: at(event) != lost, minutes=6 * 60)
    assert f"{lost}/{NAME}" in org.stops
    assert org.status(lost) == "Stopped"
    assert sorted(org.stops) == sorted(f"{place}/{NAME}" for place in PLACES)


def test_a_member_whose_role_is_denied_is_counted_and_the_other_places_are_still_swept(world: World) -> None:
    org = organisation(world, denied=[B])
    for place in PLACES:
        org.create(place, budget_job())

    # When a sweep runs with every event lost
    [report] = org.run(none, minutes=5)

    # Then B's two places are reported unreachable and every other place is swept and its job found
    outcomes = {p: r["outcome"] for p, r in report["places"].items()}
    assert outcomes == {str(p): "unreachable" if p.account == B else "swept" for p in PLACES[1:]}
    assert all(report["places"][str(p)]["discovered"] == [NAME] for p in PLACES[1:] if p.account != B)
    assert report["discovered"] == [NAME]  # the home place's
    # And nothing was acted on in B; the unreachable places are the stalest, tried first next time
    org.run(none, minutes=6 * 60)
    assert not any(stop.startswith(B) for stop in org.stops)
    assert {org.status(p) for p in PLACES if p.account == B} == {"Completed"}  # ran to their end, untouched
    swept = world.env.services.store.places_swept()
    assert set(swept) == {str(p) for p in PLACES[1:] if p.account != B}


def test_an_account_added_to_accounts_is_governed_within_one_sweep(world: World) -> None:
    org = organisation(world, policy_text([HUB, A]))
    new = Place(B, "us-east-1")
    org.create(new, budget_job())
    # Given sweeps that govern the hub's account and A (B's job runs ungoverned, its events rejected)
    before = org.run(none, minutes=10)
    assert all(str(new) not in report["places"] for report in before)

    # When B is added to accounts
    org.use_policy(policy_text([HUB, A, B]))
    [report] = org.run(none, minutes=5)

    # Then the next sweep walks B first (never swept: the stalest) and finds its job
    assert list(report["places"])[:2] == [f"{B}/eu-west-1", str(new)]
    assert report["places"][str(new)]["discovered"] == [NAME]
    # And governed from that sweep on: stopped on its budget in its own account and region
    org.run(none, minutes=6 * 60)
    assert f"{new}/{NAME}" in org.stops
    assert org.status(new) == "Stopped"


def test_places_not_begun_within_the_time_budget_are_carried_to_the_next_sweep_stalest_first(world: World) -> None:
    organisation(world)
    services = world.env.services
    left = iter([300.0, 200.0, 50.0, 40.0, 30.0] + [300.0] * 5)

    # When the first sweep has time for two places only (60 s are kept in reserve)
    world.amt.advance(60)
    first = run_sweep(services, remaining=lambda: next(left))
    second = run_sweep(services, remaining=lambda: next(left))

    # Then two places are swept, three carried over; the next sweep begins with those three
    outcomes = [r["outcome"] for r in first["places"].values()]
    assert outcomes == ["swept", "swept", "deferred", "deferred", "deferred"]
    deferred = [p for p, r in first["places"].items() if r["outcome"] == "deferred"]
    assert list(second["places"])[:3] == deferred
    assert all(r["outcome"] == "swept" for r in second["places"].values())


@pytest.mark.parametrize("lost", [False, True], ids=["events", "events-lost-in-b"])
def test_a_team_budget_spanning_two_accounts_stops_the_job_that_crosses_it(world: World, lost: bool) -> None:
    org = organisation(world, policy_text(extra="teams: {vision: {monthly_budget_usd: 60}}\n"))
    first, second = Place(A, "us-east-1"), Place(B, "eu-west-1")
    # Given team vision's first job in account A, finished under the team's $60 month
    org.create(first, budget_job(budget="100000", team="vision", max_jobs=2))
    org.run(lambda _e: True, minutes=6 * 60)
    assert org.status(first) == "Completed"
    store = world.env.services.store
    month = world.env.services.clock().strftime("%Y-%m")
    spent_in_a = float(store.team_month("vision", month)["finished_usd"])
    assert 0 < spent_in_a < 30

    # When the team's next job runs in account B, another region, with sweeps running and its events
    # delivered (or all lost: then the sweep's walk of B's place alone finds and judges it)
    org.create(second, budget_job(budget="100000", team="vision"))
    org.run(lambda event: not (lost and at(event) == second), minutes=6 * 60)

    # Then it is stopped on the team's month, counted across both accounts in one ledger
    assert org.stops == [f"{second}/{NAME}"]
    breach = {d["sk"]: d for d in store.team_decisions("vision")}[f"DECISION#team-budget#breach#{month}"]
    assert float(breach["numbers"]["spent_usd"]) >= 60
    spent_in_b = float(store.team_month("vision", month)["finished_usd"]) - spent_in_a
    assert 0 < spent_in_b < 60  # B alone never crossed it


@pytest.mark.parametrize("lost", [False, True], ids=["events", "events-lost"])
def test_a_member_in_monitor_mode_is_never_stopped_by_an_event_or_the_sweep(
    world: World, lost: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    monitored = f'  "{A}": {{mode: monitor, regions: [us-east-1, eu-west-1]}}\n'
    enforced = "".join(f'  "{a}": {{mode: enforce, regions: [us-east-1, eu-west-1]}}\n' for a in (HUB, B))
    org = organisation(
        world, f"mode: enforce\ndefaults: {{budget_stop_lead_seconds: 0}}\naccounts:\n{monitored}{enforced}"
    )
    # Given a job over its $50 budget in every place; the policy enforces, member A's terms monitor
    for place in PLACES:
        org.create(place, budget_job())

    # When they run with sweeps every 5 minutes (their events delivered, or all lost)
    org.run(lambda _e: not lost, minutes=6 * 60)

    # Then every job but A's was stopped in its own place; A's ran to its end, its breach reported only
    assert sorted(org.stops) == sorted(f"{p}/{NAME}" for p in PLACES if p.account != A)
    assert {org.status(p) for p in PLACES if p.account == A} == {"Completed"}
    store = world.env.services.store
    for region in REGIONS:
        decisions = store.decisions(f"{A}/{region}/{NAME}")
        assert {d["action"] for d in decisions if d["verdict"] in ("breach", "enforced")} == {"would-stop"}
    # And each job's spend is on its own place's line of the dashboard, the stops on the enforced ones
    # (with every event lost, a job that ran to its end waits for its trials' records past the last sweep)
    captured = capsys.readouterr().out
    blobs = [json.loads(line) for line in captured.splitlines() if line.startswith('{"_aws"')]
    spent = {f"{b['account']}/{b['region']}": b["AccountSpendUSD"][0] for b in blobs if "AccountSpendUSD" in b}
    assert set(spent) <= {str(place) for place in PLACES}
    assert lost or set(spent) == {str(place) for place in PLACES}
    assert spent and all(usd > 0 for usd in spent.values())
    stops = sorted(f"{b['account']}/{b['region']}" for b in blobs if "StopsByAccount" in b)
    assert stops == sorted(str(p) for p in PLACES if p.account != A)


def test_a_member_jobs_one_time_check_judges_it_in_its_own_place_at_the_crossing(world: World) -> None:
    from tests.integration.test_accrued_budgets import LongTrials, big_job
    from tuning_governor.adapters.checks import PendingChecks, schedule_name
    from tuning_governor.app.checks.budget import run_budget_check
    from tuning_governor.ports import CHECK_KEY

    world.amt.engine.behaviour = LongTrials()
    org = organisation(world)
    checks = PendingChecks()
    world.env.services.checks = checks
    member = Place(A, "eu-west-1")
    key = f"{member}/big-job"
    # Given a $50 job in member A's eu-west-1 (4 trials of 8 x ml.p3.8xlarge, 3 h), its events delivered
    org.create(member, big_job("big-job", tags={"governance:budget-usd": "50"}))
    store = world.env.services.store
    while len((store.get_job(key) or {}).get("running") or {}) < 4:
        world.amt.advance(5)
        for event in world.amt.drain_events():
            deliver_event(event, world.env.services)
    # Then its one check is asked for in its place: the input names its account and region
    due = checks.next_due()
    assert due is not None
    assert checks.input_for(key) == {CHECK_KEY: {"job": "big-job", "account": A, "region": "eu-west-1"}}
    assert len(schedule_name(key)) <= 64 and "/" not in schedule_name(key)
    # When the clock reaches it (no sweep runs) and it fires
    while world.amt.clock.now() < due:
        world.amt.advance(min(5.0, (due - world.amt.clock.now()).total_seconds()))
        for event in world.amt.drain_events():
            deliver_event(event, world.env.services)
    assert org.stops == []
    result = run_budget_check(checks.input_for(key), world.env.services)
    # Then the member's job is stopped there, and nowhere else
    assert [d["action"] for d in result["decisions"] if d["rule"] == "budget"] == ["stopped"]
    assert org.stops == [key]


def test_a_check_naming_an_account_the_policy_does_not_list_acts_on_nobody(world: World) -> None:
    from tuning_governor.app.checks.budget import run_budget_check
    from tuning_governor.ports import CHECK_KEY

    org = organisation(world, policy_text([HUB, A]))
    org.create(Place(B, "us-east-1"), budget_job())

    result = run_budget_check({CHECK_KEY: {"job": NAME, "account": B, "region": "us-east-1"}}, world.env.services)

    assert result["outcome"] == "rejected"
    assert "not governed" in result["reason"]
    assert org.stops == []
