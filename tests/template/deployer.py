"""What deploying each resource of the translated template asks of the deployer, and how to read an IAM
policy offline to see whether it allows that.

CloudFormation names a resource without an explicit name ``<stack>-<LogicalId>-<suffix>`` (an S3 bucket
lower-cased); the names this template sets explicitly start with ``${AWS::StackName}`` too, so every
resource of the stack is named under the stack's name. ``SAMPLE_STACK`` is a stack named with the
documented prefix (README "Deployer permissions").
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
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


def _secret(logical_id: str, resource: dict[str, Any], _template: dict[str, Any]) -> str:
    return _arn("secretsmanager", f"secret:{_explicit_name(resource, 'Name')}-{SUFFIX[:6]}")


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
    """How a resource type is named under the stack, and which of its handler's calls do not apply."""

    arn: Callable[[str, dict[str, Any], dict[str, Any]], str]
    # Calls of the type's CloudFormation handler that this template never causes, each with its reason.
    unused: Mapping[str, str] = field(default_factory=dict)
    # IAM actions that hand out permissions: allowed only with the permissions boundary.
    boundary_actions: tuple[str, ...] = ()


def handler_actions(resource_type: str) -> set[str]:
    """Every IAM action the type's CloudFormation handlers (create, read, update, delete) may call, from
    the registry schema cfn-lint ships (``handlers.<op>.permissions``)."""
    return set(_handler_actions(resource_type))


@cache
def _handler_actions(resource_type: str) -> frozenset[str]:
    schemas = resources.files("cfnlint.data.schemas")
    by_type = json.loads(schemas.joinpath("providers", "us-east-1.json").read_text())
    schema = json.loads(schemas.joinpath("resources", f"{by_type[resource_type]}.json").read_text())
    return frozenset(
        action
        for operation in ("create", "read", "update", "delete")
        for action in schema.get("handlers", {}).get(operation, {}).get("permissions", [])
    )


def _because(reason: str, *actions: str) -> dict[str, str]:
    return dict.fromkeys(actions, reason)


_RETAINED = "DeletionPolicy: Retain: CloudFormation never deletes it"
_NO_KMS_KEY = "no customer managed key (AWS managed or owned keys only)"
_PASS_ROLE = "iam:PassRole is checked on its own (test_roles_go_only_to_the_services_the_template_hands_them_to)"
_S3_FEATURES = [
    "s3:PutAccelerateConfiguration",
    "s3:PutAnalyticsConfiguration",
    "s3:PutBucketAbac",
    "s3:PutBucketAcl",
    "s3:PutBucketCORS",
    "s3:PutBucketLogging",
    "s3:PutBucketNotification",
    "s3:PutBucketObjectLockConfiguration",
    "s3:PutBucketReplication",
    "s3:PutBucketVersioning",
    "s3:PutBucketWebsite",
    "s3:PutIntelligentTieringConfiguration",
    "s3:PutInventoryConfiguration",
    "s3:PutMetricsConfiguration",
    "s3:PutObjectAcl",
    "s3:PutObjectLockConfiguration",
    "s3:PutReplicationConfiguration",
    "s3:CreateBucketMetadataTableConfiguration",
    "s3:DeleteBucketMetadataTableConfiguration",
    "s3:UpdateBucketMetadataAnnotationTableConfiguration",
    "s3:UpdateBucketMetadataInventoryTableConfiguration",
    "s3:UpdateBucketMetadataJournalTableConfiguration",
    "s3:DeleteBucketAnalyticsConfiguration",
    "s3:DeleteBucketCors",
    "s3:DeleteBucketEncryption",
    "s3:DeleteBucketLifecycle",
    "s3:DeleteBucketMetricsConfiguration",
    "s3:DeleteBucketReplication",
    "s3:DeleteBucketWebsite",
    "s3:DeleteObject",
]
_S3_TABLES = "s3tables:CreateNamespace s3tables:CreateTable s3tables:CreateTableBucket s3tables:GetTable"
_S3_TABLES += " s3tables:GetTableMetadataLocation s3tables:PutTableBucketPolicy s3tables:PutTableEncryption"
_S3_TABLES += " s3tables:PutTablePolicy s3tables:UpdateTableMetadataLocation"

