"""What the README tells the people who deploy it: the deployer's IAM policy covers the template, the
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

from governor_sim import running_cost
from tests.template.cfn import resources_of_type

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DEPLOYER = json.loads((ROOT / "docs" / "iam" / "deployer-policy.json").read_text())
SCP = json.loads((ROOT / "docs" / "iam" / "scp-protect-governance-tags.json").read_text())
DEFAULT_POLICY = yaml.safe_load(
    (ROOT / "layers" / "governor" / "tuning_governor" / "data" / "default-policy.yaml").read_text()
)
# CloudFormation service names -> IAM service prefixes, where they differ by more than case.
PREFIX = {"KinesisFirehose": "firehose", "CloudWatch": "cloudwatch", "Events": "events", "Logs": "logs"}


def _allowed_actions(policy: dict[str, Any]) -> set[str]:
    actions: set[str] = set()
    for statement in policy["Statement"]:
        if statement["Effect"] == "Allow":
            value = statement["Action"]
            actions |= {value} if isinstance(value, str) else set(value)
    return actions


def test_the_deployer_policy_can_create_and_delete_every_resource_type_of_the_template(
    cfn_template: dict[str, Any],
) -> None:
    actions = _allowed_actions(DEPLOYER)
    types = {resource["Type"] for resource in cfn_template["Resources"].values()}
    assert types, "the translated template has resources"
    for resource_type in sorted(types):
        _, service, _thing = resource_type.split("::")
        prefix = PREFIX.get(service, service.lower())
        granted = {a.split(":", 1)[1] for a in actions if a.startswith(f"{prefix}:")}
        assert any(a.startswith("Create") or a.startswith("Put") or a.startswith("Publish") for a in granted), (
            f"{resource_type}: the deployer policy cannot create it ({prefix}:*)"
        )
        assert any(a.startswith("Delete") for a in granted), f"{resource_type}: the deployer policy cannot delete it"
    # SAM deploys through change sets with the Serverless transform, and passes the functions' roles
    assert {"cloudformation:CreateChangeSet", "cloudformation:ExecuteChangeSet", "iam:PassRole"} <= actions
    resources = json.dumps(DEPLOYER)
    assert "transform/Serverless-2016-10-31" in resources
    assert not re.search(r"\d{12}", resources), "no account id in the example policy"


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
        [sys.executable, "-m", "governor_sim.running_cost"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed in README, "README's running-cost table is stale: paste `python -m governor_sim.running_cost`"
    # and the script counts the alarms the template really has
    alarms = resources_of_type(cfn_template, "AWS::CloudWatch::Alarm")
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
