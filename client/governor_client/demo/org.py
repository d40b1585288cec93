"""The demo's organisation act: one hub governs three member accounts in two regions, on moto.

The hub is moto's default account in us-east-1. Members: ``VISION_EAST`` (team vision, us-east-1),
``VISION_WEST`` (team vision, eu-west-1) and ``BROKEN`` (us-east-1), whose member role does not trust
the hub (moto assumes any role, so the hub's STS refuses that account as the role's trust policy
would: AccessDenied). Team vision's month ($60) counts across its two accounts: its first job (in
us-east-1) finishes under it, its second (in eu-west-1) is stopped at the trial that crosses it. The
broken member's job carries a $50 budget it overruns: its events fail as "member unreachable" (the
hub's Lambda would have them retried, then dead-lettered), the sweep reports its places unreachable,
and nothing is acted on there or elsewhere: it runs to its end. Every stop is read back from moto's
state in the account and region it landed in.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, TextIO

import boto3
from botocore.exceptions import ClientError
from moto import mock_aws

from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import build_environment
from governor_client.report.page import Account, write_report
from governor_client.simulator.runner import deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from governor_client.simulator.simulation.quiet import DISCARD, quiet_handlers
from tuning_governor.adapters.assumed_roles import AssumedRoles
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.sessions import Clients
from tuning_governor.app.sweep.run import run_sweep
from tuning_governor.models.place import Place
from tuning_governor.policy import parse_policy

HUB = Place("123456789012", "us-east-1")
VISION_EAST = Place("414141414141", "us-east-1")
VISION_WEST = Place("424242424242", "eu-west-1")
BROKEN = Place("434343434343", "us-east-1")
MEMBERS = (VISION_EAST, VISION_WEST, BROKEN)
MEMBER_ROLE = "tuning-governor-member"
P3_8X = "ml.p3.8xlarge"
TEAM, TEAM_BUDGET = "vision", 60
ORG_POLICY = f"""
mode: enforce
defaults: {{budget_stop_lead_seconds: 0}}
teams: {{{TEAM}: {{monthly_budget_usd: {TEAM_BUDGET}}}}}
accounts:
  "{VISION_EAST.account}": {{team: {TEAM}, mode: enforce, regions: [us-east-1]}}
  "{VISION_WEST.account}": {{team: {TEAM}, mode: enforce, regions: [eu-west-1]}}
  "{BROKEN.account}": {{mode: enforce, regions: [us-east-1]}}
"""
TITLE = "Act 4: an organisation: three member accounts, one team across two, one broken role"
JOBS: dict[Place, tuple[str, dict[str, Any]]] = {
    VISION_EAST: ("vision-east-hpo", {"team": TEAM, "max_jobs": 2, "budget": "100000"}),
    VISION_WEST: ("vision-west-hpo", {"team": TEAM, "max_jobs": 50, "budget": "100000"}),
    BROKEN: ("nlp-broken-hpo", {"team": "nlp", "max_jobs": 6, "budget": "50"}),
}


class _HubSts:
    """The hub's STS: AssumeRole into a ``denied`` account is refused, as a role that does not trust the hub."""

    def __init__(self, denied: Collection[str]) -> None:
        self._inner = boto3.client("sts", region_name=HUB.region)
        self._denied = set(denied)

    def assume_role(self, **request: Any) -> Any:
        if request["RoleArn"].split(":")[4] in self._denied:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not trusted"}}, "AssumeRole")
        return self._inner.assume_role(**request)


class _Roles:
    """A credentials provider: the member role assumed in the place's account (``denied`` refused)."""

    def __init__(self, denied: Collection[str] = ()) -> None:
        self.roles = AssumedRoles(_HubSts(denied), MEMBER_ROLE)

    def session_for(self, place: Place) -> Any:
        return boto3.session.Session(**self.roles.session_kwargs(place.account, place.region))  # type: ignore[arg-type]


