"""Two optional views of the governor in template.yaml: the capture path for replays (EventBridge ->
Kinesis Data Firehose -> S3, only with ``CaptureEvents=true``) and the CloudWatch dashboard.

Read from the translated template, so SAM's generated names (function roles, rules) are what is checked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.template.cfn import ROOT, getatt_target, ref_target, resources_of_type
from tuning_governor.observability import NAMESPACE, SERVICE

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("capture_and_dashboard")

CONDITION = "CapturesEvents"
CAPTURE_RESOURCES = {
    "CaptureBucket": "AWS::S3::Bucket",
    "CaptureBucketPolicy": "AWS::S3::BucketPolicy",
    "CaptureDeliveryRole": "AWS::IAM::Role",
    "CaptureDeliveryStream": "AWS::KinesisFirehose::DeliveryStream",
    "CaptureRule": "AWS::Events::Rule",
    "CaptureRuleRole": "AWS::IAM::Role",
}
STATE_CHANGES = ["SageMaker HyperParameter Tuning Job State Change", "SageMaker Training Job State Change"]
DASHBOARD = "GovernorDashboard"
LAYER_SOURCE = ROOT / "layers" / "governor" / "tuning_governor"
PSEUDO = {"AWS::Region", "AWS::AccountId", "AWS::Partition", "AWS::StackName", "AWS::URLSuffix"}


def _props(cfn: dict[str, Any], logical_id: str) -> dict[str, Any]:
    return dict(cfn["Resources"][logical_id]["Properties"])


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    statements = document["Statement"]
    return statements if isinstance(statements, list) else [statements]


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def _resources(statement: dict[str, Any]) -> list[Any]:
    resource = statement["Resource"]
    return resource if isinstance(resource, list) else [resource]


# --------------------------------------------------------------------------------------------------
# Capture for replay
# --------------------------------------------------------------------------------------------------
def test_capture_is_off_unless_asked_for(sam_template: dict[str, Any]) -> None:
    capture = sam_template["Parameters"]["CaptureEvents"]
    retention = sam_template["Parameters"]["CaptureRetentionDays"]

    assert capture["AllowedValues"] == ["true", "false"]
    assert capture["Default"] == "false"
    assert sam_template["Conditions"][CONDITION] == {"Fn::Equals": [{"Ref": "CaptureEvents"}, "true"]}
    assert retention["Type"] == "Number"
    assert retention["Default"] == 90
    assert retention["MinValue"] >= 1


def test_capture_resources_exist_only_under_the_condition(cfn_template: dict[str, Any]) -> None:
    resources = cfn_template["Resources"]
    conditioned = {logical_id for logical_id, r in resources.items() if r.get("Condition") == CONDITION}

    assert conditioned == set(CAPTURE_RESOURCES)
    for logical_id, resource_type in CAPTURE_RESOURCES.items():
        assert resources[logical_id]["Type"] == resource_type
    # Nothing else in the stack is a bucket or a delivery stream, and no unconditioned resource points at one.
    for resource_type in ("AWS::S3::Bucket", "AWS::KinesisFirehose::DeliveryStream"):
        assert set(resources_of_type(cfn_template, resource_type)) <= conditioned
    unconditioned = json.dumps({k: v for k, v in resources.items() if k not in conditioned})
    for logical_id in CAPTURE_RESOURCES:
        assert f'"{logical_id}"' not in unconditioned, f"{logical_id} is referenced outside the condition"
    outputs = {name: o for name, o in cfn_template["Outputs"].items() if "Capture" in json.dumps(o["Value"])}
    assert outputs
    assert all(output.get("Condition") == CONDITION for output in outputs.values())


def test_capture_bucket_is_encrypted_private_tls_only_and_expires_objects(cfn_template: dict[str, Any]) -> None:
    bucket = _props(cfn_template, "CaptureBucket")

    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    expiring = [r for r in bucket["LifecycleConfiguration"]["Rules"] if "ExpirationInDays" in r]
    assert len(expiring) == 1
    assert expiring[0]["Status"] == "Enabled"
    assert expiring[0]["ExpirationInDays"] == {"Ref": "CaptureRetentionDays"}
    assert "Prefix" not in expiring[0], "every object expires, error output included"

    policy = _props(cfn_template, "CaptureBucketPolicy")
    assert ref_target(policy["Bucket"]) == "CaptureBucket"
    (deny,) = _statements(policy["PolicyDocument"])
    assert deny["Effect"] == "Deny"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_capture_rule_sends_only_sagemaker_job_state_changes_whole_to_the_stream(cfn_template: dict[str, Any]) -> None:
    rule = _props(cfn_template, "CaptureRule")

    pattern = rule["EventPattern"]
    assert set(pattern) == {"source", "detail-type"}
    assert pattern["source"] == ["aws.sagemaker"]
    assert sorted(pattern["detail-type"]) == STATE_CHANGES
    assert "EventBusName" not in rule, "SageMaker sends its events to the default bus"
    (target,) = rule["Targets"]
    assert getatt_target(target["Arn"]) == "CaptureDeliveryStream"
    assert getatt_target(target["RoleArn"]) == "CaptureRuleRole"
    # The replay reads whole events: no Input, InputPath or InputTransformer reshaping them.
    assert not {"Input", "InputPath", "InputTransformer"} & set(target)
    assert target["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 86400


def test_the_rule_role_may_only_put_records_to_the_capture_stream(cfn_template: dict[str, Any]) -> None:
    role = _props(cfn_template, "CaptureRuleRole")

    (trust,) = _statements(role["AssumeRolePolicyDocument"])
    assert trust["Principal"] == {"Service": "events.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}
    assert "ManagedPolicyArns" not in role
    statements = [s for policy in role["Policies"] for s in _statements(policy["PolicyDocument"])]
    assert [s["Effect"] for s in statements] == ["Allow"]
    assert sorted(_actions(statements[0])) == ["firehose:PutRecord", "firehose:PutRecordBatch"]
    assert [getatt_target(r) for r in _resources(statements[0])] == ["CaptureDeliveryStream"]


def test_firehose_writes_newline_delimited_gzip_json_to_the_bucket_only(cfn_template: dict[str, Any]) -> None:
    stream = _props(cfn_template, "CaptureDeliveryStream")

    # EventBridge calls PutRecordBatch on the stream: a DirectPut stream, encrypted at rest.
    assert stream["DeliveryStreamType"] == "DirectPut"
    assert stream["DeliveryStreamEncryptionConfigurationInput"]["KeyType"] == "AWS_OWNED_CMK"
    s3 = stream["ExtendedS3DestinationConfiguration"]
    assert getatt_target(s3["BucketARN"]) == "CaptureBucket"
    assert getatt_target(s3["RoleARN"]) == "CaptureDeliveryRole"
    assert s3["CompressionFormat"] == "GZIP"
    assert s3["Prefix"] == "events/"
    assert s3["ErrorOutputPrefix"] and not s3["ErrorOutputPrefix"].startswith("events/")
    # Firehose joins records with nothing between them; this processor ends each with a newline.
    processing = s3["ProcessingConfiguration"]
    assert processing["Enabled"] is True
    assert [p["Type"] for p in processing["Processors"]] == ["AppendDelimiterToRecord"]

    role = _props(cfn_template, "CaptureDeliveryRole")
    (trust,) = _statements(role["AssumeRolePolicyDocument"])
    assert trust["Principal"] == {"Service": "firehose.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["sts:ExternalId"] == {"Ref": "AWS::AccountId"}
    for statement in (s for policy in role["Policies"] for s in _statements(policy["PolicyDocument"])):
        assert statement["Effect"] == "Allow"
        assert all(action.startswith("s3:") for action in _actions(statement))
        for resource in _resources(statement):
            assert getatt_target(resource) == "CaptureBucket" or resource == {"Fn::Sub": "${CaptureBucket.Arn}/*"}


# --------------------------------------------------------------------------------------------------
# Dashboard
# --------------------------------------------------------------------------------------------------
def _emitted_metrics() -> set[str]:
    pattern = re.compile(r'(?:add_metric|single_metric)\(\s*name="([A-Za-z]+)"')
    return {name for path in Path(LAYER_SOURCE).rglob("*.py") for name in pattern.findall(path.read_text())}


@pytest.fixture(scope="module")
def dashboard(cfn_template: dict[str, Any]) -> dict[str, Any]:
    """The body as CloudWatch gets it, each ${Resource} / ${Resource.Attr} replaced by ``@Resource[.Attr]``."""
    (logical_id,) = resources_of_type(cfn_template, "AWS::CloudWatch::Dashboard")
    assert logical_id == DASHBOARD
    body = _props(cfn_template, DASHBOARD)["DashboardBody"]["Fn::Sub"]
    assert isinstance(body, str), "a plain !Sub string: every variable is a resource or a pseudo parameter"

    def placeholder(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in PSEUDO:
            return f"@{name}"
        assert name.split(".")[0] in cfn_template["Resources"], f"${{{name}}} names no resource"
        return f"@{name}"

    return dict(json.loads(re.sub(r"\$\{([^}!]+)\}", placeholder, body)))


def _metric_lines(dashboard: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    """(namespace, metric, dimensions) of every metric in every widget; SEARCH expressions included."""
    lines: list[tuple[str, str, dict[str, str]]] = []
    for widget in dashboard["widgets"]:
        if widget["type"] != "metric":
            continue
        assert widget["properties"]["metrics"], widget["properties"].get("title")
        for entry in widget["properties"]["metrics"]:
            if isinstance(entry[0], dict):
                search = re.fullmatch(
                    r"SEARCH\('\{([^,}]+)((?:,[^,}]+)*)\} MetricName=\"([A-Za-z]+)\"', '\w+', \d+\)",
                    entry[0]["expression"],
                )
                assert search, entry[0]["expression"]
                names = [n for n in search.group(2).split(",") if n]
                lines.append((search.group(1), search.group(3), dict.fromkeys(names, "*")))
                continue
            assert "." not in entry[:2], "no shorthand: each line names its namespace and metric"
            values = [item for item in entry if not isinstance(item, dict)]
            namespace, metric, *pairs = values
            lines.append((namespace, metric, dict(zip(pairs[::2], pairs[1::2], strict=True))))
    return lines


def test_dashboard_plots_only_metrics_the_governor_emits(dashboard: dict[str, Any]) -> None:
    emitted = _emitted_metrics()
    governor = [(m, d) for ns, m, d in _metric_lines(dashboard) if ns == NAMESPACE]

    assert governor
    for metric, dimensions in governor:
        assert metric in emitted, f"{metric} is not emitted by tuning_governor"
        # Powertools puts the service dimension on every metric; a search must name it to match.
        assert dimensions.get("service") in {SERVICE, "*"}, metric


def test_dashboard_shows_what_an_operator_asks_for(dashboard: dict[str, Any]) -> None:
    lines = _metric_lines(dashboard)
    searched = {(m, tuple(sorted(d))) for ns, m, d in lines if ns == NAMESPACE and "*" in d.values()}
    plain = {m for ns, m, d in lines if ns == NAMESPACE and "*" not in d.values()}

    assert ("TeamSpendUSD", ("service", "team")) in searched
    assert ("DecisionsByRule", ("rule", "service")) in searched
    assert ("StopsByRule", ("rule", "service")) in searched
    # An organisation's figures per member account and region
    assert ("AccountSpendUSD", ("account", "region", "service")) in searched
    assert ("StopsByAccount", ("account", "region", "service")) in searched
    assert {"TrialsRecorded", "RejectedEvents", "RetriedEvents", "Decisions", "JobsStopped"} <= plain


def test_dashboard_watches_every_function_and_the_dead_letter_queue(
    cfn_template: dict[str, Any], dashboard: dict[str, Any]
) -> None:
    lines = _metric_lines(dashboard)
    functions = set(resources_of_type(cfn_template, "AWS::Lambda::Function"))
    errors = {d["FunctionName"] for ns, m, d in lines if ns == "AWS/Lambda" and m == "Errors"}
    depth = {d["QueueName"] for ns, m, d in lines if ns == "AWS/SQS" and m == "ApproximateNumberOfMessagesVisible"}

    assert functions
    assert errors == {f"@{function_id}" for function_id in functions}
    assert depth == {f"@{queue}.QueueName" for queue in resources_of_type(cfn_template, "AWS::SQS::Queue")}
    for _ns, _m, dimensions in lines:
        assert all(value.startswith("@") or value in {SERVICE, "*"} for value in dimensions.values()), dimensions
