"""What users and the other layers rely on in template.yaml: parameters, outputs, handlers, the layer
requirements and samconfig.toml defaults."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from typing import Any

import pytest

from tests.template.cfn import ROOT

MEMBER_FUNCTIONS = ("TuningEventsFunction", "TrainingEventsFunction", "SweepFunction", "BudgetCheckFunction")
OUTPUTS = {
    "TableName": {"Ref": "GovernorTable"},
    "TopicArn": {"Ref": "ReportsTopic"},
    "DeadLetterQueueUrl": {"Ref": "EventsDeadLetterQueue"},
    "SubmissionQueueUrl": {"Ref": "SubmissionQueue"},
    "OperationsTopicArn": {"Ref": "OperationsTopic"},
    "TuningEventsFunctionName": {"Ref": "TuningEventsFunction"},
    "TrainingEventsFunctionName": {"Ref": "TrainingEventsFunction"},
    "SweepFunctionName": {"Ref": "SweepFunction"},
    "BudgetCheckFunctionName": {"Ref": "BudgetCheckFunction"},
    "BudgetCheckScheduleGroupName": {"Ref": "BudgetCheckScheduleGroup"},
    "GovernorLayerArn": {"Ref": "GovernorLayer"},
    "CaptureBucketName": {"Ref": "CaptureBucket"},
    "DashboardName": {"Ref": "GovernorDashboard"},
    # Organisation mode only: what the member stacks are deployed with (member/template.yaml).
    "HubEventBusArn": {"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/default"},
    "MemberTrustedRoleArns": {
        "Fn::Join": [
            ",",
            [{"Fn::GetAtt": [f"{function}Role", "Arn"]} for function in MEMBER_FUNCTIONS],
        ]
    },
}
CLOUDWATCH_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192,
                             2557, 2922, 3288, 3653]  # fmt: skip


def _allowed(template: dict[str, Any], parameter: str, value: str) -> bool:
    pattern = template["Parameters"][parameter]["AllowedPattern"]
    return re.fullmatch(pattern, value) is not None


def test_outputs_name_the_resources_users_and_tests_read(sam_template: dict[str, Any]) -> None:
    assert {name: output["Value"] for name, output in sam_template["Outputs"].items()} == OUTPUTS


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("", True),
        ("arn:aws:secretsmanager:us-east-1:123456789012:secret:governor/slack-AbC123", True),
        ("arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:slack_hook-x1Y2z3", True),
        # A partial ARN (no random suffix) would not match the exact-ARN IAM grant.
        ("arn:aws:secretsmanager:us-east-1:123456789012:secret:governor/slack", False),
        ("arn:aws:ssm:us-east-1:123456789012:parameter/slack-AbC123", False),
        ("https://hooks.slack.com/services/T000/B000/XXXX", False),
    ],
)
def test_slack_secret_parameter_takes_empty_or_a_full_secret_arn(
    sam_template: dict[str, Any], value: str, allowed: bool
) -> None:
    assert _allowed(sam_template, "SlackWebhookSecretArn", value) is allowed
    assert sam_template["Parameters"]["SlackWebhookSecretArn"]["Default"] == ""


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("", True),  # no team Slack secrets: nothing granted
        ("tuning-governor/teams/", True),
        ("slack_team.hooks@ml+/", True),
        # Without a closing "/" the grant secret:<prefix>* covers every name that merely starts alike:
        # "t" grants tuning-governor/slack, team-x/... and any other secret beginning with t.
        ("t", False),
        ("tuning-governor/teams", False),
        ("slack_team.hooks@ml+", False),
        ("/", False),
        ("teams//", False),
        # An ARN or a wildcard would make the grant secret:<arn>* or secret:**: names only.
        ("arn:aws:secretsmanager:us-east-1:123456789012:secret:teams/", False),
        ("teams/*", False),
        ("teams with spaces/", False),
    ],
)
def test_slack_secret_prefix_takes_empty_or_a_secret_name_prefix(
    sam_template: dict[str, Any], value: str, allowed: bool
) -> None:
    assert _allowed(sam_template, "SlackSecretPrefix", value) is allowed
    assert sam_template["Parameters"]["SlackSecretPrefix"]["Default"] == ""


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("", True),  # no team topics: nothing granted
        ("tg-team-", True),
        ("ml_reports_", True),
        # Without a closing - or _ the grant sns:...:<prefix>* covers every topic that merely starts
        # alike: "t" grants tuning-governor-reports, tg-team-... and any other topic beginning with t.
        ("t", False),
        ("tg-team", False),
        ("-", False),
        ("tg--", False),
        ("arn:aws:sns:us-east-1:123456789012:tg-team-", False),
        ("tg-team-*", False),
        ("tg/team", False),
    ],
)
def test_team_topic_prefix_takes_empty_or_a_topic_name_prefix(
    sam_template: dict[str, Any], value: str, allowed: bool
) -> None:
    assert _allowed(sam_template, "TeamTopicPrefix", value) is allowed
    assert sam_template["Parameters"]["TeamTopicPrefix"]["Default"] == ""


@pytest.mark.parametrize(("value", "allowed"), [("", True), ("ml-team@example.com", True), ("not-an-email", False)])
def test_report_email_parameter_is_optional(sam_template: dict[str, Any], value: str, allowed: bool) -> None:
    assert _allowed(sam_template, "ReportEmail", value) is allowed


def test_owner_tag_key_parameter_defaults_to_owner(sam_template: dict[str, Any]) -> None:
    parameters = sam_template["Parameters"]

    assert parameters["OwnerTagKey"]["Default"] == "owner"
    assert _allowed(sam_template, "OwnerTagKey", "created-by")
    assert not _allowed(sam_template, "OwnerTagKey", "")
    # The team tag is the governance policy's team_tag: a second source for it would disagree.
    assert "TeamTagKey" not in parameters


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("", True),  # the policy bundled in the layer
        ("/governor/policy", True),
        ("/ml-platform/tuning_governor/policy.v2", True),
        # IAM scopes the grant to arn:...:parameter<name>: a name without "/" would not match it.
        ("governor-policy", False),
        ("arn:aws:ssm:us-east-1:123456789012:parameter/governor/policy", False),
        ("/governor/policy with spaces", False),
        ("/governor/*", False),
    ],
)
def test_policy_parameter_takes_empty_or_an_ssm_parameter_name(
    sam_template: dict[str, Any], value: str, allowed: bool
) -> None:
    assert _allowed(sam_template, "PolicyParameterName", value) is allowed
    assert sam_template["Parameters"]["PolicyParameterName"]["Default"] == ""


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("rate(5 minutes)", True),
        ("rate(1 minute)", True),
        ("rate(1 hour)", True),
        ("rate(12 hours)", True),
        ("rate(2 days)", True),
        ("cron(0/10 * * * ? *)", True),
        ("cron(0 8 ? * MON-FRI *)", True),
        # EventBridge rejects these: singular unit with N > 1, plural with 1, zero, five cron fields.
        ("rate(5 minute)", False),
        ("rate(1 minutes)", False),
        ("rate(0 minutes)", False),
        ("cron(0/10 * * * ?)", False),
        ("5 minutes", False),
        ("", False),
    ],
)
def test_sweep_schedule_takes_an_eventbridge_schedule_expression(
    sam_template: dict[str, Any], value: str, allowed: bool
) -> None:
    assert _allowed(sam_template, "SweepSchedule", value) is allowed
    assert _allowed(sam_template, "SweepSchedule", sam_template["Parameters"]["SweepSchedule"]["Default"])


def test_log_parameters_only_take_values_aws_accepts(sam_template: dict[str, Any]) -> None:
    parameters = sam_template["Parameters"]

    assert parameters["LogRetentionInDays"]["AllowedValues"] == CLOUDWATCH_RETENTION_DAYS
    assert parameters["LogRetentionInDays"]["Default"] in CLOUDWATCH_RETENTION_DAYS
    assert parameters["LogLevel"]["AllowedValues"] == ["DEBUG", "INFO", "WARNING", "ERROR"]
    assert parameters["DetailedTracing"]["AllowedValues"] == ["true", "false"]
    assert parameters["DetailedTracing"]["Default"] == "false"
    assert sam_template["Conditions"]["TracesInDetail"] == {"Fn::Equals": [{"Ref": "DetailedTracing"}, "true"]}


def test_optional_integrations_hang_on_conditions(sam_template: dict[str, Any]) -> None:
    conditions = sam_template["Conditions"]

    assert conditions["HasSlack"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "SlackWebhookSecretArn"}, ""]}]}
    assert conditions["HasTeamSlackSecrets"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "SlackSecretPrefix"}, ""]}]}
    assert conditions["HasTeamTopics"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "TeamTopicPrefix"}, ""]}]}
    assert conditions["HasEmail"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "ReportEmail"}, ""]}]}
    assert conditions["HasPolicyParameter"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "PolicyParameterName"}, ""]}]}
    assert sam_template["Resources"]["ReportsEmailSubscription"]["Condition"] == "HasEmail"


@pytest.mark.parametrize(
    "function_id", ["TuningEventsFunction", "TrainingEventsFunction", "SweepFunction", "PriceRefreshFunction"]
)
def test_handler_module_exists_under_code_uri(sam_template: dict[str, Any], function_id: str) -> None:
    properties = sam_template["Resources"][function_id]["Properties"]
    module, _, function = properties["Handler"].rpartition(".")

    assert function == "handler"
    assert (ROOT / properties["CodeUri"] / f"{module}.py").is_file(), (
        f"{function_id}: {properties['CodeUri']}{module}.py is missing"
    )


def _layer_requirements() -> list[str]:
    lines = [
        line.split("#", 1)[0].strip()
        for line in (ROOT / "layers" / "governor" / "requirements.txt").read_text().splitlines()
    ]
    return [line for line in lines if line]


def _name(requirement: str) -> str:
    return re.split(r"[\[=<>!~ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_layer_requirements_pin_runtime_dependencies_only() -> None:
    requirements = _layer_requirements()
    names = {_name(line) for line in requirements}

    # The whole closure, installed with --no-deps: Powertools (+ jmespath, typing-extensions), its
    # tracer (aws-xray-sdk + wrapt, without the botocore aws-xray-sdk declares), pydantic and its
    # parts, slack_sdk, and pyyaml (the governance policy).
    # Nothing the python3.13 runtime ships: boto3, botocore, s3transfer, dateutil, urllib3, six.
    assert names == {
        "aws-lambda-powertools",
        "jmespath",
        "typing-extensions",
        "aws-xray-sdk",
        "wrapt",
        "pydantic",
        "pydantic-core",
        "annotated-types",
        "typing-inspection",
        "slack-sdk",
        "pyyaml",
    }
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", line) for line in requirements), (
        "pin exact versions, no extras (the Makefile installs with --no-deps, so extras would pull nothing)"
    )
    # The dev environment runs the tests on exactly what the layer ships.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert sorted(project["dependencies"]) == sorted(requirements)


def test_layer_requirements_are_what_the_dev_environment_runs() -> None:
    installed = {_name(line): importlib.metadata.version(_name(line)) for line in _layer_requirements()}

    assert {_name(line): line.split("==", 1)[1] for line in _layer_requirements()} == installed


def _documented_runtime_sdk() -> dict[str, str]:
    """The boto3/botocore versions the deploy guide's "Lambda layer" section says the tests run on."""
    readme = (ROOT / "docs" / "how-to" / "deploy.md").read_text()
    found = dict(re.findall(r"`(boto3|botocore)==([0-9][0-9.]*)`", readme))
    assert set(found) == {"boto3", "botocore"}, (
        "docs/how-to/deploy.md names the tested boto3 and botocore as `name==version`"
    )
    return found