@dataclass
class OrgResult:
    """What the act did, per account: each job's end, every stop's place, the failed (retried) events."""

    statuses: dict[str, str] = field(default_factory=dict)
    """``<account>/<region>/<job>`` -> the job's status, read from moto in that account and region."""
    stops: list[str] = field(default_factory=list)
    """Every StopHyperParameterTuningJob the hub made, as ``<account>/<region>/<job>``."""
    retried: Counter[str] = field(default_factory=Counter)
    """Events per account whose handling failed (EventBridge retries them), by account."""
    unreachable: Counter[str] = field(default_factory=Counter)
    """Sweeps that found each account's place unreachable, by ``<account>/<region>``."""
    team_spent_usd: float = 0.0
    team_breach: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    """Failures that are not the broken member's (none expected)."""
    reports: dict[str, Path] = field(default_factory=dict)
    """Each member account's HTML report, when asked for."""


def _reports(store: Any, report_dir: Path) -> dict[str, Path]:
    return {
        place.account: write_report(
            store,
            report_dir / place.account,
            title=f"Tuning Governor demo: {TITLE}: account {place.account}",
            account=Account(place.account, HUB.account),
        )
        for place in MEMBERS
    }


def _wire(env: Any, result: OrgResult) -> None:
    """The hub's services reaching each member through its assumed role; every stop recorded with its place."""
    services = env.services
    clients = Clients(HUB.region, HUB.account, provider=_Roles([BROKEN.account]))

    def record(where: str) -> Callable[..., None]:
        return lambda params, **_: result.stops.append(f"{where}/{params['HyperParameterTuningJobName']}")

    @cache  # as in Lambda (app.wiring.place_sagemaker): one gateway per place
    def place_sagemaker(place: Place) -> SageMakerGateway:
        client = clients.for_place(place).sagemaker
        client.meta.events.register("provide-client-params.sagemaker.StopHyperParameterTuningJob", record(str(place)))
        return SageMakerGateway(client, sleep=lambda _s: None, place=place)

    services.sagemaker_at = place_sagemaker
    services.settings = services.settings.model_copy(update={"sweep_parallel_places": 1})
    env.sagemaker.meta.events.register("provide-client-params.sagemaker.StopHyperParameterTuningJob", record(str(HUB)))
    policy = parse_policy(ORG_POLICY, "demo organisation act")
    services.policy = lambda: policy


def _member_sagemaker(place: Place) -> Any:
    """The member's own SageMaker (its own credentials: what its users run), to create and read its job."""
    return _Roles().session_for(place).client("sagemaker", region_name=place.region)


def _create(place: Place) -> None:
    name, terms = JOBS[place]
    request = seed_tuning_request(
        name,
        team=terms["team"],
        instance_type=P3_8X,
        instance_count=8,
        max_parallel=2,
        max_jobs=terms["max_jobs"],
        extra_tags={"governance:budget-usd": terms["budget"]},
    )
    _member_sagemaker(place).create_hyper_parameter_tuning_job(**request)


def _advance(amt: AmtStandIn, services: Any, result: OrgResult, minutes: int) -> None:
    """Minute by minute: deliver every event, sweep every 5 minutes, until the stand-in is idle."""
    for minute in range(1, minutes + 1):
        amt.advance(60)
        for event in amt.drain_events():
            outcome = deliver_event(event, services).outcome
            if outcome.get("outcome") == "error":
                result.retried[event["account"]] += 1
                if event["account"] != BROKEN.account:
                    result.errors.append(f"{event['account']}: {outcome.get('error')}")
        if minute % 5 == 0:
            report = run_sweep(services)
            for place, swept in report["places"].items():
                if swept["outcome"] == "unreachable":
                    result.unreachable[place] += 1
                elif swept["errors"]:
                    result.errors.append(f"sweep {place}: {swept['errors']}")
        if amt.idle():
            return


def _read_back(env: Any, result: OrgResult, clock: Callable[[], datetime]) -> None:
    for place in MEMBERS:
        name = JOBS[place][0]
        job = _member_sagemaker(place).describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        result.statuses[f"{place}/{name}"] = str(job["HyperParameterTuningJobStatus"])
    store = env.services.store
    month = clock().strftime("%Y-%m")
    result.team_spent_usd = float((store.team_month(TEAM, month) or {}).get("finished_usd", 0))
    decisions = {d["sk"]: d for d in store.team_decisions(TEAM)}
    result.team_breach = decisions.get(f"DECISION#team-budget#breach#{month}")


