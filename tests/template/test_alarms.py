"""Failure is visible: alarms on every function, every dead-letter queue and the governor's own metrics,
all to an operations topic CloudWatch can publish to; every function's concurrency is reserved.

Read from the translated template, so the functions and queues SAM adds are covered too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.template.cfn import ROOT, ref_target, resources_of_type
from tuning_governor.observability import NAMESPACE, SERVICE

OPS_TOPIC = "OperationsTopic"
GOVERNOR_METRICS = (
    "RetriedEvents",
    "PolicyErrors",
    "ReportFailures",
    "ReportsOverdue",
    "ReportsUnconfirmed",
    "SweepErrors",
    "QueueNameConflicts",
)
LAYER_SOURCE = ROOT / "layers" / "governor" / "tuning_governor"


def _alarms(cfn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in resources_of_type(cfn, "AWS::CloudWatch::Alarm").items()}


def _dimensions(alarm: dict[str, Any]) -> dict[str, Any]:
    return {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])}


def _queue_name_of(value: Any) -> str | None:
    """The logical id in ``{"Fn::GetAtt": [id, "QueueName"]}``, else None."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return str(logical_id) if attribute == "QueueName" else None
    return None


def _lambda_alarm_metrics(cfn: dict[str, Any], function_id: str) -> set[str]:
    return {
        alarm["MetricName"]
        for alarm in _alarms(cfn).values()
        if alarm.get("Namespace") == "AWS/Lambda" and ref_target(_dimensions(alarm).get("FunctionName")) == function_id
    }


def test_every_function_has_an_errors_and_a_throttles_alarm(cfn_template: dict[str, Any]) -> None:
    functions = resources_of_type(cfn_template, "AWS::Lambda::Function")
    assert functions
    for function_id in functions:
        assert _lambda_alarm_metrics(cfn_template, function_id) >= {"Errors", "Throttles"}, function_id


#: Queues that are not dead-letter queues: the submission queue (docs/explanation/queue.md) is alarmed on its oldest
#: message's age instead (submissions not being consumed), see the test below.
WORK_QUEUES = {"SubmissionQueue"}


def test_every_dead_letter_queue_has_a_depth_alarm(cfn_template: dict[str, Any]) -> None:
    queues = resources_of_type(cfn_template, "AWS::SQS::Queue")
    assert queues
    watched = {
        _queue_name_of(_dimensions(alarm).get("QueueName"))
        for alarm in _alarms(cfn_template).values()
        if alarm.get("Namespace") == "AWS/SQS" and alarm.get("MetricName") == "ApproximateNumberOfMessagesVisible"
    }
    for queue_id in set(queues) - WORK_QUEUES:
        assert queue_id in watched, queue_id
    for alarm in _alarms(cfn_template).values():
        if alarm.get("Namespace") == "AWS/SQS" and alarm.get("MetricName") == "ApproximateNumberOfMessagesVisible":
            # One dead letter is one event lost for good: alarm on the first.
            assert alarm["Threshold"] == 0
            assert alarm["ComparisonOperator"] == "GreaterThanThreshold"


def test_submissions_waiting_unconsumed_raise_an_alarm(cfn_template: dict[str, Any]) -> None:
    [alarm] = [
        a
        for a in _alarms(cfn_template).values()
        if a.get("MetricName") == "ApproximateAgeOfOldestMessage"
        and _queue_name_of(_dimensions(a).get("QueueName")) == "SubmissionQueue"
    ]
    # Longer than a batch's retries take (5 receives x 360 s visibility): the consumer is down or stuck.
    assert alarm["Threshold"] >= 1800


@pytest.mark.parametrize("metric", GOVERNOR_METRICS)
def test_the_governors_own_metrics_are_alarmed_where_powertools_puts_them(
    sam_template: dict[str, Any], cfn_template: dict[str, Any], metric: str
) -> None:
    env = sam_template["Globals"]["Function"]["Environment"]["Variables"]
    # Powertools EMF: namespace from POWERTOOLS_METRICS_NAMESPACE, one dimension "service".
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == NAMESPACE
    assert env["POWERTOOLS_SERVICE_NAME"] == SERVICE
    matching = [
        alarm
        for alarm in _alarms(cfn_template).values()
        if alarm.get("MetricName") == metric and alarm.get("Namespace") == NAMESPACE
    ]
    assert len(matching) == 1, metric
    assert _dimensions(matching[0]) == {"service": SERVICE}
    assert matching[0]["TreatMissingData"] == "notBreaching"  # emitted only when something goes wrong


