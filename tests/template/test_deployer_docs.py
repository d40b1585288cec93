"""What the deploy guide (docs/how-to/deploy.md) tells the people who deploy it (the deployer's IAM policy: test_deployer_policy.py): the
SCP protects the policy's governance tags, the cost table is the script's output, and what
uninstalling keeps is what the template keeps."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from governor_client.prices import running_cost
from tests.template.cfn import channel_secret_parameters, resources_of_type

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "docs/how-to/deploy.md").read_text()
SCP = json.loads((ROOT / "docs" / "iam" / "scp-protect-governance-tags.json").read_text())
DEFAULT_POLICY = yaml.safe_load(
    (ROOT / "layers" / "governor" / "tuning_governor" / "data" / "default-policy.yaml").read_text()
)


def test_the_scp_denies_the_policys_governance_tags_to_everyone_but_the_platform_role() -> None:
    # Request by request in tests/template/test_scp.py; here: the keys it names and where README says so.
    statements = {s["Sid"]: s for s in SCP["Statement"]}
    deny = statements["OnlyThePlatformTeamSetsGovernanceTags"]
    assert all(s["Effect"] == "Deny" and "aws:PrincipalArn" in s["Condition"]["ArnNotLike"] for s in SCP["Statement"])
    assert {"sagemaker:AddTags", "sagemaker:DeleteTags", "sagemaker:CreateHyperParameterTuningJob"} <= set(
        deny["Action"]
    )
    keys = set(deny["Condition"]["ForAnyValue:StringEqualsIgnoreCase"]["aws:TagKeys"])
    assert keys == {DEFAULT_POLICY["exempt_tag"], DEFAULT_POLICY["budget_tag"]}
    assert statements["AJobCarriesItsCreatorsTeam"]["Condition"]["StringNotEquals"] == {
        f"aws:RequestTag/{DEFAULT_POLICY['team_tag']}": f"${{aws:PrincipalTag/{DEFAULT_POLICY['team_tag']}}}"
    }
    for key in (*keys, DEFAULT_POLICY["team_tag"], "owner"):
        assert f"`{key}`" in README


def test_the_readme_cost_table_is_what_the_script_computes_today(cfn_template: dict[str, Any]) -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "governor_client.prices.running_cost"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed in README, (
        "README's running-cost table is stale: paste `python -m governor_client.prices.running_cost`"
    )
    # and the script counts the alarms the template really has (a single-account deploy's: organisation
    # mode adds its unmanaged-member alarm)
    alarms = {
        logical_id: alarm
        for logical_id, alarm in resources_of_type(cfn_template, "AWS::CloudWatch::Alarm").items()
        if alarm.get("Condition") != "IsOrganisation"
    }
    assert running_cost.Usage().alarms == len(alarms)
    assert f"CloudWatch: {len(alarms)} alarms" in README


@pytest.mark.parametrize("trials", [1_000, 10_000, 100_000])
def test_the_running_cost_grows_with_trials_and_no_line_is_free_by_accident(trials: int) -> None:
    cost = running_cost.monthly_cost(trials)
    more = running_cost.monthly_cost(trials * 10)
    assert all(value > 0 for value in cost.values())
    assert sum(more.values()) > sum(cost.values())


def test_what_uninstalling_keeps_is_what_the_template_keeps(cfn_template: dict[str, Any]) -> None:
    retained = {
        name for name, resource in cfn_template["Resources"].items() if resource.get("DeletionPolicy") == "Retain"
    }
    assert retained == {"GovernorTable", "CaptureBucket"}
    assert "keeps the DynamoDB table (`DeletionPolicy: Retain`" in README
    assert "it also keeps the capture bucket (`DeletionPolicy: Retain`" in README
    assert resources_of_type(cfn_template, "AWS::Scheduler::ScheduleGroup"), "pending checks go with their group"


def test_the_readme_parameter_table_lists_every_parameter_of_the_template(sam_template: dict[str, Any]) -> None:
    table = README.split("Parameters:\n", 1)[1].strip().split("\n\n", 1)[0]
    listed = set(re.findall(r"^\| `(\w+)` \|", table, flags=re.MULTILINE))
    # The webhook channels' secret parameters share one row: a new channel's needs no edit here.
    channels = set(channel_secret_parameters(sam_template).values())
    assert "| `<Channel>WebhookSecretArn` |" in table and channels and not channels & listed
    assert listed | channels == set(sam_template["Parameters"])
    assert all(re.fullmatch(r"[A-Z]\w*WebhookSecretArn", name) for name in channels), channels


def test_the_rollout_captures_events_before_it_replays_them() -> None:
    guide = (ROOT / "docs/how-to/roll-out.md").read_text()
    rollout = "1. " + guide.split("\n1. ", 1)[1].split("\n\n", 1)[0]
    step1, step2 = rollout.split("\n2. ", 1)[0], rollout.split("\n2. ", 1)[1].split("\n3. ", 1)[0]
    assert "`CaptureEvents=true`" in step1, "step 2 replays the capture: step 1 must turn it on"
    assert "DynamoDB history" not in step2, "replay reads captured events, not the table"
    assert "s3://" in step2


def test_the_readme_tells_the_deployer_to_create_the_boundary_first() -> None:
    section = README.split("**What a deployer needs.**", 1)[1].split("\n\n**", 1)[0]
    for needed in (
        "docs/iam/permissions-boundary.yaml",
        "--parameter-overrides",
        "TuningGovernorPermissionsBoundary",
        "PermissionsBoundaryArn=",
        "tuning-governor",
        "aws-sam-cli-managed-default",
    ):
        assert needed in section, needed
