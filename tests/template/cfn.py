"""Offline helpers for reading template.yaml: parse its YAML, translate it with SAM, walk IAM policies.

Nothing here talks to AWS: the SAM translator gets a region-only boto3 session and a fake
managed-policy map, and local CodeUri/ContentUri values are swapped for placeholder S3 URIs (the
translator insists on S3, as cfn-lint's own SAM handling does).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"

# The translator resolves managed policy *names* through this map; the template uses none by name,
# so any name SAM needed would be a surprise worth failing on (KeyError) rather than a network call.
FAKE_MANAGED_POLICY_MAP: dict[str, str] = {
    "AWSLambdaBasicExecutionRole": "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "AWSXrayWriteOnlyAccess": "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
}


class _CfnLoader(yaml.SafeLoader):
    """SafeLoader that turns CloudFormation short-form tags (!Ref, !Sub, ...) into their long forms."""


def _construct_intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        assert isinstance(node, yaml.MappingNode)
        value = loader.construct_mapping(node, deep=True)
    if suffix in {"Ref", "Condition"}:
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_CfnLoader.add_multi_constructor("!", _construct_intrinsic)


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """Return the SAM template as plain dicts, intrinsics in long form."""
    data = yaml.load(path.read_text(), Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass
    assert isinstance(data, dict), f"{path} is not a YAML mapping"
    return data


def translate(sam_template: dict[str, Any]) -> dict[str, Any]:
    """Return the CloudFormation template SAM would deploy (parameters left as Refs)."""
    import boto3
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    template = copy.deepcopy(sam_template)
    for resource in template.get("Resources", {}).values():
        properties = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str) and not properties[key].startswith("s3://"):
                properties[key] = f"s3://placeholder-bucket/{properties[key].strip('/')}"

    translator = Translator(
        managed_policy_map=None,
        sam_parser=Parser(),
        boto_session=boto3.session.Session(region_name=REGION),
    )
    translated: dict[str, Any] = translator.translate(
        template,
        parameter_values={},
        get_managed_policy_map=lambda: FAKE_MANAGED_POLICY_MAP,
    )
    return translated


def resources_of_type(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == resource_type
    }


def getatt_target(value: Any) -> str | None:
    """The logical id in ``{"Fn::GetAtt": [id, "Arn"]}``, else None."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return str(logical_id) if attribute == "Arn" else None
    return None


def ref_target(value: Any) -> str | None:
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return str(value["Ref"])
    return None


@dataclass(frozen=True)
class Statement:
    """One IAM policy statement, and where it came from."""

    origin: str  # e.g. "TuningEventsFunctionRole/TuningEventsFunctionRolePolicy1"
    condition: str | None  # template condition guarding it (Fn::If), if any
    body: dict[str, Any]

    @property
    def effect(self) -> str:
        return str(self.body["Effect"])

    @property
    def actions(self) -> list[str]:
        action = self.body.get("Action", [])
        return [action] if isinstance(action, str) else list(action)

    @property
    def resources(self) -> list[Any]:
        resource = self.body.get("Resource", [])
        return resource if isinstance(resource, list) else [resource]


def _unwrap_if(item: Any) -> Iterator[tuple[str | None, Any]]:
    """Yield (condition, value) for a value that may be ``Fn::If`` (both branches, minus NoValue)."""
    if isinstance(item, dict) and "Fn::If" in item:
        condition, when_true, when_false = item["Fn::If"]
        for branch in (when_true, when_false):
            if ref_target(branch) != "AWS::NoValue":
                yield condition, branch
    else:
        yield None, item


def _statements(document: dict[str, Any], origin: str, condition: str | None) -> Iterator[Statement]:
    statements = document["Statement"]
    for statement in statements if isinstance(statements, list) else [statements]:
        for inner_condition, body in _unwrap_if(statement):
            yield Statement(origin, condition or inner_condition, body)


def role_statements(template: dict[str, Any], role_id: str) -> Iterator[Statement]:
    """Every inline statement of ``role_id`` plus those of the stack's managed policies it attaches."""
    role = template["Resources"][role_id]["Properties"]
    for policy_item in role.get("Policies", []):
        for condition, policy in _unwrap_if(policy_item):
            yield from _statements(policy["PolicyDocument"], f"{role_id}/{policy['PolicyName']}", condition)
    for arn in role.get("ManagedPolicyArns", []):
        policy_id = ref_target(arn)
        if policy_id is not None:
            document = template["Resources"][policy_id]["Properties"]["PolicyDocument"]
            yield from _statements(document, f"{role_id}->{policy_id}", None)


def granted_actions(template: dict[str, Any], role_id: str) -> set[str]:
    """Every action ``role_id`` may be allowed, counting statements under either ``Fn::If`` branch as granted."""
    return {
        action
        for statement in role_statements(template, role_id)
        if statement.effect == "Allow"
        for action in statement.actions
    }


def all_policy_statements(template: dict[str, Any]) -> Iterator[Statement]:
    """Every statement of every identity and resource policy defined in the stack."""
    for role_id in resources_of_type(template, "AWS::IAM::Role"):
        role = template["Resources"][role_id]["Properties"]
        for policy_item in role.get("Policies", []):
            for condition, policy in _unwrap_if(policy_item):
                yield from _statements(policy["PolicyDocument"], f"{role_id}/{policy['PolicyName']}", condition)
    for resource_type in (
        "AWS::IAM::ManagedPolicy",
        "AWS::IAM::Policy",
        "AWS::SQS::QueuePolicy",
        "AWS::SNS::TopicPolicy",
    ):
        for logical_id, resource in resources_of_type(template, resource_type).items():
            yield from _statements(resource["Properties"]["PolicyDocument"], logical_id, None)


def find_sam_cli() -> str | None:
    """The SAM CLI to run: $SAM_CLI, the repo's tool venvs, then PATH."""
    from_env = os.environ.get("SAM_CLI")
    if from_env:
        return from_env
    for candidate in (ROOT / ".venv-tools" / "bin" / "sam", ROOT / ".venv" / "bin" / "sam"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("sam")


def sam_env(path_prefix: str | None = None) -> dict[str, str]:
    """Environment for SAM CLI subprocesses: no telemetry, a fixed region, no named profile."""
    env = dict(os.environ, SAM_CLI_TELEMETRY="0", AWS_DEFAULT_REGION=REGION, AWS_REGION=REGION)
    env.pop("AWS_PROFILE", None)
    if path_prefix:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    return env


def python313_dir() -> str | None:
    """A directory holding a working ``python3.13`` for ``sam build`` (BuildMethod python3.13)."""
    if sys.version_info[:2] == (3, 13):
        here = Path(sys.executable).parent
        if (here / "python3.13").exists():
            return str(here)
    found = shutil.which("python3.13")
    return str(Path(found).parent) if found else None


def channel_secret_parameters(sam_template: dict[str, Any]) -> dict[str, str]:
    """The stack's webhook channels besides Slack, kind -> the parameter holding its secret's ARN, as the
    functions' ``CHANNEL_SECRETS`` reads them (``{"msteams": "${TeamsWebhookSecretArn}"}``)."""
    variables = sam_template["Globals"]["Function"]["Environment"]["Variables"]
    written = json.loads(variables["CHANNEL_SECRETS"]["Fn::Sub"])
    parameters = {kind: re.fullmatch(r"\$\{(\w+)\}", value) for kind, value in written.items()}
    assert all(parameters.values()), f"CHANNEL_SECRETS maps each kind to one parameter: {written}"
    return {kind: match[1] for kind, match in parameters.items() if match}
