"""docs/iam/deployer-policy.json deploys the stack for every documented parameter combination and
nothing more: each resource the translated template creates (CaptureEvents true and false, every optional
channel set) is allowed by a statement scoped to stacks named ``tuning-governor*``; the roles it creates
carry the permissions boundary (docs/iam/permissions-boundary.yaml, checked in test_permissions_boundary.py);
roles go only to the services the template hands them to; and parliament (an offline IAM policy linter) finds
nothing in the deployer policy."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.template.cfn import resources_of_type
from tests.template.deployer import (
    BOUNDARY_ARN,
    ROLE_HANDOVERS,
    SAMPLE_STACK,
    SHAPES,
    UNSCOPABLE,
    action_arn,
    allowing,
    refs_to_roles,
    required_actions,
    resources_deployed,
)

# One worker runs the deployer-policy modules: deployer.py's cached build is made once.
pytestmark = pytest.mark.xdist_group("deployer")

ROOT = Path(__file__).resolve().parents[2]
DEPLOYER_TEXT = (ROOT / "docs" / "iam" / "deployer-policy.json").read_text()
DEPLOYER = json.loads(DEPLOYER_TEXT)

# What `sam deploy` itself calls besides the stack's resources: the change set (with the Serverless
# transform) on the stack; SAM's artifacts stack (read) and bucket (objects under the stack's prefix).
PLUMBING = {
    "cloudformation:CreateChangeSet",
    "cloudformation:DeleteChangeSet",
    "cloudformation:DeleteStack",
    "cloudformation:DescribeChangeSet",
    "cloudformation:DescribeStackEvents",
    "cloudformation:DescribeStackResource",
    "cloudformation:DescribeStackResources",
    "cloudformation:DescribeStacks",
    "cloudformation:ExecuteChangeSet",
    "cloudformation:GetTemplate",
    "cloudformation:GetTemplateSummary",
    "cloudformation:ListStackResources",
    "cloudformation:ValidateTemplate",
    "s3:GetBucketLocation",
    "s3:GetObject",
    "s3:ListBucket",
    "s3:PutObject",
    "iam:PassRole",
}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _requires_boundary(statement: dict[str, Any]) -> bool:
    condition = statement.get("Condition", {}).get("ArnEquals", {})
    wanted = condition.get("iam:PermissionsBoundary")
    return wanted is not None and all(v.endswith(BOUNDARY_ARN.rsplit(":", 1)[1]) for v in _as_list(wanted))


# The capture bucket's objects, granted outright: a deployer who may set the bucket's policy (CaptureBucketPolicy,
# TLS only) and lifecycle rule could grant itself these anyway, so the policy states that power instead of
# hiding it (parliament's RESOURCE_POLICY_PRIVILEGE_ESCALATION); and the operator uses them to read a capture
# for `replay` and to clear the bucket, which the stack retains (DeletionPolicy: Retain), when retiring it.
CAPTURE_OBJECTS = {"s3:DeleteObject", "s3:GetObject", "s3:PutObject"}


def _parliament(text: str) -> list[tuple[str, str]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # parliament imports pkg_resources
        from parliament import analyze_policy_string  # type: ignore[import-untyped]  # no stubs

        return [(f.issue, str(f.detail)) for f in analyze_policy_string(text).findings]


# Actions newer than parliament 1.6.4's action database (2025-04), which it would report as unknown (and then
# skip its privilege-escalation check): the S3 handler reads a bucket's ABAC setting, GetBucketAbac (Amazon S3
# API Reference, https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetBucketAbac.html). They are added to
# its database, as a Read action on a bucket, for the lint; nothing else is changed or ignored.
NEWER_THAN_PARLIAMENT = {"s3:GetBucketAbac"}


def _parliament_knows_newer_actions() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        import parliament  # type: ignore[import-untyped]  # no stubs

    for action in sorted(NEWER_THAN_PARLIAMENT):
        prefix, name = action.split(":")
        service = next(s for s in parliament.iam_definition if s["prefix"] == prefix)
        if not any(p["privilege"] == name for p in service["privileges"]):
            service["privileges"].append(
                {
                    "access_level": "Read",
                    "description": f"{action} (added for the lint: newer than parliament's database)",
                    "privilege": name,
                    "resource_types": [{"condition_keys": [], "dependent_actions": [], "resource_type": "bucket*"}],
                }
            )


def test_parliament_finds_nothing_in_the_deployer_policy() -> None:
    # Without the database entry, the one finding is the unknown action (so the entry is what is added) ...
    assert {issue for issue, _ in _parliament(DEPLOYER_TEXT)} <= {"UNKNOWN_ACTION"}
    _parliament_knows_newer_actions()
    # ... and with it, nothing at any severity: the privilege-escalation check runs on the whole policy.
    assert _parliament(DEPLOYER_TEXT) == []


def test_without_the_capture_objects_statement_parliament_sees_the_hidden_power() -> None:
    _parliament_knows_newer_actions()
    policy = json.loads(DEPLOYER_TEXT)
    policy["Statement"] = [s for s in policy["Statement"] if s.get("Sid") != "CaptureObjects"]
    issues = {issue for issue, _ in _parliament(json.dumps(policy))}
    assert issues == {"RESOURCE_POLICY_PRIVILEGE_ESCALATION"}


@pytest.mark.parametrize("capture", [True, False], ids=["CaptureEvents=true", "CaptureEvents=false"])
def test_every_resource_of_the_template_is_deployable_and_only_in_the_stack(
    cfn_template: dict[str, Any], capture: bool
) -> None:
    deployed = resources_deployed(cfn_template, capture)
    assert ("CaptureBucket" in deployed) is capture
    missing: list[str] = []
    for logical_id, resource in sorted(deployed.items()):
        resource_type = resource["Type"]
        assert resource_type in SHAPES, f"{logical_id}: {resource_type} has no entry in tests/template/deployer.py"
        boundary_actions = SHAPES[resource_type].boundary_actions
        for action in sorted(required_actions(resource_type)):
            arn = action_arn(resource_type, action, logical_id, resource, cfn_template)
            statements = allowing(DEPLOYER, action, arn)
            if not statements:
                missing.append(f"{logical_id}: {action} on {arn}")
            elsewhere = arn.replace(SAMPLE_STACK, "payments-prod")
            if action not in UNSCOPABLE and allowing(DEPLOYER, action, elsewhere):
                missing.append(f"{logical_id}: {action} also allowed on another stack's {elsewhere}")
            if action in boundary_actions and not all(_requires_boundary(s) for s in statements):
                missing.append(f"{logical_id}: {action} allowed without the permissions boundary")
    assert missing == []


def test_every_role_the_template_creates_carries_the_permissions_boundary(cfn_template: dict[str, Any]) -> None:
    roles = resources_of_type(cfn_template, "AWS::IAM::Role")
    assert len(roles) >= 7
    for logical_id, role in roles.items():
        boundary = role["Properties"].get("PermissionsBoundary")
        assert boundary == {
            "Fn::If": ["HasPermissionsBoundary", {"Ref": "PermissionsBoundaryArn"}, {"Ref": "AWS::NoValue"}]
        }, logical_id


def test_roles_go_only_to_the_services_the_template_hands_them_to(cfn_template: dict[str, Any]) -> None:
    roles = resources_of_type(cfn_template, "AWS::IAM::Role")
    handed: set[str] = set()
    for resource_type, service in ROLE_HANDOVERS.items():
        for resource in resources_of_type(cfn_template, resource_type).values():
            if any(role in roles for role in refs_to_roles(resource["Properties"])):
                handed.add(service)
    # The functions hand the scheduler its role at run time (their own policy); the deployer does not.
    assert handed == {"lambda.amazonaws.com", "firehose.amazonaws.com", "events.amazonaws.com"}
    pass_role = [s for s in DEPLOYER["Statement"] if "iam:PassRole" in _as_list(s["Action"])]
    assert pass_role, "the deployer must pass the stack's roles"
    for statement in pass_role:
        assert _as_list(statement["Action"]) == ["iam:PassRole"]
        assert set(_as_list(statement["Condition"]["StringEquals"]["iam:PassedToService"])) == handed
        assert all(r.startswith("arn:aws:iam::") and ":role/tuning-governor" in r for r in statement["Resource"])


def test_the_deployer_policy_grants_nothing_the_template_does_not_need(cfn_template: dict[str, Any]) -> None:
    needed = set(PLUMBING) | CAPTURE_OBJECTS
    for resource in resources_deployed(cfn_template, capture=True).values():
        needed |= required_actions(resource["Type"])
    granted = {a for s in DEPLOYER["Statement"] if s["Effect"] == "Allow" for a in _as_list(s["Action"])}
    assert granted - needed == set()
    assert all("NotAction" not in s and "NotResource" not in s for s in DEPLOYER["Statement"])
    for statement in DEPLOYER["Statement"]:
        if "*" in _as_list(statement["Resource"]):
            assert not [a for a in _as_list(statement["Action"]) if ":Delete" in a or ":Put" in a], statement


def test_the_deployer_cannot_loosen_or_drop_the_boundary() -> None:
    for action in (
        "iam:CreatePolicyVersion",
        "iam:DeletePolicy",
        "iam:DeletePolicyVersion",
        "iam:SetDefaultPolicyVersion",
    ):
        assert allowing(DEPLOYER, action, BOUNDARY_ARN) == [], action
    role = f"arn:aws:iam::111122223333:role/{SAMPLE_STACK}-X"
    for action in ("iam:DeleteRolePermissionsBoundary", "iam:CreateUser", "iam:SetDefaultPolicyVersion"):
        assert allowing(DEPLOYER, action, role) == [], action
    # a boundary may be put on a role (a stack first deployed without one), only this one
    assert all(_requires_boundary(s) for s in allowing(DEPLOYER, "iam:PutRolePermissionsBoundary", role))
