"""Offline reading of the permissions boundary and of what the stack's roles are granted, for one sample
deployment: every optional parameter set, with names that are deliberately *not* under the stack's name
(so a boundary resource that names them is told apart from one that names the stack).

Both documents are resolved to plain IAM JSON the same way (``Ref``, ``Fn::Sub``, ``Fn::GetAtt``,
``Fn::If``, conditions): a resource of the stack becomes the ARN CloudFormation would give it under
``SAMPLE_STACK`` (tests/template/deployer.py), and ``generalise`` turns such an ARN back into what a
document written before the stack exists can name (any region, the stack-name prefix).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.template.cfn import channel_secret_parameters, load_template, ref_target, resources_of_type, role_statements
from tests.template.deployer import ACCOUNT, REGION, SAMPLE_STACK, SHAPES

ROOT = Path(__file__).resolve().parents[2]
BOUNDARY_TEMPLATE = ROOT / "docs" / "iam" / "permissions-boundary.yaml"
STACK_PREFIX = "tuning-governor"

#: The stack's webhook channels besides Slack (kind -> its secret's parameter), read from the template.
CHANNEL_SECRETS = channel_secret_parameters(load_template())
#: One sample secret per such channel, for the stack's parameter; the boundary takes them as one list.
CHANNEL_SAMPLES = {
    parameter: f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:ml-platform/{kind}-GhIjKl"
    for kind, parameter in CHANNEL_SECRETS.items()
}
BOUNDARY_CHANNEL_LIST = "ChannelWebhookSecretArns"
SAMPLE_PARAMETERS: dict[str, str | list[str]] = {
    "SlackWebhookSecretArn": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:ml-platform/slack-AbCdEf",
    **CHANNEL_SAMPLES,
    BOUNDARY_CHANNEL_LIST: list(CHANNEL_SAMPLES.values()),
    "SlackSecretPrefix": "ml-platform/team-slack/",
    "TeamTopicPrefix": "ml-team-",
    "PolicyParameterName": "/ml-platform/governance-policy",
    "SubmitterRoleArns": [f"arn:aws:iam::{ACCOUNT}:role/ml-submit-nlp", f"arn:aws:iam::{ACCOUNT}:role/ml-submit-cv"],
    "SubmitExecutionRoleArns": [f"arn:aws:iam::{ACCOUNT}:role/ml-exec-nlp", f"arn:aws:iam::{ACCOUNT}:role/ml-exec-cv"],
    "OrganizationId": "o-a1b2c3d4e5",
    "MemberRoleName": "ml-governor-member",
}
NO_VALUE = "<AWS::NoValue>"
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::StackName": SAMPLE_STACK,
    "AWS::NoValue": NO_VALUE,
}

# What the AWS managed policies SAM attaches grant (AWSLambdaBasicExecutionRole, AWSXrayWriteOnlyAccess),
# on what a function uses them: the logs actions (granted on "*") on its own log group, /aws/lambda/<its
# name>, the name CloudFormation generates under the stack; X-Ray's actions take no resource.
_LOG_GROUP = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/{SAMPLE_STACK}/*"
MANAGED: dict[str, list[tuple[str, str]]] = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": [
        ("logs:CreateLogGroup", _LOG_GROUP),
        ("logs:CreateLogStream", _LOG_GROUP),
        ("logs:PutLogEvents", _LOG_GROUP),
    ],
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": [
        ("xray:PutTraceSegments", "*"),
        ("xray:PutTelemetryRecords", "*"),
        ("xray:GetSamplingRules", "*"),
        ("xray:GetSamplingTargets", "*"),
        ("xray:GetSamplingStatisticSummaries", "*"),
    ],
}


@dataclass(frozen=True)
class Grant:
    """One action on one resource pattern, granted by one statement (its Condition resolved)."""

    origin: str
    action: str
    resource: str
    condition: frozenset[tuple[str, str, tuple[str, ...]]]  # _condition_terms of the statement


def _condition_terms(condition: Any) -> frozenset[tuple[str, str, tuple[str, ...]]]:
    """A Condition block as its terms (operator, key, values), the template's region read as any region:
    a statement with more terms is the stricter one. StringEquals and StringLike are one operator here
    (a value with no wildcard means the same under both)."""
    return frozenset(
        (
            operator.replace("StringEquals", "StringLike"),
            key,
            tuple(sorted(str(v).replace(f".{REGION}.", ".*.") for v in _as_list(values))),
        )
        for operator, keys in (condition or {}).items()
        for key, values in keys.items()
    )


class Resolver:
    """Resolves intrinsics of one template for ``SAMPLE_PARAMETERS`` (stack resources named under ``SAMPLE_STACK``)."""

    def __init__(self, template: dict[str, Any], parameters: dict[str, str | list[str]] = SAMPLE_PARAMETERS) -> None:
        self.template = template
        self.parameters = {
            name: parameters.get(name, spec.get("Default", "")) for name, spec in template.get("Parameters", {}).items()
        }

    def _arn(self, logical_id: str) -> str:
        resource = self.template["Resources"][logical_id]
        return SHAPES[resource["Type"]].arn(logical_id, resource, self.template)

    def _ref(self, name: str) -> Any:
        if name in PSEUDO:
            return PSEUDO[name]
        if name in self.parameters:
            return self.parameters[name]
        resource_type = self.template["Resources"][name]["Type"]
        arn = self._arn(name)
        return re.split(r"[:/]", arn)[-1] if resource_type == "AWS::Scheduler::ScheduleGroup" else arn

    def _getatt(self, logical_id: str, attribute: str) -> str:
        arn = self._arn(logical_id)
        return arn if attribute == "Arn" else re.split(r"[:/]", arn)[-1]

    def _sub(self, text: str, names: dict[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in names:
                return str(self.value(names[name]))
            if "." in name and name.split(".", 1)[0] in self.template["Resources"]:
                return self._getatt(*name.split(".", 1))
            return str(self._ref(name))

        return re.sub(r"\$\{([^}!]+)\}", one, text)

    def condition(self, name: str) -> bool:
        return bool(self.value(self.template["Conditions"][name]))

    def _join(self, args: list[Any]) -> str:
        separator, items = args
        flat = [str(x) for item in self.value(items) for x in (item if isinstance(item, list) else [item])]
        return str(separator).join(flat)

    def _if(self, args: list[Any]) -> Any:
        name, when_true, when_false = args
        return self.value(when_true if self.condition(name) else when_false)

    def _sub_node(self, sub: Any) -> str:
        return self._sub(sub, {}) if isinstance(sub, str) else self._sub(sub[0], sub[1])

    def _equals(self, args: list[Any]) -> bool:
        left, right = self.value(args)
        return bool(left == right)

    def value(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.value(item) for item in node]
        if not isinstance(node, dict):
            return node
        intrinsics: dict[str, Any] = {
            "Ref": self._ref,
            "Condition": self.condition,
            "Fn::GetAtt": lambda args: self._getatt(*args),
            "Fn::Sub": self._sub_node,
            "Fn::Join": self._join,
            "Fn::Not": lambda args: not self.value(args[0]),
            "Fn::Equals": self._equals,
            "Fn::If": self._if,
        }
        if len(node) == 1 and next(iter(node)) in intrinsics:
            ((name, args),) = node.items()
            return intrinsics[name](args)
        return {key: self.value(item) for key, item in node.items()}


def _drop_no_value(node: Any) -> Any:
    if isinstance(node, list):
        return [_drop_no_value(item) for item in node if item != NO_VALUE]
    if isinstance(node, dict):
        return {key: _drop_no_value(item) for key, item in node.items() if item != NO_VALUE}
    return node


def boundary_template() -> dict[str, Any]:
    return load_template(BOUNDARY_TEMPLATE)


def render_boundary(parameters: dict[str, str | list[str]] = SAMPLE_PARAMETERS) -> dict[str, Any]:
    """The boundary's policy document as IAM would store it for a deployment with ``parameters``."""
    template = boundary_template()
    policies = resources_of_type(template, "AWS::IAM::ManagedPolicy")
    assert len(policies) == 1, "the boundary template creates exactly one managed policy"
    (policy,) = policies.values()
    document: dict[str, Any] = _drop_no_value(
        Resolver(template, parameters).value(policy["Properties"]["PolicyDocument"])
    )
    return document


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def policy_grants(document: dict[str, Any], origin: str) -> list[Grant]:
    """Every (action, resource) an already resolved policy document allows."""
    return [
        Grant(f"{origin}/{statement.get('Sid', index)}", action, resource, _condition_terms(statement.get("Condition")))
        for index, statement in enumerate(_as_list(document["Statement"]))
        if statement["Effect"] == "Allow"
        for action in _as_list(statement["Action"])
        for resource in _as_list(statement["Resource"])
    ]