@pytest.mark.parametrize("metric", GOVERNOR_METRICS)
def test_every_alarmed_governor_metric_is_emitted_by_the_code(metric: str) -> None:
    emitted = {
        match
        for path in Path(LAYER_SOURCE).rglob("*.py")
        for match in re.findall(r'add_metric\(\s*name="([A-Za-z]+)"', path.read_text())
    }
    assert metric in emitted


def test_every_alarm_notifies_the_operations_topic(cfn_template: dict[str, Any]) -> None:
    alarms = _alarms(cfn_template)
    assert alarms
    for alarm_id, alarm in alarms.items():
        assert [ref_target(a) for a in alarm["AlarmActions"]] == [OPS_TOPIC], alarm_id
        assert [ref_target(a) for a in alarm["OKActions"]] == [OPS_TOPIC], alarm_id
        assert alarm["ActionsEnabled"] is True


def test_cloudwatch_can_publish_to_the_operations_topic(cfn_template: dict[str, Any]) -> None:
    topic = cfn_template["Resources"][OPS_TOPIC]["Properties"]
    # CloudWatch cannot publish to a topic encrypted with the AWS managed key alias/aws/sns.
    assert "alias/aws/sns" not in str(topic.get("KmsMasterKeyId", ""))
    (policy,) = [
        p["Properties"]
        for p in resources_of_type(cfn_template, "AWS::SNS::TopicPolicy").values()
        if [ref_target(t) for t in p["Properties"]["Topics"]] == [OPS_TOPIC]
    ]
    allows = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    assert len(allows) == 1
    (allow,) = allows
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    # Only this account's alarms (no confused deputy).
    assert "aws:SourceAccount" in allow["Condition"]["StringEquals"]
    assert ":alarm:" in str(allow["Condition"]["ArnLike"]["aws:SourceArn"])


def test_operations_email_is_optional(sam_template: dict[str, Any]) -> None:
    subscription = sam_template["Resources"]["OperationsEmailSubscription"]
    assert subscription["Condition"] == "HasOperationsEmail"
    assert ref_target(subscription["Properties"]["TopicArn"]) == OPS_TOPIC
    assert sam_template["Parameters"]["OperationsEmail"]["Default"] == ""


def _reserved(cfn: dict[str, Any], function_id: str) -> Any:
    value = cfn["Resources"][function_id]["Properties"].get("ReservedConcurrentExecutions")
    # 0 would throttle every invocation: reservation hangs on a condition, off when the parameter is 0.
    assert isinstance(value, dict) and "Fn::If" in value, f"{function_id}: {value!r}"
    condition, reserved, unreserved = value["Fn::If"]
    assert condition == "ReservesConcurrency"
    assert unreserved == {"Ref": "AWS::NoValue"}
    return reserved


def test_every_function_reserves_concurrency(sam_template: dict[str, Any], cfn_template: dict[str, Any]) -> None:
    parameter = sam_template["Parameters"]["ReservedConcurrency"]
    assert parameter["Type"] == "Number"
    assert parameter["Default"] >= 1
    reserved = {f: _reserved(cfn_template, f) for f in resources_of_type(cfn_template, "AWS::Lambda::Function")}
    assert reserved["TuningEventsFunction"] == {"Ref": "ReservedConcurrency"}
    assert reserved["TrainingEventsFunction"] == {"Ref": "ReservedConcurrency"}
    # Budget checks of different jobs may fall in the same minute: they run side by side like events.
    assert reserved["BudgetCheckFunction"] == {"Ref": "ReservedConcurrency"}
    # Submissions and job ends arrive like events (their admissions are serialized by the ledger).
    assert reserved["QueueSubmissionsFunction"] == {"Ref": "ReservedConcurrency"}
    event_like = {"TuningEventsFunction", "TrainingEventsFunction", "BudgetCheckFunction", "QueueSubmissionsFunction"}
    # Scheduled functions run one at a time: a run that overlaps the next waits for it.
    for scheduled in set(reserved) - event_like:
        assert reserved[scheduled] == 1, scheduled
