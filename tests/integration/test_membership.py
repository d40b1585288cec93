"""Whose event is it (issue 29): an event from an account the policy does not govern is rejected with a
reason, a metric and a log line, never blocking its neighbours; a forged event naming another account in
its detail acts on nobody; a single-account deploy with no ``accounts`` is handled as before."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from governor_client.offline.environment import OfflineEnvironment, build_environment
from governor_client.simulator.runner import deliver_all, deliver_event
from tests.conftest import load_event
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.policy import Policy
from tuning_governor.policy.accounts import AccountPolicy

HOME = "123456789012"  # moto's account: the offline topic's, so the stack's home account
MEMBER = "111111111111"
OTHER_MEMBER = "222222222222"
STRANGER = "333333333333"
POLICY = Policy(mode="enforce", accounts={MEMBER: AccountPolicy(mode="enforce"), OTHER_MEMBER: AccountPolicy()})


class CountingClient:
    """A SageMaker client that records every call it is asked for, then makes it."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self._client, name)


def _tuning_event(event_id: str, name: str, account: str = HOME, *, arn_account: str | None = None) -> dict[str, Any]:
    """The sample InProgress event of job ``name``, sent from ``account`` (its ARNs naming ``arn_account``)."""
    event = copy.deepcopy(load_event("tuning-inprogress"))
    arn = f"arn:aws:sagemaker:us-east-1:{arn_account or account}:hyper-parameter-tuning-job/{name}"
    event.update(id=event_id, account=account, resources=[arn])
    event["detail"].update(HyperParameterTuningJobName=name, HyperParameterTuningJobArn=arn)
    return event


@pytest.fixture
def env(mocked_aws: None) -> OfflineEnvironment:
    environment = build_environment(quotas=False, policy=POLICY, store="memory")
    counting = CountingClient(environment.sagemaker)
    environment.services.sagemaker = SageMakerGateway(counting)  # type: ignore[arg-type]
    # A member's SageMaker: the same counting client (where a member's calls land is test_jobs_per_place's).
    environment.services.sagemaker_at = lambda place: SageMakerGateway(counting, place=place)  # type: ignore[arg-type]
    return environment


def _calls(env: OfflineEnvironment) -> list[str]:
    client = env.services.sagemaker._client  # type: ignore[attr-defined]
    assert isinstance(client, CountingClient)
    return client.calls


def test_an_event_from_an_unregistered_account_is_rejected_and_its_neighbours_go_on(
    env: OfflineEnvironment, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # Given a home event, an event from an account the policy does not list, and a member's event
    events = [
        _tuning_event("home", "home-hpo"),
        _tuning_event("stranger", "rogue-hpo", STRANGER),
        _tuning_event("member", "member-hpo", MEMBER),
    ]
    # When they are delivered in turn
    home, stranger, member = (d.outcome for d in deliver_all(events, env.services))
    # Then the stranger's is rejected with its reason, and the events around it are recorded
    assert stranger == {
        "outcome": "rejected",
        "reason": f"not governed: account {STRANGER} is not listed under accounts",
    }
    assert home["outcome"] == member["outcome"] == "recorded"
    assert env.services.store.get_job("rogue-hpo") is None
    # And a log line and two metrics say so (the rejection, and the account it came from)
    [line] = [r for r in caplog.records if r.getMessage() == "tuning event rejected"]
    assert STRANGER in str(getattr(line, "reason", ""))
    emitted = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{") and "_aws" in x]
    ungoverned = [m for m in emitted if "UngovernedAccountEvents" in m]
    assert [m["account"] for m in ungoverned] == [STRANGER]
    assert [m["RejectedEvents"] for m in emitted if "RejectedEvents" in m] == [[1.0]]


def test_a_forged_event_naming_another_account_in_its_detail_acts_on_nobody(env: OfflineEnvironment) -> None:
    # Given a member's event whose job ARN names another member (its envelope cannot be forged; its body can)
    forged = _tuning_event("forged", "victim-hpo", MEMBER, arn_account=OTHER_MEMBER)
    forged["resources"] = [f"arn:aws:sagemaker:us-east-1:{MEMBER}:hyper-parameter-tuning-job/victim-hpo"]
    # When it is delivered
    outcome = deliver_event(forged, env.services).outcome
    # Then it is rejected before anything is read or written: no SageMaker call, no job recorded
    assert outcome["outcome"] == "rejected"
    assert f"names another account or region: arn:aws:sagemaker:us-east-1:{OTHER_MEMBER}:" in outcome["reason"]
    assert _calls(env) == []
    assert env.services.store.get_job("victim-hpo") is None


def test_a_training_and_a_tag_event_from_an_unregistered_account_are_rejected(env: OfflineEnvironment) -> None:
    training = copy.deepcopy(load_event("training-completed")) | {"account": STRANGER, "resources": []}
    training["detail"].pop("TrainingJobArn", None)
    training["detail"].pop("TuningJobArn", None)
    tag = {
        "version": "0",
        "id": "tag",
        "source": "aws.tag",
        "detail-type": "Tag Change on Resource",
        "account": STRANGER,
        "time": "2026-11-30T09:30:00Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:sagemaker:us-east-1:{STRANGER}:hyper-parameter-tuning-job/rogue-hpo"],
        "detail": {"service": "sagemaker", "resource-type": "hyper-parameter-tuning-job", "tags": {}},
    }
    for event in (training, tag):
        outcome = deliver_event(event, env.services).outcome
        assert outcome["outcome"] == "rejected", outcome
        assert f"account {STRANGER} is not listed" in outcome["reason"]
    assert _calls(env) == []


def test_without_accounts_a_single_account_deploy_is_unchanged_and_organisation_mode_admits_only_home(
    env: OfflineEnvironment,
) -> None:
    # Given no accounts in the policy and no organisation: an event is handled as before, whatever its account
    env.services.policy = Policy
    assert deliver_event(_tuning_event("a", "a-hpo", STRANGER), env.services).outcome["outcome"] == "recorded"
    # When the stack is deployed in organisation mode (OrganizationId) with no accounts listed yet
    env.services.settings = env.services.settings.model_copy(update={"organization_id": "o-a1b2c3d4e5"})
    # Then only the home account's events are governed
    rejected = deliver_event(_tuning_event("b", "b-hpo", STRANGER), env.services).outcome
    assert rejected["outcome"] == "rejected"
    assert "no accounts are listed" in rejected["reason"]
    assert deliver_event(_tuning_event("c", "c-hpo"), env.services).outcome["outcome"] == "recorded"


def test_a_member_in_monitor_mode_is_judged_under_a_monitoring_policy(env: OfflineEnvironment) -> None:
    from tuning_governor.app.membership import admit

    # Given an enforcing policy listing one member in monitor mode (the default) and one enforcing
    monitored = admit(_tuning_event("m", "m-hpo", OTHER_MEMBER), env.services)
    enforced = admit(_tuning_event("e", "e-hpo", MEMBER), env.services)
    home = admit(_tuning_event("h", "h-hpo"), env.services)
    # Then the monitored member's event sees a policy that never stops, the others the policy as it is
    assert monitored.policy().mode == "monitor"
    assert monitored.policy().accounts == POLICY.accounts
    assert enforced.policy().enforcing and home.policy().enforcing
    assert env.services.policy().enforcing
