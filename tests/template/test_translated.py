"""Checks on the CloudFormation that SAM generates from template.yaml (translated offline).

These read the *translated* template so they see what is really deployed: the rules, permissions,
roles and event-invoke configs SAM creates, not just what template.yaml spells out.

The IAM checks take their expectations from the application, not from this file: every function's
role must grant exactly ``tuning_governor.app.permissions.required_actions(<LogicalId>)`` plus SAM's own
plumbing, and every rule's permissions (``tuning_governor.governance.rules.registry``) must reach the
functions that evaluate it. A new adapter call or rule fails here until the template grants it; a grant
the code no longer needs fails here until it is removed.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from tests.template.cfn import (
    ROOT,
    Statement,
    all_policy_statements,
    channel_secret_parameters,
    getatt_target,
    granted_actions,
    load_template,
    ref_target,
    resources_of_type,
    role_statements,
)
from tuning_governor.app.checks.budget import MAX_WAIT
from tuning_governor.app.permissions import FUNCTIONS as NEEDS
from tuning_governor.app.permissions import required_actions
from tuning_governor.governance.rules import registry

# Every function the application knows about, by logical id; the template must deploy exactly these.
FUNCTIONS = frozenset(NEEDS)
SWEEP = "SweepFunction"
DLQ = "EventsDeadLetterQueue"
BUDGET_CHECK = "BudgetCheckFunction"
#: Functions an EventBridge rule invokes; BudgetCheckFunction is invoked by one-time schedules instead.
RULE_FUNCTIONS = FUNCTIONS - {BUDGET_CHECK}
TABLE = "GovernorTable"
TOPIC = "ReportsTopic"

TUNING_DETAIL_TYPE = "SageMaker HyperParameter Tuning Job State Change"
TRAINING_DETAIL_TYPE = "SageMaker Training Job State Change"
EVENT_FUNCTIONS = {"TuningEventsFunction": TUNING_DETAIL_TYPE, "TrainingEventsFunction": TRAINING_DETAIL_TYPE}

# SAM's plumbing, the only grants beyond required_actions(). Two AWS managed policies: basic execution
# (CloudWatch Logs) for every function and X-Ray write for `Tracing: Active`; X-Ray's
# PutTraceSegments / PutTelemetryRecords have no resource-level permissions, so these are the one
# place "*" is accepted besides NO_RESOURCE_LEVEL_PERMISSIONS below. And the inline policy SAM writes
# for the EventInvokeConfig OnFailure destination: sqs:SendMessage on the dead-letter queue.
AWS_MANAGED_POLICIES = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
}
DESTINATION_POLICY_SUFFIX = "EventInvokeConfigOnFailureSQSPolicy"
SAM_PLUMBING_ACTIONS = frozenset({"sqs:SendMessage"})

# Actions IAM authorises only on Resource "*": the Service Authorization Reference lists no resource
# type for them. Each one is justified by the call that needs it; nothing else may use "*".
NO_RESOURCE_LEVEL_PERMISSIONS = {
    "servicequotas:ListServiceQuotas": "concurrency rule: applied SageMaker training quotas (QuotaGateway)",
    "servicequotas:ListAWSDefaultServiceQuotas": (
        "concurrency rule: AWS default values of quotas that have no applied value (QuotaGateway)"
    ),
    "sagemaker:ListHyperParameterTuningJobs": "sweep: the running tuning jobs (list_tuning_jobs)",
    "sagemaker:ListTrainingJobs": "sweep: training jobs holding a warm pool (list_warm_pools)",
    "pricing:GetProducts": "price refresh: the AWS Price List Query API (PriceListGateway.training_rows)",
}

_TUNING_JOBS = {
    "Fn::Sub": "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:hyper-parameter-tuning-job/*"
}
_TRAINING_JOBS = {"Fn::Sub": "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:training-job/*"}
_TABLE = {"Fn::GetAtt": [TABLE, "Arn"]}
_INDEXES = {"Fn::Sub": "${GovernorTable.Arn}/index/*"}
# SNSPublishMessagePolicy's expansion with TopicName: !GetAtt ReportsTopic.TopicName.
_TOPIC = {
    "Fn::Sub": [
        "arn:${AWS::Partition}:sns:${AWS::Region}:${AWS::AccountId}:${topicName}",
        {"topicName": {"Fn::GetAtt": [TOPIC, "TopicName"]}},
    ]
}
_TOPIC_KEYS = {"Fn::Sub": "arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*"}
# AWSSecretsManagerGetSecretValuePolicy's expansion with SecretArn: !Ref SlackWebhookSecretArn.
_SLACK_SECRET = {"Fn::Sub": ["${secretArn}", {"secretArn": {"Ref": "SlackWebhookSecretArn"}}]}


def _secret_of(parameter: str) -> dict[str, Any]:
    return {"Fn::Sub": ["${secretArn}", {"secretArn": {"Ref": parameter}}]}


def _channel_secret_guards() -> dict[str, str]:
    """Each webhook channel's condition (``HasTeamsWebhook``) -> its secret's parameter, derived from the
    template's ``CHANNEL_SECRETS`` and the condition that is true exactly when that parameter is set."""
    template = load_template()
    parameters = set(channel_secret_parameters(template).values())
    guards = {
        name: guard["Fn::Not"][0]["Fn::Equals"][0]["Ref"]
        for name, guard in template["Conditions"].items()
        if isinstance(guard, dict)
        and guard.get("Fn::Not", [{}])[0].get("Fn::Equals", [None, None])[1] == ""
        and guard["Fn::Not"][0]["Fn::Equals"][0] in [{"Ref": p} for p in parameters]
    }
    assert set(guards.values()) == parameters, "each channel's secret parameter has its condition"
    return guards


