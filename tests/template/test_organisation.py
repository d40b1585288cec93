"""Organisation mode (issue 29): member/template.yaml and the hub's organisation resources.

The member role grants exactly what the code calls there (``permissions.member_actions()``, derived like
the hub roles), each action scoped as the hub scopes it; the member rules forward exactly what the hub's
rules match; the member role's trust policy and the hub's bus policy are evaluated for principals inside
and outside the organisation: no principal outside it can send or assume.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.template.cfn import ROOT, getatt_target, ref_target, resources_of_type
from tests.template.test_translated import SCOPES
from tuning_governor.adapters.assumed_roles import ROLE_ARN
from tuning_governor.app.permissions import FUNCTIONS, member_actions

MEMBER_TEMPLATE = ROOT / "member" / "template.yaml"
ORG = "o-a1b2c3d4e5"
OTHER_ORG = "o-zzzzzzzzzz"
HUB_ROLES = [
    "arn:aws:iam::111111111111:role/tuning-governor-TuningEventsFunctionRole-AbC",
    "arn:aws:iam::111111111111:role/tuning-governor-SweepFunctionRole-XyZ",
]


@pytest.fixture(scope="module")
def member() -> dict[str, Any]:
    from tests.template.cfn import load_template

    return load_template(MEMBER_TEMPLATE)


def _role(member: dict[str, Any]) -> dict[str, Any]:
    return dict(member["Resources"]["MemberRole"]["Properties"])


def _statements(role: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for policy in role["Policies"] for s in policy["PolicyDocument"]["Statement"]]


# ------------------------------------------------------------------------------------------------
# A tiny evaluator of one resource policy's Allow statements, for the keys these policies use
# ------------------------------------------------------------------------------------------------
def _resolve(value: Any, parameters: dict[str, Any]) -> Any:
    name = ref_target(value)
    return parameters[name] if name is not None else value


def _allows(statement: dict[str, Any], parameters: dict[str, Any], principal: str, org: str) -> bool:
    """Whether an Allow ``statement`` admits ``principal`` (an ARN) of organisation ``org``."""
    assert statement["Effect"] == "Allow"
    allowed = statement["Principal"]
    if allowed != "*":
        arns = _resolve(allowed["AWS"], parameters)
        if principal not in ([arns] if isinstance(arns, str) else arns):
            return False
    for operator, keys in statement.get("Condition", {}).items():
        assert operator == "StringEquals", f"{operator}: this evaluator reads StringEquals only"
        for key, expected in keys.items():
            assert key == "aws:PrincipalOrgID", f"{key}: this evaluator reads aws:PrincipalOrgID only"
            if org != _resolve(expected, parameters):
                return False
    return True


# ------------------------------------------------------------------------------------------------
# The member role
# ------------------------------------------------------------------------------------------------
def test_the_member_role_grants_exactly_what_the_hub_calls_there(member: dict[str, Any]) -> None:
    granted = {
        a for s in _statements(_role(member)) for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    # Every SageMaker and Service Quotas action of the functions that act in members, and nothing else
    assert granted == member_actions()
    assert {f for f, needs in FUNCTIONS.items() if needs.members} == {
        "TuningEventsFunction",
        "TrainingEventsFunction",
        "SweepFunction",
        "BudgetCheckFunction",
    }


def test_the_exact_check_would_catch_a_missing_stop(member: dict[str, Any]) -> None:
    statements = _statements(_role(member))
    without_stop = {a for s in statements for a in s["Action"] if a != "sagemaker:StopHyperParameterTuningJob"}
    assert member_actions() - without_stop == {"sagemaker:StopHyperParameterTuningJob"}


def test_each_member_action_points_only_where_the_hub_scopes_it(member: dict[str, Any]) -> None:
    for statement in _statements(_role(member)):
        assert statement["Effect"] == "Allow"
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for action in statement["Action"]:
            assert [r for r in resources if r not in SCOPES[action]] == [], (action, resources)


def test_the_member_role_is_named_as_the_hub_assumes_it(member: dict[str, Any], sam_template: dict[str, Any]) -> None:
    assert _role(member)["RoleName"] == {"Fn::Sub": "${MemberRoleName}-${AWS::Region}"}
    assert ROLE_ARN.endswith(":role/{name}-{region}")
    hub = sam_template["Parameters"]["MemberRoleName"]
    spec = member["Parameters"]["MemberRoleName"]
    assert (spec["Default"], spec["AllowedPattern"]) == (hub["Default"], hub["AllowedPattern"])


@pytest.mark.parametrize(
    ("principal", "org", "admitted"),
    [
        (HUB_ROLES[0], ORG, True),  # a hub function role, from the organisation
        (HUB_ROLES[1], ORG, True),
        (HUB_ROLES[0], OTHER_ORG, False),  # the same ARN outside the organisation (a recreated account)
        ("arn:aws:iam::111111111111:role/someone-else", ORG, False),  # another role of the organisation
        ("arn:aws:iam::999999999999:root", OTHER_ORG, False),
    ],
)
def test_only_the_hubs_function_roles_of_the_organisation_can_assume_the_member_role(
    member: dict[str, Any], principal: str, org: str, admitted: bool
) -> None:
    [statement] = _role(member)["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Action"] == "sts:AssumeRole"
    parameters = {"HubRoleArns": HUB_ROLES, "OrganizationId": ORG}
    assert _allows(statement, parameters, principal, org) is admitted


# ------------------------------------------------------------------------------------------------
# Forwarding
# ------------------------------------------------------------------------------------------------
def _hub_patterns(sam_template: dict[str, Any]) -> list[str]:
    functions = ("TuningEventsFunction", "TrainingEventsFunction")
    return sorted(
        json.dumps(event["Properties"]["Pattern"], sort_keys=True)
        for function in functions
        for event in sam_template["Resources"][function]["Properties"]["Events"].values()
        if event["Type"] == "EventBridgeRule"
    )


def test_the_member_forwards_exactly_what_the_hubs_event_rules_match(
    member: dict[str, Any], sam_template: dict[str, Any]
) -> None:
    rules = resources_of_type(member, "AWS::Events::Rule")
    forwarded = sorted(json.dumps(r["Properties"]["EventPattern"], sort_keys=True) for r in rules.values())
    assert forwarded == _hub_patterns(sam_template)
    assert len(forwarded) == 4


def test_every_forwarding_rule_targets_the_hub_bus_with_its_role_retries_and_a_dead_letter_queue(
    member: dict[str, Any],
) -> None:
    for rule_id, rule in resources_of_type(member, "AWS::Events::Rule").items():
        [target] = rule["Properties"]["Targets"]
        assert ref_target(target["Arn"]) == "HubEventBusArn", rule_id
        assert getatt_target(target["RoleArn"]) == "ForwardingRole", rule_id
        assert getatt_target(target["DeadLetterConfig"]["Arn"]) == "ForwardDeadLetterQueue", rule_id
        assert target["RetryPolicy"]["MaximumEventAgeInSeconds"] == 86400, rule_id
    queue_policy = member["Resources"]["ForwardDeadLetterQueuePolicy"]["Properties"]["PolicyDocument"]
    [allow] = queue_policy["Statement"]
    senders = {getatt_target(arn) for arn in allow["Condition"]["ArnEquals"]["aws:SourceArn"]}
    assert senders == set(resources_of_type(member, "AWS::Events::Rule"))


def test_the_forwarding_role_may_only_put_events_on_the_hub_bus(member: dict[str, Any]) -> None:
    role = member["Resources"]["ForwardingRole"]["Properties"]
    [trust] = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "events.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    [statement] = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
    assert (statement["Action"], ref_target(statement["Resource"])) == ("events:PutEvents", "HubEventBusArn")


# ------------------------------------------------------------------------------------------------
# The hub's organisation mode
# ------------------------------------------------------------------------------------------------
def test_organisation_resources_exist_only_in_organisation_mode(sam_template: dict[str, Any]) -> None:
    assert sam_template["Conditions"]["IsOrganisation"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "OrganizationId"}, ""]}]
    }
    assert sam_template["Parameters"]["OrganizationId"]["Default"] == ""
    conditioned = {k for k, r in sam_template["Resources"].items() if r.get("Condition") == "IsOrganisation"}
    assert conditioned == {"OrganisationBusPolicy", "UnmanagedMemberAlarm"}


@pytest.mark.parametrize(
    ("principal", "org", "admitted"),
    [
        ("arn:aws:iam::222222222222:role/member-ForwardingRole-x", ORG, True),
        ("arn:aws:iam::999999999999:role/outsider", OTHER_ORG, False),
        ("arn:aws:iam::999999999999:root", "", False),  # no organisation at all
    ],
)
def test_the_bus_admits_put_events_from_the_organisation_only_in_one_statement(
    cfn_template: dict[str, Any], principal: str, org: str, admitted: bool
) -> None:
    [policy] = resources_of_type(cfn_template, "AWS::Events::EventBusPolicy").values()
    properties = policy["Properties"]
    statement = properties["Statement"]
    assert properties["EventBusName"] == "default"
    assert (statement["Principal"], statement["Action"]) == ("*", "events:PutEvents")
    # One statement for the whole organisation, far under EventBridge's 10,240-character policy cap
    assert len(json.dumps(statement)) < 1000
    assert _allows(statement, {"OrganizationId": ORG}, principal, org) is admitted


def test_the_unmanaged_member_alarm_names_the_account_the_code_counts(cfn_template: dict[str, Any]) -> None:
    alarm = cfn_template["Resources"]["UnmanagedMemberAlarm"]["Properties"]
    [query] = alarm["Metrics"]
    assert re.fullmatch(
        r"SELECT SUM\(MembersUnreachable\) FROM SCHEMA\(TuningGovernor, account, region, service\) "
        r"GROUP BY account, region",
        query["Expression"],
    )
    assert [ref_target(a) for a in alarm["AlarmActions"]] == ["OperationsTopic"]
    # and the code emits that metric with those dimensions (tuning_governor.breakdowns.member_unreachable)
    source = Path(ROOT / "layers/governor/tuning_governor/breakdowns.py").read_text()
    assert '"MembersUnreachable", account, region' in source
    assert 'add_dimension(name="account"' in source and 'add_dimension(name="region"' in source


def test_the_hub_may_assume_only_member_roles_and_only_in_organisation_mode(cfn_template: dict[str, Any]) -> None:
    from tests.template.cfn import role_statements

    for function_id, needs in FUNCTIONS.items():
        role_id = getatt_target(cfn_template["Resources"][function_id]["Properties"]["Role"])
        assert role_id is not None
        assumes = [s for s in role_statements(cfn_template, role_id) if "sts:AssumeRole" in s.actions]
        if not needs.members:
            assert assumes == [], function_id
            continue
        [statement] = assumes
        assert statement.condition == "IsOrganisation", function_id
        assert statement.resources == [{"Fn::Sub": "arn:${AWS::Partition}:iam::*:role/${MemberRoleName}-*"}]
