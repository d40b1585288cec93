"""Checks on the CloudFormation that SAM generates from template.yaml (translated offline).

These read the *translated* template so they see what is really deployed: the rules, permissions,
roles and event-invoke configs SAM creates, not just what template.yaml spells out.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.template.cfn import (
    Statement,
    all_policy_statements,
    getatt_target,
    ref_target,
    resources_of_type,
    role_statements,
)

FUNCTIONS = {"TuningEventsFunction", "TrainingEventsFunction"}
DLQ = "EventsDeadLetterQueue"
TABLE = "GovernorTable"
TOPIC = "ReportsTopic"

TUNING_DETAIL_TYPE = "SageMaker HyperParameter Tuning Job State Change"
TRAINING_DETAIL_TYPE = "SageMaker Training Job State Change"

TABLE_ACTIONS = {
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:Query",
    "dynamodb:ConditionCheckItem",  # TransactWriteItems checks are authorised per item
}
# Everything each function may do, and nothing more: widen these deliberately, with the template.
EXPECTED_ACTIONS = {
    "TuningEventsFunction": TABLE_ACTIONS
    | {
        "sagemaker:DescribeHyperParameterTuningJob",
        "sagemaker:ListTrainingJobsForHyperParameterTuningJob",
        "sagemaker:ListTags",
        "sns:Publish",
        "kms:GenerateDataKey*",
        "kms:Decrypt",
        "secretsmanager:GetSecretValue",
        "sqs:SendMessage",  # Lambda's on-failure destination
        "dynamodb:DeleteItem",  # releases a report-delivery claim after a failed send
    },
    "TrainingEventsFunction": TABLE_ACTIONS | {"sagemaker:DescribeTrainingJob", "sqs:SendMessage"},
}

# The only AWS managed policies a function role may carry. They are the one place `Resource: "*"`
# is accepted: SAM attaches them for every function (basic execution: CloudWatch Logs) and for
# `Tracing: Active` (X-Ray PutTraceSegments / PutTelemetryRecords, which have no resource-level
# permissions, so "*" is what the X-Ray API requires). Our own statements never use "*".
ALLOWED_AWS_MANAGED_POLICIES = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
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


def _function_rules(cfn: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
    """function id -> (rule id, rule properties, the rule's target for that function)."""
    found: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {}
    for rule_id, rule in resources_of_type(cfn, "AWS::Events::Rule").items():
        for target in rule["Properties"]["Targets"]:
            function_id = getatt_target(target["Arn"])
            if function_id and cfn["Resources"][function_id]["Type"] == "AWS::Lambda::Function":
                assert function_id not in found, f"{function_id} is the target of two rules"
                found[function_id] = (rule_id, rule["Properties"], target)
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


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_function_environment_carries_the_settings(cfn_template: dict[str, Any], function_id: str) -> None:
    variables = _functions(cfn_template)[function_id]["Properties"]["Environment"]["Variables"]

    assert variables["TABLE_NAME"] == {"Ref": TABLE}
    assert variables["TOPIC_ARN"] == {"Ref": TOPIC}
    assert variables["SLACK_SECRET_ARN"] == {"Ref": "SlackWebhookSecretArn"}
    assert variables["POWERTOOLS_SERVICE_NAME"] == "tuning-governor"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "TuningGovernor"
    assert variables["POWERTOOLS_LOG_LEVEL"] == {"Ref": "LogLevel"}
    assert variables["GOVERNOR_TEAM_TAG"] == {"Ref": "TeamTagKey"}
    assert variables["GOVERNOR_OWNER_TAG"] == {"Ref": "OwnerTagKey"}


def test_layer_is_built_for_python313_arm64(sam_template: dict[str, Any], cfn_template: dict[str, Any]) -> None:
    layer = sam_template["Resources"]["GovernorLayer"]
    assert layer["Metadata"] == {"BuildMethod": "python3.13", "BuildArchitecture": "arm64"}
    assert layer["Properties"]["ContentUri"].rstrip("/") == "layers/governor"

    (translated,) = resources_of_type(cfn_template, "AWS::Lambda::LayerVersion").values()
    assert translated["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert translated["Properties"]["CompatibleArchitectures"] == ["arm64"]


# --------------------------------------------------------------------------------------------------
# Event sources, retries and dead letters
# --------------------------------------------------------------------------------------------------
def test_each_function_has_one_rule_with_retry_policy_and_the_shared_dlq(cfn_template: dict[str, Any]) -> None:
    rules = _function_rules(cfn_template)

    assert set(rules) == FUNCTIONS
    for function_id, (rule_id, _properties, target) in rules.items():
        retry = target.get("RetryPolicy")
        assert retry, f"{rule_id} -> {function_id} has no RetryPolicy"
        assert 0 <= retry["MaximumRetryAttempts"] <= 185
        assert 60 <= retry["MaximumEventAgeInSeconds"] <= 86400
        dlq_id = getatt_target(target.get("DeadLetterConfig", {}).get("Arn"))
        assert dlq_id == DLQ, f"{rule_id} -> {function_id} must dead-letter to {DLQ}, not {dlq_id}"
        assert cfn_template["Resources"][dlq_id]["Type"] == "AWS::SQS::Queue"


@pytest.mark.parametrize(
    ("function_id", "detail_type"),
    [("TuningEventsFunction", TUNING_DETAIL_TYPE), ("TrainingEventsFunction", TRAINING_DETAIL_TYPE)],
)
def test_rule_matches_sagemaker_state_changes(cfn_template: dict[str, Any], function_id: str, detail_type: str) -> None:
    _rule_id, properties, _target = _function_rules(cfn_template)[function_id]

    pattern = properties["EventPattern"]
    assert pattern["source"] == ["aws.sagemaker"]
    assert pattern["detail-type"] == [detail_type]
    assert "EventBusName" not in properties, "SageMaker sends its events to the default bus"
    assert properties.get("State", "ENABLED") == "ENABLED"


def test_dlq_accepts_events_only_from_the_governor_rules(cfn_template: dict[str, Any]) -> None:
    rule_ids = {rule_id for rule_id, _p, _t in _function_rules(cfn_template).values()}
    (queue_policy,) = resources_of_type(cfn_template, "AWS::SQS::QueuePolicy").values()
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


def test_no_allow_statement_uses_wildcard_actions_or_resources(cfn_template: dict[str, Any]) -> None:
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
            assert resource != "*", _describe(statement)
            if isinstance(resource, dict) and "Fn::Sub" in resource:
                sub = resource["Fn::Sub"]
                text = sub[0] if isinstance(sub, list) else sub
                assert not text.endswith(":*"), _describe(statement)


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_function_role_grants_exactly_what_the_function_needs(cfn_template: dict[str, Any], function_id: str) -> None:
    role_id = _role_of(cfn_template, function_id)
    role = cfn_template["Resources"][role_id]["Properties"]

    aws_managed = {arn for arn in role["ManagedPolicyArns"] if isinstance(arn, str)}
    assert aws_managed <= ALLOWED_AWS_MANAGED_POLICIES
    granted = {
        action
        for statement in role_statements(cfn_template, role_id)
        if statement.effect == "Allow"
        for action in statement.actions
    }
    assert granted == EXPECTED_ACTIONS[function_id]


@pytest.mark.parametrize(
    ("function_id", "arn_suffix"),
    [
        ("TuningEventsFunction", ":hyper-parameter-tuning-job/*"),
        ("TrainingEventsFunction", ":training-job/*"),
    ],
)
def test_sagemaker_access_is_scoped_to_job_arns(
    cfn_template: dict[str, Any], function_id: str, arn_suffix: str
) -> None:
    statements = [
        s
        for s in role_statements(cfn_template, _role_of(cfn_template, function_id))
        if any(a.startswith("sagemaker:") for a in s.actions)
    ]

    assert statements
    for statement in statements:
        for resource in statement.resources:
            assert resource["Fn::Sub"].startswith("arn:${AWS::Partition}:sagemaker:${AWS::Region}:")
            assert resource["Fn::Sub"].endswith(arn_suffix), _describe(statement)


@pytest.mark.parametrize("function_id", sorted(FUNCTIONS))
def test_table_access_is_scoped_to_the_table_and_its_indexes(cfn_template: dict[str, Any], function_id: str) -> None:
    statements = [
        s
        for s in role_statements(cfn_template, _role_of(cfn_template, function_id))
        if any(a.startswith("dynamodb:") for a in s.actions)
    ]

    assert statements
    for statement in statements:
        assert statement.resources in (
            [{"Fn::GetAtt": [TABLE, "Arn"]}, {"Fn::Sub": "${GovernorTable.Arn}/index/*"}],
            [{"Fn::GetAtt": [TABLE, "Arn"]}],
        ), _describe(statement)


def test_tuning_function_reaches_the_topic_its_key_and_the_slack_secret_only(
    cfn_template: dict[str, Any],
) -> None:
    statements = list(role_statements(cfn_template, _role_of(cfn_template, "TuningEventsFunction")))

    (publish,) = [s for s in statements if "sns:Publish" in s.actions]
    assert TOPIC in json.dumps(publish.resources), _describe(publish)

    (kms,) = [s for s in statements if "kms:Decrypt" in s.actions]
    assert kms.body["Condition"]["StringEquals"]["kms:ViaService"] == {"Fn::Sub": "sns.${AWS::Region}.amazonaws.com"}
    assert kms.body["Condition"]["ForAnyValue:StringEquals"]["kms:ResourceAliases"] == "alias/aws/sns"

    # Given no Slack secret, the grant disappears (it sits under the HasSlack condition)
    (secret,) = [s for s in statements if "secretsmanager:GetSecretValue" in s.actions]
    assert secret.condition == "HasSlack"
    assert "SlackWebhookSecretArn" in json.dumps(secret.resources), _describe(secret)

    (send,) = [s for s in statements if "sqs:SendMessage" in s.actions]
    assert [getatt_target(r) for r in send.resources] == [DLQ]