def template_grants(cfn_template: dict[str, Any]) -> list[Grant]:
    """Every (action, resource) any role of the translated template is granted, for ``SAMPLE_PARAMETERS``
    (every optional statement present), the AWS managed policies SAM attaches included."""
    resolver = Resolver(cfn_template)
    grants: list[Grant] = []
    for role_id, role in resources_of_type(cfn_template, "AWS::IAM::Role").items():
        for statement in role_statements(cfn_template, role_id):
            if statement.effect == "Allow":
                body = resolver.value(statement.body)
                grants += policy_grants({"Statement": [body]}, statement.origin)
        for arn in role["Properties"].get("ManagedPolicyArns", []):
            if ref_target(arn) is None:  # the stack's own managed policies are in role_statements
                name = resolver.value(arn)
                grants += [Grant(f"{role_id}->{name}", action, on, frozenset()) for action, on in MANAGED[name]]
    return grants


def generalise(arn: str) -> str:
    """What a document written before the stack exists can name for ``arn``: any region, and the stack's
    resources by the stack-name prefix (``tuning-governor-prod-GovernorTable-AbC…`` -> ``tuning-governor*``)."""
    arn = re.sub(rf"^(arn:aws:[a-z0-9-]+:){re.escape(REGION)}:", r"\1*:", arn)
    return re.sub(rf"{re.escape(SAMPLE_STACK)}[^:/]*", f"{STACK_PREFIX}*", arn, flags=re.IGNORECASE)