SHAPES: dict[str, Shape] = {
    "AWS::Lambda::Function": Shape(
        _function,
        _because(
            "no VPC, file system, code signing, recursion, scaling or runtime-management settings, no versions",
            "ec2:DescribeNetworkInterfaces",
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeSubnets",
            "ec2:DescribeVpcs",
            "elasticfilesystem:DescribeMountTargets",
            "s3files:ListMountTargets",
            "lambda:AssociateRuntimeAlias",
            "lambda:PassCapacityProvider",
            "lambda:PublishVersion",
            "lambda:PutFunctionCodeSigningConfig",
            "lambda:DeleteFunctionCodeSigningConfig",
            "lambda:GetCodeSigningConfig",
            "lambda:PutFunctionRecursionConfig",
            "lambda:PutFunctionScalingConfig",
            "lambda:GetFunctionScalingConfig",
            "lambda:PutRuntimeManagementConfig",
        )
        | _because(
            _NO_KMS_KEY, "kms:CreateGrant", "kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"
        )
        | _because(_PASS_ROLE, "iam:PassRole"),
    ),
    "AWS::Lambda::EventInvokeConfig": Shape(_function),
    # The submission queue's poller (docs/explanation/queue.md). Mappings are named by a UUID, not the stack: the
    # deployer's statements are conditioned on lambda:FunctionArn instead (see UNSCOPABLE).
    "AWS::Lambda::EventSourceMapping": Shape(
        lambda *_: _arn("lambda", "event-source-mapping:6f1e2a3b-0000-4000-8000-00000000abcd"),
        _because(_NO_KMS_KEY, "kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey")
        | _because("the mapping carries no Tags", "lambda:TagResource", "lambda:UntagResource"),
    ),
    "AWS::Lambda::Permission": Shape(_function),
    "AWS::Lambda::LayerVersion": Shape(_layer),
    "AWS::IAM::Role": Shape(
        _simple("iam", "role/{name}"),
        _because("the boundary stays: a deployer never removes it", "iam:DeleteRolePermissionsBoundary"),
        ("iam:CreateRole", "iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:PutRolePermissionsBoundary"),
    ),
    "AWS::IAM::ManagedPolicy": Shape(
        _simple("iam", "policy/{name}"),
        _because(
            "attached by the roles' ManagedPolicyArns (checked on the role), never to users or groups",
            "iam:AttachGroupPolicy",
            "iam:AttachRolePolicy",
            "iam:AttachUserPolicy",
            "iam:DetachGroupPolicy",
            "iam:DetachRolePolicy",
            "iam:DetachUserPolicy",
        ),
    ),
    "AWS::DynamoDB::Table": Shape(
        _simple("dynamodb", "table/{name}"),
        _because(_RETAINED, "dynamodb:DeleteTable")
        | _because(
            "no replicas, Kinesis streaming, import, resource policy or contributor insights settings",
            "dynamodb:AssociateTableReplica",
            "dynamodb:CreateTableReplica",
            "iam:CreateServiceLinkedRole",
            "dynamodb:EnableKinesisStreamingDestination",
            "dynamodb:DisableKinesisStreamingDestination",
            "dynamodb:UpdateKinesisStreamingDestination",
            "kinesis:DescribeStream",
            "kinesis:PutRecords",
            "dynamodb:ImportTable",
            "dynamodb:DescribeImport",
            "dynamodb:BatchWriteItem",
            "dynamodb:DeleteItem",
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:Query",
            "dynamodb:Scan",
            "dynamodb:UpdateItem",
            "s3:GetObject",
            "s3:GetObjectMetadata",
            "s3:ListBucket",
            "logs:CreateLogGroup",
            "logs:CreateLogStream",
            "logs:DescribeLogGroups",
            "logs:DescribeLogStreams",
            "logs:PutLogEvents",
            "logs:PutRetentionPolicy",
            "dynamodb:PutResourcePolicy",
            "dynamodb:DeleteResourcePolicy",
            "dynamodb:UpdateContributorInsights",
        )
        | _because(
            _NO_KMS_KEY,
            "kms:CreateGrant",
            "kms:Decrypt",
            "kms:DescribeKey",
            "kms:Encrypt",
            "kms:ListAliases",
            "kms:RevokeGrant",
        ),
    ),
    "AWS::SNS::Topic": Shape(
        _simple("sns", "{name}"),
        _because("no delivery-status logging role", "iam:GetRole", "iam:PassRole")
        | _because("no data protection policy", "sns:PutDataProtectionPolicy"),
    ),
    "AWS::SNS::TopicPolicy": Shape(_policy_target("Topics")),
    "AWS::SNS::Subscription": Shape(
        _policy_target("TopicArn"), _because("email subscriptions: no role", "iam:GetRole", "iam:PassRole")
    ),
    "AWS::SQS::Queue": Shape(_simple("sqs", "{name}")),
    "AWS::SecretsManager::Secret": Shape(
        _secret,
        _because(
            "no replica regions",
            "secretsmanager:ReplicateSecretToRegions",
            "secretsmanager:RemoveRegionsFromReplication",
        ),
    ),
    "AWS::SQS::QueuePolicy": Shape(_policy_target("Queues")),
    "AWS::Events::Rule": Shape(_simple("events", "rule/{name}"), _because(_PASS_ROLE, "iam:PassRole")),
    "AWS::Scheduler::ScheduleGroup": Shape(_schedule_group),
    "AWS::Logs::LogGroup": Shape(
        _log_group,
        _because(
            "no KMS key, data protection, index, resource or deletion-protection settings, no log delivery",
            "firehose:TagDeliveryStream",
            "logs:AssociateKmsKey",
            "logs:DisassociateKmsKey",
            "logs:CreateLogDelivery",
            "logs:PutDataProtectionPolicy",
            "logs:DeleteDataProtectionPolicy",
            "logs:PutIndexPolicy",
            "logs:DeleteIndexPolicy",
            "logs:PutResourcePolicy",
            "logs:DeleteResourcePolicy",
            "logs:PutBearerTokenAuthentication",
            "logs:PutLogGroupDeletionProtection",
            "s3:REST.PUT.OBJECT",
        ),
    ),
    "AWS::CloudWatch::Alarm": Shape(_simple("cloudwatch", "alarm:{name}")),
    "AWS::CloudWatch::Dashboard": Shape(_dashboard),
    "AWS::S3::Bucket": Shape(
        _bucket,
        _because(_RETAINED, "s3:DeleteBucket")
        | _because("bucket features the capture bucket does not use", *_S3_FEATURES, *_S3_TABLES.split())
        | _because(_PASS_ROLE + " (replication: not used)", "iam:PassRole"),
    ),
    "AWS::S3::BucketPolicy": Shape(_policy_target("Bucket")),
    "AWS::KinesisFirehose::DeliveryStream": Shape(
        _simple("firehose", "deliverystream/{name}"),
        _because("AWS owned key (KeyType AWS_OWNED_CMK)", "kms:CreateGrant", "kms:DescribeKey", "kms:RevokeGrant")
        | _because(_PASS_ROLE, "iam:PassRole"),
    ),
}