#: The stack's webhook channels besides Slack: each one's condition -> its secret's parameter.
CHANNEL_GUARDS = _channel_secret_guards()
_CHANNEL_SECRETS = [_secret_of(parameter) for parameter in CHANNEL_GUARDS.values()]
# The same expansion for the queue's name key, the stack's own secret.
_NAME_KEY_SECRET = {"Fn::Sub": ["${secretArn}", {"secretArn": {"Ref": "QueueNameKeySecret"}}]}
# Teams' own channels: the secrets named under SlackSecretPrefix, the topics named under TeamTopicPrefix.
_TEAM_SLACK_SECRETS = {
    "Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${SlackSecretPrefix}*"
}
_TEAM_TOPICS = {"Fn::Sub": "arn:${AWS::Partition}:sns:${AWS::Region}:${AWS::AccountId}:${TeamTopicPrefix}*"}
_POLICY_PARAMETER = {
    "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${PolicyParameterName}"
}
# One-time budget checks: schedules only in the stack's group, and only the scheduler's own role passed.
_CHECK_SCHEDULES = {
    "Fn::Sub": "arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule/${BudgetCheckScheduleGroup}/*"
}
_SCHEDULER_ROLE = {"Fn::GetAtt": ["BudgetCheckSchedulerRole", "Arn"]}
# The execution roles the queue consumer may pass (to SageMaker only), listed by the deployer.
_SUBMIT_EXECUTION_ROLES = {"Ref": "SubmitExecutionRoleArns"}
# The roles that may send submissions; the consumer reads their unique ids (iam:GetRole).
_SUBMITTER_ROLES = {"Ref": "SubmitterRoleArns"}

# Organisation mode: the member role of any member account and region, by its name (member/template.yaml).
_MEMBER_ROLES = {"Fn::Sub": "arn:${AWS::Partition}:iam::*:role/${MemberRoleName}-*"}

# Where each action may point: a statement is in scope when every resource it names is listed here for
# every action it grants. An action missing here must be added deliberately, with its narrowest ARN.
SCOPES: dict[str, list[Any]] = {
    "dynamodb:GetItem": [_TABLE],
    "dynamodb:PutItem": [_TABLE],
    "dynamodb:UpdateItem": [_TABLE],
    "dynamodb:DeleteItem": [_TABLE],
    "dynamodb:Query": [_TABLE, _INDEXES],
    "dynamodb:ConditionCheckItem": [_TABLE],
    "sagemaker:DescribeHyperParameterTuningJob": [_TUNING_JOBS],
    "sagemaker:ListTrainingJobsForHyperParameterTuningJob": [_TUNING_JOBS],
    # ListTags takes any taggable SageMaker ARN; the governor only reads tuning jobs' tags.
    "sagemaker:ListTags": [_TUNING_JOBS],
    "sagemaker:StopHyperParameterTuningJob": [_TUNING_JOBS],
    "sagemaker:DescribeTrainingJob": [_TRAINING_JOBS],
    "sns:Publish": [_TOPIC, _TEAM_TOPICS],
    "kms:GenerateDataKey*": [_TOPIC_KEYS],
    "kms:Decrypt": [_TOPIC_KEYS],
    "secretsmanager:GetSecretValue": [_SLACK_SECRET, *_CHANNEL_SECRETS, _TEAM_SLACK_SECRETS, _NAME_KEY_SECRET],
    "ssm:GetParameter": [_POLICY_PARAMETER],
    "sqs:SendMessage": [{"Fn::GetAtt": [DLQ, "Arn"]}],
    "scheduler:CreateSchedule": [_CHECK_SCHEDULES],
    "scheduler:UpdateSchedule": [_CHECK_SCHEDULES],
    "iam:PassRole": [_SCHEDULER_ROLE, _SUBMIT_EXECUTION_ROLES],
    # The queue consumer (docs/explanation/queue.md): creates tuning jobs (their tags at creation are AddTags),
    # resolves the submitters' role ids.
    "sagemaker:CreateHyperParameterTuningJob": [_TUNING_JOBS],
    "sagemaker:AddTags": [_TUNING_JOBS],
    # Only the roles allowed to send (the queue policy's SubmitterRoleArns): GetRole on any other role
    # would read its trust policy for nothing, as no other role can send.
    "iam:GetRole": [_SUBMITTER_ROLES],
    "sqs:ReceiveMessage": [{"Fn::GetAtt": ["SubmissionQueue", "Arn"]}],
    "sqs:DeleteMessage": [{"Fn::GetAtt": ["SubmissionQueue", "Arn"]}],
    "sqs:GetQueueAttributes": [{"Fn::GetAtt": ["SubmissionQueue", "Arn"]}],
    # Organisation mode only: each member's role (its trust policy admits only these roles, in the organisation).
    "sts:AssumeRole": [_MEMBER_ROLES],
} | {action: ["*"] for action in NO_RESOURCE_LEVEL_PERMISSIONS}
# Grants that exist only while their integration is configured: the condition guarding each, and the one
# action and resource it then grants. sns:Publish is also granted without a condition, on the stack's topic.
CONDITIONAL_GRANTS: dict[str, tuple[str, Any]] = {
    "HasSlack": ("secretsmanager:GetSecretValue", _SLACK_SECRET),
    **{guard: ("secretsmanager:GetSecretValue", _secret_of(parameter)) for guard, parameter in CHANNEL_GUARDS.items()},
    "HasTeamSlackSecrets": ("secretsmanager:GetSecretValue", _TEAM_SLACK_SECRETS),
    "HasTeamTopics": ("sns:Publish", _TEAM_TOPICS),
    "HasPolicyParameter": ("ssm:GetParameter", _POLICY_PARAMETER),
    "HasSubmitExecutionRoles": ("iam:PassRole", _SUBMIT_EXECUTION_ROLES),
    "HasSubmitterRoles": ("iam:GetRole", _SUBMITTER_ROLES),
    "IsOrganisation": ("sts:AssumeRole", _MEMBER_ROLES),
}
UNCONDITIONAL_GRANTS: dict[str, Any] = {"sns:Publish": _TOPIC, "iam:PassRole": _SCHEDULER_ROLE}
#: A function's own unconditional grant of a guarded action: the consumer, and the functions that queue a
#: stopped job again (the tuning events and the sweep), read the queue's name key.
OWN_GRANTS: dict[str, dict[str, Any]] = {
    function: {"secretsmanager:GetSecretValue": _NAME_KEY_SECRET}
    for function in ("QueueSubmissionsFunction", "TuningEventsFunction", "SweepFunction")
}