def test_dev_environment_runs_the_documented_runtime_sdk() -> None:
    documented = _documented_runtime_sdk()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    # The layer leaves the SDK to the Lambda runtime; the cli extra (which dev includes) pins the version
    # the tests run on, the one README documents, and the dev environment has exactly that installed.
    assert not {_name(line) for line in project["dependencies"]} & {"boto3", "botocore", "s3transfer"}
    extras = project["optional-dependencies"]
    assert "tuning-governor[cli]" in extras["dev"]
    assert {f"{name}=={version}" for name, version in documented.items()} <= set(extras["cli"])
    assert {name: importlib.metadata.version(name) for name in documented} == documented


def test_samconfig_defaults_for_guided_deploy() -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())["default"]

    assert config["global"]["parameters"]["stack_name"] == "tuning-governor"
    assert config["global"]["parameters"]["region"] == "us-east-1"
    deploy = config["deploy"]["parameters"]
    assert deploy["capabilities"] == "CAPABILITY_IAM"
    assert deploy["resolve_s3"] is True
    assert deploy["confirm_changeset"] is True
    assert config["build"]["parameters"] == {"cached": True, "parallel": True}
    assert config["validate"]["parameters"] == {"lint": True}


def test_the_codes_prefix_checks_are_the_templates_patterns(sam_template: dict[str, Any]) -> None:
    from tuning_governor.policy.routing import SECRET_PREFIX, TOPIC_PREFIX

    assert sam_template["Parameters"]["SlackSecretPrefix"]["AllowedPattern"] == f"^$|{SECRET_PREFIX.pattern}"
    assert sam_template["Parameters"]["TeamTopicPrefix"]["AllowedPattern"] == f"^$|{TOPIC_PREFIX.pattern}"


