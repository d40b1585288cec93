"""``validate --members`` / ``--account ID`` on moto: each member's role, the hub's calls there, its rules.

Three members of one hub (moto's default account): one deployed as member/template.yaml deploys it
(both forwarding rules on its default bus, targeting the hub's bus), one whose training-job rule is
missing, one whose member role refuses the hub (AssumeRole denied: moto assumes any role, so STS is
wrapped to refuse that account as its trust policy would).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

import governor_client.cli.aws
from governor_client.__main__ import main
from governor_client.validate.members import FORWARDING
from tests.integration.conftest import World

GOOD, NO_RULE, DENIED = "313131313131", "323232323232", "343434343434"
HUB_BUS = "arn:aws:events:us-east-1:123456789012:event-bus/default"
POLICY = f"""\
mode: enforce
accounts:
  "{GOOD}": {{mode: enforce, regions: [us-east-1]}}
  "{NO_RULE}": {{mode: enforce, regions: [us-east-1]}}
  "{DENIED}": {{mode: monitor, regions: [us-east-1]}}
"""


class _RefusingSts:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def assume_role(self, **request: Any) -> Any:
        if request["RoleArn"].split(":")[4] == DENIED:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not trusted"}}, "AssumeRole")
        return self.inner.assume_role(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _member_events(account: str) -> Any:
    role = f"arn:aws:iam::{account}:role/tuning-governor-member-us-east-1"
    creds = boto3.client("sts", region_name="us-east-1").assume_role(RoleArn=role, RoleSessionName="setup")
    c = creds["Credentials"]
    return boto3.client(
        "events",
        region_name="us-east-1",
        aws_access_key_id=c["AccessKeyId"],
        aws_secret_access_key=c["SecretAccessKey"],
        aws_session_token=c["SessionToken"],
    )


def _deploy_rules(account: str, detail_types: list[str]) -> None:
    events = _member_events(account)
    for detail_type in detail_types:
        name = f"StackSet-tg-member-{FORWARDING[detail_type]}-ABC123"
        pattern = {"source": ["aws.sagemaker"], "detail-type": [detail_type]}
        events.put_rule(Name=name, EventPattern=json.dumps(pattern), State="ENABLED")
        events.put_targets(Rule=name, Targets=[{"Id": "hub", "Arn": HUB_BUS}])


@pytest.fixture
def members(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _deploy_rules(GOOD, list(FORWARDING))
    _deploy_rules(NO_RULE, ["SageMaker HyperParameter Tuning Job State Change"])
    real = governor_client.cli.aws.cli_client

    def cli_client(service: str, region: str | None = None, **kwargs: Any) -> Any:
        made = real(service, region, **kwargs)
        return _RefusingSts(made) if service == "sts" else made

    monkeypatch.setattr(governor_client.cli.aws, "cli_client", cli_client)
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


def _validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["validate", *args, "--region", "us-east-1", "--hub-bus-arn", HUB_BUS, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_members_are_checked_each_with_its_own_finding(members: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, result = _validate(capsys, str(members), "--members")
    by_account = {(f["path"], f["code"]) for f in result["findings"]}
    assert by_account == {
        (f'accounts["{GOOD}"]', "member-ok"),
        (f'accounts["{NO_RULE}"]', "member-rule-missing"),
        (f'accounts["{DENIED}"]', "member-role-not-assumable"),
    }
    assert code == 2 and result["status"] == "broken"
    [missing] = [f for f in result["findings"] if f["code"] == "member-rule-missing"]
    assert "'SageMaker Training Job State Change'" in missing["message"]
    assert "ForwardTrainingJobStateChanges" in missing["message"]
    [denied] = [f for f in result["findings"] if f["code"] == "member-role-not-assumable"]
    assert "tuning-governor-member-us-east-1" in denied["message"] and "AccessDenied" in denied["message"]


def test_one_good_member_validates_clean(members: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, result = _validate(capsys, str(members), "--account", GOOD)
    assert code == 0
    assert [f["code"] for f in result["findings"]] == ["member-ok"]


def test_a_rule_targeting_another_bus_does_not_count(members: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given the good member's rules, validated against a bus they do not target
    other = HUB_BUS.replace("123456789012", "999999999990")
    code = main(["validate", str(members), "--account", GOOD, "--hub-bus-arn", other, "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 2
    assert [f["code"] for f in result["findings"]] == ["member-rule-missing", "member-rule-missing"]


def test_an_account_not_under_accounts_is_an_error(members: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, result = _validate(capsys, str(members), "--account", "353535353535")
    assert code == 2 and [f["code"] for f in result["findings"]] == ["member-not-listed"]


def test_a_denied_member_is_one_error_and_no_crash(members: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, result = _validate(capsys, str(members), "--account", DENIED)
    assert code == 2 and [f["code"] for f in result["findings"]] == ["member-role-not-assumable"]


def test_account_takes_a_12_digit_id_or_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    assert main(["validate", str(path), "--account", "12345"]) == 2
    assert "'12345' is not an account id (12 digits)" in capsys.readouterr().err