def _functions(cfn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    functions = resources_of_type(cfn, "AWS::Lambda::Function")
    assert set(functions) == FUNCTIONS, f"unexpected functions: {sorted(functions)}"
    return functions


def _role_of(cfn: dict[str, Any], function_id: str) -> str:
    role_id = getatt_target(cfn["Resources"][function_id]["Properties"]["Role"])
    assert role_id is not None
    assert cfn["Resources"][role_id]["Type"] == "AWS::IAM::Role"
    return role_id


#: The tag-change rules (app/events/tags.py) target the tuning-events function beside its state-change rule.
TAG_RULES = {"TuningEventsFunctionTuningJobTagCall", "TuningEventsFunctionTuningJobTagChange"}
#: The queue consumer's job-end rules (docs/explanation/queue.md): a tuning or training job's end frees capacity; its
#: schedule is its one function rule.
QUEUE_RULES = {"QueueSubmissionsFunctionTuningJobEnded", "QueueSubmissionsFunctionTrainingJobEnded"}


def _rules(cfn: dict[str, Any]) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """Every rule targeting a function: (function id, rule id, rule properties, the target)."""
    found: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []
    for rule_id, rule in resources_of_type(cfn, "AWS::Events::Rule").items():
        for target in rule["Properties"]["Targets"]:
            function_id = getatt_target(target["Arn"])
            if function_id and cfn["Resources"][function_id]["Type"] == "AWS::Lambda::Function":
                found.append((function_id, rule_id, rule["Properties"], target))
    return found


def _function_rules(cfn: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
    """function id -> (rule id, rule properties, the rule's target for that function): each function's
    one state-change or schedule rule (the tag rules aside)."""
    found: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {}
    for function_id, rule_id, properties, target in _rules(cfn):
        if rule_id in TAG_RULES | QUEUE_RULES:
            continue
        assert function_id not in found, f"{function_id} is the target of two rules"
        found[function_id] = (rule_id, properties, target)
    return found


# --------------------------------------------------------------------------------------------------
# Functions
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_function_runs_python313_on_arm64_with_active_tracing(cfn_template: dict[str, Any], function_id: str) -> None:
    properties = _functions(cfn_template)[function_id]["Properties"]

    assert properties["Runtime"] == "python3.13"
    assert properties["Architectures"] == ["arm64"]
    assert properties["TracingConfig"] == {"Mode": "Active"}
    layer_ids = {ref_target(layer) for layer in properties["Layers"]}
    assert any(
        cfn_template["Resources"][layer_id]["Type"] == "AWS::Lambda::LayerVersion" for layer_id in layer_ids if layer_id
    ), "the function does not use the governor layer"


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_function_logs_to_its_own_group_with_retention(cfn_template: dict[str, Any], function_id: str) -> None:
    properties = _functions(cfn_template)[function_id]["Properties"]

    log_group_id = ref_target(properties.get("LoggingConfig", {}).get("LogGroup"))
    assert log_group_id, "LoggingConfig.LogGroup must reference a log group in this stack"
    log_group = cfn_template["Resources"][log_group_id]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionInDays"}
    # Powertools writes JSON; Lambda's JSON format would let its log level override ours.
    assert properties["LoggingConfig"].get("LogFormat", "Text") == "Text"

    others = {
        ref_target(f["Properties"]["LoggingConfig"]["LogGroup"])
        for fid, f in _functions(cfn_template).items()
        if fid != function_id
    }
    assert log_group_id not in others, "functions must not share a log group"


def test_template_deploys_exactly_the_functions_the_permissions_module_knows(
    sam_template: dict[str, Any], cfn_template: dict[str, Any]
) -> None:
    # No function escapes the IAM checks below: each one is in tuning_governor.app.permissions.FUNCTIONS.
    declared = set(resources_of_type(sam_template, "AWS::Serverless::Function"))
    deployed = set(resources_of_type(cfn_template, "AWS::Lambda::Function"))

    assert declared == deployed == FUNCTIONS, (
        f"template functions {sorted(deployed)} != tuning_governor.app.permissions.FUNCTIONS {sorted(FUNCTIONS)}"
    )


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_function_environment_carries_the_settings(cfn_template: dict[str, Any], function_id: str) -> None:
    variables = _functions(cfn_template)[function_id]["Properties"]["Environment"]["Variables"]

    assert variables["TABLE_NAME"] == {"Ref": TABLE}
    assert variables["TOPIC_ARN"] == {"Ref": TOPIC}
    assert variables["SLACK_SECRET_ARN"] == {"Ref": "SlackWebhookSecretArn"}
    assert variables["POWERTOOLS_SERVICE_NAME"] == "tuning-governor"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "TuningGovernor"
    assert variables["POWERTOOLS_LOG_LEVEL"] == {"Ref": "LogLevel"}
    # No X-Ray SDK in the process unless the stack asks for detailed tracing (observability.tracer).
    assert variables["POWERTOOLS_TRACE_DISABLED"] == {"Fn::If": ["TracesInDetail", "false", "true"]}
    assert variables["GOVERNOR_OWNER_TAG"] == {"Ref": "OwnerTagKey"}
    assert variables["POLICY_PARAMETER"] == {"Ref": "PolicyParameterName"}
    # Settings.slack_secret_prefix / team_topic_prefix: which team channels the stack grants.
    assert variables["SLACK_SECRET_PREFIX"] == {"Ref": "SlackSecretPrefix"}
    assert variables["TEAM_TOPIC_PREFIX"] == {"Ref": "TeamTopicPrefix"}
    # The team tag is the governance policy's team_tag now, not a deployment setting.
    assert "GOVERNOR_TEAM_TAG" not in variables


def test_sweep_may_run_five_minutes_and_event_handlers_one(cfn_template: dict[str, Any]) -> None:
    functions = _functions(cfn_template)

    # The sweep may finalise several jobs in one run; an event handler finalises at most one.
    assert functions[SWEEP]["Properties"]["Timeout"] == 300
    for function_id in EVENT_FUNCTIONS:
        assert functions[function_id]["Properties"]["Timeout"] == 60
    # A budget check waits up to MAX_WAIT for its second (Scheduler's minute precision), then judges.
    assert functions["BudgetCheckFunction"]["Properties"]["Timeout"] >= MAX_WAIT.total_seconds() + 60


def test_layer_is_built_for_python313_arm64(sam_template: dict[str, Any], cfn_template: dict[str, Any]) -> None:
    layer = sam_template["Resources"]["GovernorLayer"]
    # The layer's own Makefile, so pip installs the pinned closure without resolving (no botocore).
    assert layer["Metadata"] == {"BuildMethod": "makefile", "BuildArchitecture": "arm64"}
    assert layer["Properties"]["ContentUri"].rstrip("/") == "layers/governor"
    makefile = (ROOT / "layers" / "governor" / "Makefile").read_text()
    assert re.search(r"^build-GovernorLayer:", makefile, re.MULTILINE), "SAM runs `make build-GovernorLayer`"
    assert "--no-deps" in makefile
    assert "--platform manylinux2014_aarch64" in makefile

    (translated,) = resources_of_type(cfn_template, "AWS::Lambda::LayerVersion").values()
    assert translated["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert translated["Properties"]["CompatibleArchitectures"] == ["arm64"]


# --------------------------------------------------------------------------------------------------
# Event sources, retries and dead letters
# --------------------------------------------------------------------------------------------------
def test_each_function_has_one_rule_with_retry_policy_and_the_shared_dlq(cfn_template: dict[str, Any]) -> None:
    rules = _function_rules(cfn_template)

    assert set(rules) == RULE_FUNCTIONS
    for function_id, rule_id, _properties, target in _rules(cfn_template):
        retry = target.get("RetryPolicy")
        assert retry, f"{rule_id} -> {function_id} has no RetryPolicy"
        assert 0 <= retry["MaximumRetryAttempts"] <= 185
        assert 60 <= retry["MaximumEventAgeInSeconds"] <= 86400
        dlq_id = getatt_target(target.get("DeadLetterConfig", {}).get("Arn"))
        assert dlq_id == DLQ, f"{rule_id} -> {function_id} must dead-letter to {DLQ}, not {dlq_id}"
        assert cfn_template["Resources"][dlq_id]["Type"] == "AWS::SQS::Queue"


@pytest.mark.parametrize(("function_id", "detail_type"), sorted(EVENT_FUNCTIONS.items()))
def test_rule_matches_sagemaker_state_changes(cfn_template: dict[str, Any], function_id: str, detail_type: str) -> None:
    _rule_id, properties, _target = _function_rules(cfn_template)[function_id]

    pattern = properties["EventPattern"]
    assert pattern["source"] == ["aws.sagemaker"]
    assert pattern["detail-type"] == [detail_type]
    assert "ScheduleExpression" not in properties
    assert "EventBusName" not in properties, "SageMaker sends its events to the default bus"
    assert properties.get("State", "ENABLED") == "ENABLED"


def test_tag_rules_match_only_tag_changes_on_tuning_jobs_for_the_tuning_events_function(
    cfn_template: dict[str, Any],
) -> None:
    rules = {rule_id: (function_id, properties) for function_id, rule_id, properties, _t in _rules(cfn_template)}
    assert set(rules) >= TAG_RULES
    call_function, call = rules["TuningEventsFunctionTuningJobTagCall"]
    change_function, change = rules["TuningEventsFunctionTuningJobTagChange"]
    assert call_function == change_function == "TuningEventsFunction"
    # CloudTrail's record of SageMaker's two tag calls on a tuning job, nothing else SageMaker does
    assert call["EventPattern"] == {
        "source": ["aws.sagemaker"],
        "detail-type": ["AWS API Call via CloudTrail"],
        "detail": {
            "eventSource": ["sagemaker.amazonaws.com"],
            "eventName": ["AddTags", "DeleteTags"],
            "requestParameters": {"resourceArn": [{"wildcard": "arn:*:sagemaker:*:*:hyper-parameter-tuning-job/*"}]},
        },
    }
    # EventBridge's tag events, for SageMaker tuning jobs only
    assert change["EventPattern"] == {
        "source": ["aws.tag"],
        "detail-type": ["Tag Change on Resource"],
        "detail": {"service": ["sagemaker"], "resource-type": ["hyper-parameter-tuning-job"]},
    }
    for properties in (call, change):
        assert "EventBusName" not in properties, "both come to the default bus"


def test_sweep_runs_on_the_configured_schedule(cfn_template: dict[str, Any]) -> None:
    _rule_id, properties, target = _function_rules(cfn_template)[SWEEP]

    assert properties["ScheduleExpression"] == {"Ref": "SweepSchedule"}
    assert "EventPattern" not in properties
    assert "EventBusName" not in properties, "schedule rules live on the default bus"
    assert properties.get("State", "ENABLED") == "ENABLED"
    # A run that cannot be delivered within the default interval is superseded by the next one.
    assert target["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 300


def test_the_queue_consumer_runs_when_a_tuning_or_a_training_job_ends(cfn_template: dict[str, Any]) -> None:
    """Capacity frees when jobs end (issue 20): both terminal events reach the consumer, with retries and the DLQ."""
    rules = {rule_id: (properties, target) for _f, rule_id, properties, target in _rules(cfn_template)}
    tuning, _ = rules["QueueSubmissionsFunctionTuningJobEnded"]
    training, target = rules["QueueSubmissionsFunctionTrainingJobEnded"]
    assert tuning["EventPattern"]["detail"] == {"HyperParameterTuningJobStatus": ["Completed", "Stopped", "Failed"]}
    assert training["EventPattern"]["detail-type"] == ["SageMaker Training Job State Change"]
    assert training["EventPattern"]["detail"] == {"TrainingJobStatus": ["Completed", "Stopped", "Failed"]}
    # Only this account's jobs: in organisation mode the bus carries the members' too (the queue is the home's)
    assert tuning["EventPattern"]["account"] == training["EventPattern"]["account"] == [{"Ref": "AWS::AccountId"}]
    assert getatt_target(target["Arn"]) == "QueueSubmissionsFunction"
    assert "DeadLetterConfig" in target and target["RetryPolicy"]["MaximumRetryAttempts"] > 0


def test_dlq_accepts_events_only_from_the_governor_rules(cfn_template: dict[str, Any]) -> None:
    rule_ids = {rule_id for _f, rule_id, _p, _t in _rules(cfn_template)}
    assert len(rule_ids) == len(RULE_FUNCTIONS) + len(TAG_RULES) + len(QUEUE_RULES), "the sweep's schedule rule too"
    (queue_policy,) = [
        p
        for p in resources_of_type(cfn_template, "AWS::SQS::QueuePolicy").values()
        if [ref_target(q) for q in p["Properties"]["Queues"]] == [DLQ]
    ]
    assert [ref_target(q) for q in queue_policy["Properties"]["Queues"]] == [DLQ]

    allows = [s for s in queue_policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    assert len(allows) == 1
    (allow,) = allows
    assert allow["Principal"] == {"Service": "events.amazonaws.com"}
    assert allow["Action"] in ("sqs:SendMessage", ["sqs:SendMessage"])
    assert getatt_target(allow["Resource"]) == DLQ
    source_arns = allow["Condition"]["ArnEquals"]["aws:SourceArn"]
    assert {getatt_target(arn) for arn in source_arns} == rule_ids


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_async_invocations_retry_then_go_to_the_dlq(cfn_template: dict[str, Any], function_id: str) -> None:
    configs = [
        c["Properties"]
        for c in resources_of_type(cfn_template, "AWS::Lambda::EventInvokeConfig").values()
        if ref_target(c["Properties"]["FunctionName"]) == function_id
    ]

    assert len(configs) == 1, f"{function_id} needs exactly one EventInvokeConfig"
    (config,) = configs
    assert 0 <= config["MaximumRetryAttempts"] <= 2
    assert 60 <= config["MaximumEventAgeInSeconds"] <= 21600
    assert getatt_target(config["DestinationConfig"]["OnFailure"]["Destination"]) == DLQ


# --------------------------------------------------------------------------------------------------
# Data at rest
# --------------------------------------------------------------------------------------------------
def test_table_is_recoverable_encrypted_and_retained(cfn_template: dict[str, Any]) -> None:
    table = cfn_template["Resources"][TABLE]
    properties = table["Properties"]

    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert properties["SSESpecification"]["SSEEnabled"] is True
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert {(k["AttributeName"], k["KeyType"]) for k in properties["KeySchema"]} == {
        ("pk", "HASH"),
        ("sk", "RANGE"),
    }
    (gsi,) = properties["GlobalSecondaryIndexes"]
    assert gsi["IndexName"] == "gsi1"
    assert {(k["AttributeName"], k["KeyType"]) for k in gsi["KeySchema"]} == {
        ("gsi1pk", "HASH"),
        ("gsi1sk", "RANGE"),
    }
    assert gsi["Projection"] == {"ProjectionType": "ALL"}


def test_topic_is_kms_encrypted(cfn_template: dict[str, Any]) -> None:
    assert cfn_template["Resources"][TOPIC]["Properties"]["KmsMasterKeyId"] == "alias/aws/sns"


def test_dlq_is_encrypted(cfn_template: dict[str, Any]) -> None:
    properties = cfn_template["Resources"][DLQ]["Properties"]

    assert properties.get("SqsManagedSseEnabled") is True or properties.get("KmsMasterKeyId")


# --------------------------------------------------------------------------------------------------
# IAM
# --------------------------------------------------------------------------------------------------
def _describe(statement: Statement) -> str:
    return f"{statement.origin}: {json.dumps(statement.body, default=str)}"


def _is_sam_plumbing(statement: Statement) -> bool:
    """The inline policy SAM writes for the EventInvokeConfig OnFailure destination."""
    return statement.origin.endswith(DESTINATION_POLICY_SUFFIX)


def iam_problems(cfn: dict[str, Any], function_id: str) -> list[str]:
    """How ``function_id``'s role differs from ``required_actions(function_id)`` + SAM's plumbing.

    Inline and customer managed policies count; a statement under ``Fn::If`` counts as granted
    (the condition may hold). Empty when the role is exact.
    """
    role_id = _role_of(cfn, function_id)
    role = cfn["Resources"][role_id]["Properties"]
    problems: list[str] = []

    aws_managed = {arn for arn in role.get("ManagedPolicyArns", []) if isinstance(arn, str)}
    if aws_managed != AWS_MANAGED_POLICIES:
        problems.append(f"AWS managed policies {sorted(aws_managed)} != {sorted(AWS_MANAGED_POLICIES)}")

    allows = [s for s in role_statements(cfn, role_id) if s.effect == "Allow"]
    own = {action for s in allows if not _is_sam_plumbing(s) for action in s.actions}
    plumbing = {action for s in allows if _is_sam_plumbing(s) for action in s.actions}
    required = set(required_actions(function_id))
    if missing := required - own:
        problems.append(f"lacks {sorted(missing)}, which tuning_governor.app.permissions requires")
    if extra := own - required:
        problems.append(f"grants {sorted(extra)}, which tuning_governor.app.permissions does not require")
    if plumbing != SAM_PLUMBING_ACTIONS:
        problems.append(f"SAM plumbing grants {sorted(plumbing)}, expected {sorted(SAM_PLUMBING_ACTIONS)}")
    if granted_actions(cfn, role_id) != required | SAM_PLUMBING_ACTIONS:
        problems.append("granted actions != required_actions() | SAM plumbing")
    return problems


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_function_role_grants_exactly_what_the_code_requires(cfn_template: dict[str, Any], function_id: str) -> None:
    assert iam_problems(cfn_template, function_id) == []


def _edit_actions(cfn: dict[str, Any], function_id: str, *, remove: str = "", add: str = "") -> dict[str, Any]:
    """A copy of ``cfn`` with ``remove`` taken out of every inline statement of the function's role
    (``Fn::If`` branches included), and ``add`` appended to its first statement that is not SAM's."""
    mutated = copy.deepcopy(cfn)
    role = mutated["Resources"][_role_of(mutated, function_id)]["Properties"]
    statements: list[tuple[str, dict[str, Any]]] = []
    for item in role["Policies"]:
        branches = item["Fn::If"][1:] if isinstance(item, dict) and "Fn::If" in item else [item]
        for policy in branches:
            if isinstance(policy, dict) and "PolicyDocument" in policy:
                body = policy["PolicyDocument"]["Statement"]
                statements += [(policy["PolicyName"], s) for s in (body if isinstance(body, list) else [body])]
    for _name, statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        statement["Action"] = [a for a in actions if a != remove]
    if add:
        (first, *_) = [s for name, s in statements if not name.endswith(DESTINATION_POLICY_SUFFIX)]
        first["Action"].append(add)
    return mutated


@pytest.mark.parametrize(
    ("function_id", "edit", "expected"),
    [
        # Given a rule's stop permission missing from a function that evaluates the rule
        ("TrainingEventsFunction", {"remove": "sagemaker:StopHyperParameterTuningJob"}, "lacks"),
        # Given a grant that only sits under Fn::If (the policy parameter), removed
        (SWEEP, {"remove": "ssm:GetParameter"}, "lacks"),
        # Given a grant the code does not need (arrivals read tags, never list training jobs)
        ("TuningEventsFunction", {"add": "sagemaker:ListTrainingJobs"}, "grants"),
        # Given SAM's own action granted again by the application's statements
        (SWEEP, {"add": "sqs:SendMessage"}, "grants"),
    ],
)
def test_the_exact_iam_check_catches_a_drifted_role(
    cfn_template: dict[str, Any], function_id: str, edit: dict[str, str], expected: str
) -> None:
    # When the role drifts from what the code requires
    problems = iam_problems(_edit_actions(cfn_template, function_id, **edit), function_id)

    # Then the check names the action
    action = edit.get("remove") or edit["add"]
    assert any(p.startswith(expected) and action in p for p in problems), problems


# Functions that govern jobs (a trigger); the price refresh evaluates no rule.
GOVERNING = sorted(f for f, needs in NEEDS.items() if needs.trigger is not None)
REPORTING = sorted(f for f, needs in NEEDS.items() if needs.reports)


@pytest.mark.parametrize("function_id", GOVERNING)
def test_every_rule_a_function_evaluates_has_its_permissions(cfn_template: dict[str, Any], function_id: str) -> None:
    granted = granted_actions(cfn_template, _role_of(cfn_template, function_id))
    trigger = NEEDS[function_id].trigger
    assert trigger is not None
    rules = registry.for_trigger(trigger)

    assert rules, f"{function_id} evaluates no rule (trigger {NEEDS[function_id].trigger!r})"
    for rule in rules:
        missing = set(rule.permissions) - granted
        assert not missing, f"{function_id} evaluates rule {rule.name!r} but lacks {sorted(missing)}"


def test_every_registered_rule_is_evaluated_by_a_deployed_function() -> None:
    rules = list(registry)
    triggers = {needs.trigger for needs in NEEDS.values()}

    assert rules, "no rules registered: the registry import is broken"
    assert [rule.name for rule in rules if not rule.triggers & triggers] == []


def test_no_allow_statement_uses_wildcard_actions_or_undocumented_wildcard_resources(
    cfn_template: dict[str, Any],
) -> None:
    statements = list(all_policy_statements(cfn_template))
    assert statements, "no policy statements found; the walker is broken"

    for statement in statements:
        if statement.effect != "Allow":
            continue  # a Deny may be broad (e.g. TLS-only on the DLQ and the topic)
        assert "NotAction" not in statement.body, _describe(statement)
        assert "NotResource" not in statement.body, _describe(statement)
        for action in statement.actions:
            assert action != "*", _describe(statement)
            assert not action.endswith(":*"), _describe(statement)
            if action.startswith("sagemaker:"):
                assert "*" not in action, _describe(statement)
        for resource in statement.resources:
            if resource == "*":
                # Only actions without resource-level permissions, alone in their statement.
                undocumented = sorted(set(statement.actions) - set(NO_RESOURCE_LEVEL_PERMISSIONS))
                assert not undocumented, f"Resource '*' for {undocumented}: " + _describe(statement)
                assert statement.resources == ["*"], _describe(statement)
            if isinstance(resource, dict) and "Fn::Sub" in resource:
                sub = resource["Fn::Sub"]
                text = sub[0] if isinstance(sub, list) else sub
                assert not text.endswith(":*"), _describe(statement)


def test_every_wildcard_resource_exception_is_still_needed() -> None:
    required = {action for function_id in FUNCTIONS for action in required_actions(function_id)}

    assert set(NO_RESOURCE_LEVEL_PERMISSIONS) <= required, "drop exceptions the code no longer needs"


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_every_grant_points_only_at_what_its_actions_need(cfn_template: dict[str, Any], function_id: str) -> None:
    statements = [s for s in role_statements(cfn_template, _role_of(cfn_template, function_id)) if s.effect == "Allow"]

    assert statements
    for statement in statements:
        for action in statement.actions:
            assert action in SCOPES, f"{action} has no documented scope in SCOPES: " + _describe(statement)
            outside = [r for r in statement.resources if r not in SCOPES[action]]
            assert not outside, f"{action} may not reach {outside}: " + _describe(statement)


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_optional_integrations_are_granted_only_when_configured(cfn_template: dict[str, Any], function_id: str) -> None:
    statements = [s for s in role_statements(cfn_template, _role_of(cfn_template, function_id)) if s.effect == "Allow"]
    needs = NEEDS[function_id]
    used = {
        "secretsmanager:GetSecretValue": needs.reports,
        "sns:Publish": needs.reports,
        "ssm:GetParameter": needs.policy,
        "iam:PassRole": needs.submissions,
        "iam:GetRole": needs.submissions,
        "sts:AssumeRole": needs.members,
    }

    # Given a parameter left empty (no Slack secret, no team prefix, no policy parameter), its grant
    # disappears with its condition: each condition guards one statement, one action on one resource
    conditional = [s for s in statements if s.condition]
    found = {s.condition: (s.actions, s.resources) for s in conditional}
    expected = {
        condition: ([action], [resource])
        for condition, (action, resource) in CONDITIONAL_GRANTS.items()
        if used[action]
    }
    assert found == expected, [_describe(s) for s in conditional]
    assert len(conditional) == len(found), [_describe(s) for s in conditional]
    # And outside those conditions these actions reach only the stack's own topic
    guarded = {action for action, _resource in CONDITIONAL_GRANTS.values()}
    for statement in statements:
        if statement.condition is None and set(statement.actions) & guarded:
            (action,) = statement.actions
            unconditional = UNCONDITIONAL_GRANTS | OWN_GRANTS.get(function_id, {})
            assert statement.resources == [unconditional.get(action)], _describe(statement)


@pytest.mark.parametrize("function_id", REPORTING)
def test_team_channels_are_granted_only_under_the_stack_prefixes(
    cfn_template: dict[str, Any], function_id: str
) -> None:
    statements = list(role_statements(cfn_template, _role_of(cfn_template, function_id)))

    # Given the SlackSecretPrefix / TeamTopicPrefix parameters, each reporting function may read the
    # secrets and publish to the topics named under them (this account and region), and only while set
    team = {
        (s.condition, a): s.resources
        for s in statements
        for a in s.actions
        if s.resources in ([_TEAM_SLACK_SECRETS], [_TEAM_TOPICS])
    }
    assert team == {
        ("HasTeamSlackSecrets", "secretsmanager:GetSecretValue"): [_TEAM_SLACK_SECRETS],
        ("HasTeamTopics", "sns:Publish"): [_TEAM_TOPICS],
    }
    conditions = cfn_template["Conditions"]
    assert conditions["HasTeamSlackSecrets"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "SlackSecretPrefix"}, ""]}]}
    assert conditions["HasTeamTopics"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "TeamTopicPrefix"}, ""]}]}