def test_the_sweeps_walk_of_member_places_is_set_from_parameters_within_the_settings_bounds(
    sam_template: dict[str, Any],
) -> None:
    from tuning_governor.settings import Settings

    parameters = sam_template["Parameters"]
    sweep = sam_template["Resources"]["SweepFunction"]["Properties"]
    variables = sweep["Environment"]["Variables"]
    assert variables["SWEEP_PARALLEL_PLACES"] == {"Ref": "SweepParallelPlaces"}
    assert variables["SWEEP_RESERVE_SECONDS"] == {"Ref": "SweepReserveSeconds"}
    fields = Settings.model_fields
    parallel = {type(m).__name__: m for m in fields["sweep_parallel_places"].metadata}
    assert parameters["SweepParallelPlaces"]["MinValue"] == parallel["Ge"].ge
    assert parameters["SweepParallelPlaces"]["MaxValue"] == parallel["Le"].le
    assert parameters["SweepParallelPlaces"]["Default"] == fields["sweep_parallel_places"].default
    reserve = {type(m).__name__: m for m in fields["sweep_reserve_seconds"].metadata}
    assert parameters["SweepReserveSeconds"]["MinValue"] == reserve["Ge"].ge
    assert parameters["SweepReserveSeconds"]["Default"] == fields["sweep_reserve_seconds"].default
    # The reserve leaves some of the sweep's time to walk places in.
    assert parameters["SweepReserveSeconds"]["MaxValue"] < sweep["Timeout"]
