"""What deploying each resource of the translated template asks of the deployer, and how to read an IAM
policy offline to see whether it allows that.

CloudFormation names a resource without an explicit name ``<stack>-<LogicalId>-<suffix>`` (an S3 bucket
lower-cased); the names this template sets explicitly start with ``${AWS::StackName}`` too, so every
resource of the stack is named under the stack's name. ``SAMPLE_STACK`` is a stack named with the
documented prefix (README "Deployer permissions").
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

SAMPLE_STACK = "tuning-governor-prod"
SUFFIX = "AbC123XyZ9"
REGION = "eu-west-1"
ACCOUNT = "111122223333"  # an obvious fake
BOUNDARY_NAME = "TuningGovernorPermissionsBoundary"
BOUNDARY_ARN = f"arn:aws:iam::{ACCOUNT}:policy/{BOUNDARY_NAME}"


def generated(logical_id: str) -> str:
    return f"{SAMPLE_STACK}-{logical_id}-{SUFFIX}"


def _explicit_name(resource: dict[str, Any], key: str) -> str | None:
    value = resource.get("Properties", {}).get(key)
    if isinstance(value, dict) and "Fn::Sub" in value and isinstance(value["Fn::Sub"], str):
        return str(value["Fn::Sub"]).replace("${AWS::StackName}", SAMPLE_STACK).replace("${AWS::Region}", REGION)
    return None


def _arn(service: str, rest: str, region: str = REGION) -> str:
    return f"arn:aws:{service}:{region}:{ACCOUNT}:{rest}"


def _function(logical_id: str, resource: dict[str, Any], _template: dict[str, Any]) -> str:
    name = resource["Properties"].get("FunctionName")
    target = name["Ref"] if isinstance(name, dict) and "Ref" in name else logical_id
    return _arn("lambda", f"function:{generated(target)}")


def _layer(logical_id: str, resource: dict[str, Any], _template: dict[str, Any]) -> str:
    return _arn("lambda", f"layer:{_explicit_name(resource, 'LayerName')}:7")


def _log_group(logical_id: str, resource: dict[str, Any], _template: dict[str, Any]) -> str:
    return _arn("logs", f"log-group:{_explicit_name(resource, 'LogGroupName')}")


def _schedule_group(logical_id: str, resource: dict[str, Any], _template: dict[str, Any]) -> str:
    return _arn("scheduler", f"schedule-group/{_explicit_name(resource, 'Name')}")


def _dashboard(logical_id: str, resource: dict[str, Any], _template: dict[str, Any]) -> str:
    name = _explicit_name(resource, "DashboardName") or f"{logical_id}-{SUFFIX}"
    return _arn("cloudwatch", f"dashboard/{name}", region="")


def _bucket(logical_id: str, _resource: dict[str, Any], _template: dict[str, Any]) -> str:
    return f"arn:aws:s3:::{generated(logical_id).lower()}"


def _policy_target(key: str) -> Callable[[str, dict[str, Any], dict[str, Any]], str]:
    """The ARN of the resource a policy/config resource attaches to (``Bucket: !Ref X`` and the like)."""

    def arn(logical_id: str, resource: dict[str, Any], template: dict[str, Any]) -> str:
        value = resource["Properties"][key]
        target = (value[0] if isinstance(value, list) else value)["Ref"]
        target_resource = template["Resources"][target]
        return SHAPES[target_resource["Type"]].arn(target, target_resource, template)

    return arn


def _simple(service: str, pattern: str) -> Callable[[str, dict[str, Any], dict[str, Any]], str]:
    def arn(logical_id: str, _resource: dict[str, Any], _template: dict[str, Any]) -> str:
        region = "" if service == "iam" else REGION
        return _arn(service, pattern.format(name=generated(logical_id)), region=region)

    return arn


@dataclass(frozen=True)
class Shape:
    """How a resource type is named, and the calls CloudFormation makes to create, update, tag and delete it."""

    arn: Callable[[str, dict[str, Any], dict[str, Any]], str]
    actions: tuple[str, ...]
    # IAM actions that hand out permissions: allowed only with the permissions boundary.
    boundary_actions: tuple[str, ...] = ()


_LAMBDA = ("lambda:CreateFunction", "lambda:DeleteFunction", "lambda:GetFunction", "lambda:GetFunctionConfiguration")
_LAMBDA_UPDATE = ("lambda:UpdateFunctionCode", "lambda:UpdateFunctionConfiguration", "lambda:ListTags")
_LAMBDA_TAGS = ("lambda:TagResource", "lambda:UntagResource")
_LAMBDA_CONCURRENCY = ("lambda:PutFunctionConcurrency", "lambda:DeleteFunctionConcurrency")
_ROLE = (
    "iam:GetRole",
    "iam:DeleteRole",
    "iam:GetRolePolicy",
    "iam:DeleteRolePolicy",
    "iam:DetachRolePolicy",
    "iam:ListRolePolicies",
    "iam:ListAttachedRolePolicies",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateAssumeRolePolicy",
)
_ROLE_GRANTS = ("iam:CreateRole", "iam:PutRolePolicy", "iam:AttachRolePolicy")

SHAPES: dict[str, Shape] = {
    "AWS::Lambda::Function": Shape(_function, _LAMBDA + _LAMBDA_UPDATE + _LAMBDA_TAGS + _LAMBDA_CONCURRENCY),
    "AWS::Lambda::EventInvokeConfig": Shape(
        _function,
        (
            "lambda:PutFunctionEventInvokeConfig",
            "lambda:UpdateFunctionEventInvokeConfig",
            "lambda:GetFunctionEventInvokeConfig",
            "lambda:DeleteFunctionEventInvokeConfig",
        ),
    ),
    "AWS::Lambda::Permission": Shape(_function, ("lambda:AddPermission", "lambda:RemovePermission")),
    "AWS::Lambda::LayerVersion": Shape(
        _layer, ("lambda:PublishLayerVersion", "lambda:GetLayerVersion", "lambda:DeleteLayerVersion")
    ),
    "AWS::IAM::Role": Shape(_simple("iam", "role/{name}"), _ROLE, _ROLE_GRANTS),
    "AWS::IAM::ManagedPolicy": Shape(
        _simple("iam", "policy/{name}"),
        (
            "iam:CreatePolicy",
            "iam:CreatePolicyVersion",
            "iam:DeletePolicy",
            "iam:DeletePolicyVersion",
            "iam:GetPolicy",
            "iam:GetPolicyVersion",
            "iam:ListPolicyVersions",
        ),
    ),
    # Retained (DeletionPolicy: Retain): no DeleteTable.
    "AWS::DynamoDB::Table": Shape(
        _simple("dynamodb", "table/{name}"),
        (
            "dynamodb:CreateTable",
            "dynamodb:DescribeTable",
            "dynamodb:UpdateTable",
            "dynamodb:DescribeTimeToLive",
            "dynamodb:UpdateTimeToLive",
            "dynamodb:DescribeContinuousBackups",
            "dynamodb:UpdateContinuousBackups",
            "dynamodb:TagResource",
            "dynamodb:UntagResource",
            "dynamodb:ListTagsOfResource",
        ),
    ),
    "AWS::SNS::Topic": Shape(
        _simple("sns", "{name}"),
        (
            "sns:CreateTopic",
            "sns:DeleteTopic",
            "sns:GetTopicAttributes",
            "sns:SetTopicAttributes",
            "sns:TagResource",
            "sns:UntagResource",
            "sns:ListTagsForResource",
        ),
    ),
    "AWS::SNS::TopicPolicy": Shape(_policy_target("Topics"), ("sns:SetTopicAttributes", "sns:GetTopicAttributes")),
    "AWS::SNS::Subscription": Shape(_policy_target("TopicArn"), ("sns:Subscribe", "sns:Unsubscribe")),
    "AWS::SQS::Queue": Shape(
        _simple("sqs", "{name}"),
        (
            "sqs:CreateQueue",
            "sqs:DeleteQueue",
            "sqs:GetQueueAttributes",
            "sqs:SetQueueAttributes",
            "sqs:TagQueue",
            "sqs:UntagQueue",
            "sqs:ListQueueTags",
        ),
    ),
    "AWS::SQS::QueuePolicy": Shape(_policy_target("Queues"), ("sqs:SetQueueAttributes", "sqs:GetQueueAttributes")),
    "AWS::Events::Rule": Shape(
        _simple("events", "rule/{name}"),
        ("events:PutRule", "events:DescribeRule", "events:DeleteRule", "events:PutTargets", "events:RemoveTargets"),
    ),
    "AWS::Scheduler::ScheduleGroup": Shape(
        _schedule_group,
        (
            "scheduler:CreateScheduleGroup",
            "scheduler:GetScheduleGroup",
            "scheduler:DeleteScheduleGroup",
            "scheduler:TagResource",
            "scheduler:UntagResource",
            "scheduler:ListTagsForResource",
        ),
    ),
    "AWS::Logs::LogGroup": Shape(
        _log_group,
        (
            "logs:CreateLogGroup",
            "logs:DeleteLogGroup",
            "logs:PutRetentionPolicy",
            "logs:DeleteRetentionPolicy",
            "logs:TagResource",
            "logs:UntagResource",
            "logs:ListTagsForResource",
        ),
    ),
    "AWS::CloudWatch::Alarm": Shape(
        _simple("cloudwatch", "alarm:{name}"),
        (
            "cloudwatch:PutMetricAlarm",
            "cloudwatch:DescribeAlarms",
            "cloudwatch:DeleteAlarms",
            "cloudwatch:TagResource",
            "cloudwatch:UntagResource",
            "cloudwatch:ListTagsForResource",
        ),
    ),
    "AWS::CloudWatch::Dashboard": Shape(
        _dashboard, ("cloudwatch:PutDashboard", "cloudwatch:GetDashboard", "cloudwatch:DeleteDashboards")
    ),
    # Retained (DeletionPolicy: Retain): no DeleteBucket.
    "AWS::S3::Bucket": Shape(
        _bucket,
        (
            "s3:CreateBucket",
            "s3:GetBucketLocation",
            "s3:PutEncryptionConfiguration",
            "s3:GetEncryptionConfiguration",
            "s3:PutBucketPublicAccessBlock",
            "s3:GetBucketPublicAccessBlock",
            "s3:PutBucketOwnershipControls",
            "s3:GetBucketOwnershipControls",
            "s3:PutLifecycleConfiguration",
            "s3:GetLifecycleConfiguration",
            "s3:PutBucketTagging",
            "s3:GetBucketTagging",
        ),
    ),
    "AWS::S3::BucketPolicy": Shape(
        _policy_target("Bucket"), ("s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:DeleteBucketPolicy")
    ),
    "AWS::KinesisFirehose::DeliveryStream": Shape(
        _simple("firehose", "deliverystream/{name}"),
        (
            "firehose:CreateDeliveryStream",
            "firehose:DescribeDeliveryStream",
            "firehose:UpdateDestination",
            "firehose:DeleteDeliveryStream",
            "firehose:StartDeliveryStreamEncryption",
            "firehose:StopDeliveryStreamEncryption",
            "firehose:TagDeliveryStream",
            "firehose:UntagDeliveryStream",
            "firehose:ListTagsForDeliveryStream",
        ),
    ),
}

# Actions IAM cannot scope to a resource (parliament's IAM database: resource "*" only), so another
# stack's resource is not told apart from this one's.
UNSCOPABLE = {"sns:Unsubscribe"}

# Properties by which CloudFormation hands a role of the stack to a service: (resource type, path).
ROLE_HANDOVERS: dict[str, str] = {
    "AWS::Lambda::Function": "lambda.amazonaws.com",
    "AWS::KinesisFirehose::DeliveryStream": "firehose.amazonaws.com",
    "AWS::Events::Rule": "events.amazonaws.com",
}


def resources_deployed(template: dict[str, Any], capture: bool) -> dict[str, dict[str, Any]]:
    """The resources a deployment creates with CaptureEvents=capture and every optional channel set."""
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource.get("Condition") != "CapturesEvents" or capture
    }


def refs_to_roles(value: Any) -> Iterator[str]:
    """Logical ids of roles referenced (``Fn::GetAtt [X, Arn]``) anywhere inside ``value``."""
    if isinstance(value, dict):
        target = value.get("Fn::GetAtt")
        if isinstance(target, list) and target[1] == "Arn":
            yield str(target[0])
        for inner in value.values():
            yield from refs_to_roles(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from refs_to_roles(inner)


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def allowing(policy: dict[str, Any], action: str, arn: str) -> list[dict[str, Any]]:
    """The Allow statements of ``policy`` whose Action and Resource patterns match ``action`` on ``arn``."""
    found = []
    for statement in policy["Statement"]:
        if statement["Effect"] != "Allow":
            continue
        actions = _as_list(statement["Action"])
        if not any(fnmatch.fnmatchcase(action.lower(), pattern.lower()) for pattern in actions):
            continue
        resources = [r.replace("${aws:PrincipalAccount}", ACCOUNT) for r in _as_list(statement["Resource"])]
        if any(fnmatch.fnmatchcase(arn, pattern) for pattern in resources):
            found.append(statement)
    return found