@pytest.mark.parametrize("function_id", REPORTING)
def test_topic_key_is_usable_only_through_sns_under_its_alias(cfn_template: dict[str, Any], function_id: str) -> None:
    statements = list(role_statements(cfn_template, _role_of(cfn_template, function_id)))

    (kms,) = [s for s in statements if any(a.startswith("kms:") for a in s.actions)]
    assert kms.body["Condition"]["StringEquals"]["kms:ViaService"] == {"Fn::Sub": "sns.${AWS::Region}.amazonaws.com"}
    assert kms.body["Condition"]["ForAnyValue:StringEquals"]["kms:ResourceAliases"] == "alias/aws/sns"


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_failure_destination_is_the_only_queue_a_function_writes_to(
    cfn_template: dict[str, Any], function_id: str
) -> None:
    statements = list(role_statements(cfn_template, _role_of(cfn_template, function_id)))

    (send,) = [s for s in statements if "sqs:SendMessage" in s.actions]
    assert _is_sam_plumbing(send), _describe(send)
    # The queue consumer also reads the submission queue (its event source), and writes to no other queue.
    for other in (s for s in statements if s is not send and any(a.startswith("sqs:") for a in s.actions)):
        assert function_id == "QueueSubmissionsFunction", _describe(other)
        assert [getatt_target(r) for r in other.resources] == ["SubmissionQueue"], _describe(other)
    assert send.actions == ["sqs:SendMessage"]
    assert [getatt_target(r) for r in send.resources] == [DLQ]