def run_organisation_act(
    start: datetime, seed: int = 7, look: Callable[[], None] | None = None, report_dir: Path | None = None
) -> OrgResult:
    """Run the act on its own moto (the hub's table in memory, SNS on moto, no Slack) and return what it did.
    ``look`` is called at the end, while moto's state is still there (a test reads it). With
    ``report_dir``, each member account's HTML report (``tuning-governor report --account``) is written
    in a folder of its own there."""
    result = OrgResult()
    # The broken member's failures are logged at ERROR by the handlers: the act reports them itself.
    with mock_aws(), quiet_handlers("CRITICAL"), contextlib.redirect_stdout(DISCARD):
        clock = VirtualClock(start)
        with AmtStandIn(clock=clock, seed=seed) as amt:
            for place in (HUB, *MEMBERS):
                amt.quotas.set_applied(place.account, place.region, P3_8X, 1000)
            env = build_environment(clock=clock.now, store="memory")
            _wire(env, result)
            _create(VISION_EAST)
            _create(BROKEN)
            _advance(amt, env.services, result, minutes=6 * 60)
            _create(VISION_WEST)
            _advance(amt, env.services, result, minutes=6 * 60)
            _read_back(env, result, clock.now)
            if look is not None:
                look()
            if report_dir is not None:
                result.reports = _reports(env.services.store, report_dir)
    return result


def _job_line(key: str, status: str, result: OrgResult) -> str:
    account, region, name = key.split("/")
    if account == BROKEN.account:
        what = (
            f"unmanaged: member role refused (AssumeRole AccessDenied); {result.retried[account]} events failed"
            f" and left for EventBridge to retry, {result.unreachable[f'{account}/{region}']} sweeps found it"
            " unreachable; nothing acted on"
        )
    elif key in result.stops:
        what = f"stopped here: team {TEAM}'s month crossed (${TEAM_BUDGET}, counted across both accounts)"
    else:
        what = f"governed, not stopped (team {TEAM}, under its month)"
    return f"  {account}  {region:<10} {name:<16} {status:<10} {what}"


def print_organisation(result: OrgResult, out: TextIO) -> None:
    """The act's section: per account, its job's end and what the hub did there."""
    print(f"\n=== {TITLE} (policy mode: enforce) ===", file=out)
    print(f"  hub {HUB.account} in {HUB.region}; each member's events handled in its own account and region", file=out)
    for key, status in result.statuses.items():
        print(_job_line(key, status, result), file=out)
    spent = f"${result.team_spent_usd:,.2f}"
    breach = "breached" if result.team_breach is not None else "not breached"
    print(f"  team {TEAM}: {spent} of ${TEAM_BUDGET} this month across its two accounts ({breach})", file=out)
    print(f"  stops made: {', '.join(result.stops) or 'none'}; other failures: {len(result.errors)}", file=out)
    for account, page in result.reports.items():
        print(f"  HTML report of account {account}: {page}", file=out)


def organisation_data(result: OrgResult) -> dict[str, Any]:
    """The act's results as data (the demo's ``organisation`` key)."""
    return {
        "statuses": dict(result.statuses),
        "stops": list(result.stops),
        "retried": dict(result.retried),
        "unreachable": dict(result.unreachable),
        "team_spent_usd": result.team_spent_usd,
        "team_breached": result.team_breach is not None,
        "errors": list(result.errors),
        "reports": {account: str(page) for account, page in result.reports.items()},
    }


def play(out: TextIO, start: datetime, seed: int = 7, report_dir: Path | None = None) -> dict[str, Any]:
    """Run the act, print its section, and return its data (its unexpected failures under ``errors``)."""
    result = run_organisation_act(start, seed, report_dir=report_dir)
    print_organisation(result, out)
    return organisation_data(result)