def required_actions(resource_type: str) -> set[str]:
    """What deploying, updating and deleting a resource of this type calls, in this template."""
    shape = SHAPES[resource_type]
    return handler_actions(resource_type) - set(shape.unused) | set(shape.boundary_actions)


def _artifact(_logical_id: str, _resource: dict[str, Any], _template: dict[str, Any]) -> str:
    return f"arn:aws:s3:::aws-sam-cli-managed-default-samclisourcebucket-{SUFFIX.lower()}/{SAMPLE_STACK}/code.zip"


def _stream_role(_logical_id: str, resource: dict[str, Any], _template: dict[str, Any]) -> str:
    role = resource["Properties"]["ExtendedS3DestinationConfiguration"]["RoleARN"]["Fn::GetAtt"][0]
    return _arn("iam", f"role/{generated(role)}", region="")


def _group_schedules(logical_id: str, resource: dict[str, Any], template: dict[str, Any]) -> str:
    return _schedule_group(logical_id, resource, template).replace(":schedule-group/", ":schedule/") + "/budget-x"


# Calls a handler makes on another resource than its own: (type, action) -> that resource's ARN.
OTHER_RESOURCE: dict[tuple[str, str], Callable[[str, dict[str, Any], dict[str, Any]], str]] = {
    ("AWS::Lambda::Function", "s3:GetObject"): _artifact,
    ("AWS::Lambda::Function", "s3:GetObjectVersion"): _artifact,
    ("AWS::Lambda::Function", "lambda:GetLayerVersion"): lambda *_: _arn("lambda", f"layer:{SAMPLE_STACK}-governor:7"),
    ("AWS::Lambda::LayerVersion", "s3:GetObject"): _artifact,
    ("AWS::Lambda::LayerVersion", "s3:GetObjectVersion"): _artifact,
    ("AWS::KinesisFirehose::DeliveryStream", "iam:GetRole"): _stream_role,
    ("AWS::Scheduler::ScheduleGroup", "scheduler:DeleteSchedule"): _group_schedules,
}


def action_arn(
    resource_type: str, action: str, logical_id: str, resource: dict[str, Any], template: dict[str, Any]
) -> str:
    """The ARN ``action`` is authorised on when CloudFormation handles this resource."""
    arn = OTHER_RESOURCE.get((resource_type, action), SHAPES[resource_type].arn)
    return arn(logical_id, resource, template)


# Actions IAM cannot scope to a resource (parliament's IAM database: resource "*" only), so another
# stack's resource is not told apart from this one's.
UNSCOPABLE = {
    # Event source mappings are named by a UUID: create, update and delete are conditioned on the
    # mapping's function (lambda:FunctionArn, the stack's functions); get and ListTags only read.
    "lambda:CreateEventSourceMapping",
    "lambda:UpdateEventSourceMapping",
    "lambda:DeleteEventSourceMapping",
    "lambda:GetEventSourceMapping",
    "lambda:ListTags",
    "sns:Unsubscribe",
    "sns:GetSubscriptionAttributes",
    "sns:SetSubscriptionAttributes",
    "logs:DescribeIndexPolicies",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
    # GenerateSecretString: GetRandomPassword names no resource (IAM: no resource types), it only
    # returns random characters.
    "secretsmanager:GetRandomPassword",
}

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
        if (resource.get("Condition") != "CapturesEvents" or capture)
        # Organisation mode's bus policy is on the account's default bus, which no stack owns: deployed by
        # an administrator (docs/how-to/roll-out-organisation.md), not by the deployer policy.
        and resource.get("Condition") != "IsOrganisation"
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