# --------------------------------------------------------------------------------------------------
# One-time budget checks (EventBridge Scheduler)
# --------------------------------------------------------------------------------------------------
def test_the_scheduler_role_may_only_invoke_the_budget_check_function(cfn_template: dict[str, Any]) -> None:
    role = cfn_template["Resources"]["BudgetCheckSchedulerRole"]["Properties"]
    [trust] = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}
    [policy] = role["Policies"]
    [statement] = policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == "lambda:InvokeFunction"
    assert getatt_target(statement["Resource"]) == BUDGET_CHECK
    assert "ManagedPolicyArns" not in role


@pytest.mark.parametrize(
    "function_id", sorted(FUNCTIONS - {BUDGET_CHECK, "PriceRefreshFunction", "QueueSubmissionsFunction"})
)
def test_the_judging_functions_schedule_checks_on_the_budget_check_function(
    cfn_template: dict[str, Any], function_id: str
) -> None:
    variables = _functions(cfn_template)[function_id]["Properties"]["Environment"]["Variables"]
    assert getatt_target(variables["BUDGET_CHECK_TARGET_ARN"]) == BUDGET_CHECK
    assert getatt_target(variables["BUDGET_CHECK_ROLE_ARN"]) == "BudgetCheckSchedulerRole"
    assert ref_target(variables["BUDGET_CHECK_GROUP"]) == "BudgetCheckScheduleGroup"
    # and the budget check function schedules nothing itself (it would have to name its own ARN)
    own = _functions(cfn_template)[BUDGET_CHECK]["Properties"]["Environment"]["Variables"]
    assert "BUDGET_CHECK_TARGET_ARN" not in own
