"""The permissions boundary bounds: rendered for a sample deployment (every optional parameter set, names
outside the stack's), every action it allows on every resource is granted to a role of the translated
template on a resource the boundary names, its resources are the stack's own or the configured ones, and
what a deployer could use to read or run outside the stack is refused."""

from __future__ import annotations

import fnmatch
import json
import warnings
from typing import Any

import pytest

from tests.template.boundary import (
    BOUNDARY_CHANNEL_LIST,
    CHANNEL_SAMPLES,
    CHANNEL_SECRETS,
    SAMPLE_PARAMETERS,
    STACK_PREFIX,
    Grant,
    boundary_template,
    generalise,
    policy_grants,
    render_boundary,
    template_grants,
)
from tests.template.deployer import ACCOUNT, REGION, allowing

# One worker runs the deployer-policy modules: deployer.py's cached build is made once.
pytestmark = pytest.mark.xdist_group("deployer")

BOUNDARY = render_boundary()
NOTHING_OPTIONAL = {name: "" if isinstance(value, str) else [""] for name, value in SAMPLE_PARAMETERS.items()}

# Resources the boundary names that are neither the stack's nor configured: the governor governs every
# tuning job in the account (and creates queued ones), so SageMaker's jobs are named account-wide; the
# reports topic's key is AWS's SNS managed key, whose id no document can know: only through SNS, by alias.
ACCOUNT_WIDE = {
    "arn:aws:sagemaker:*:*:hyper-parameter-tuning-job/*": "every tuning job of the account is governed",
    "arn:aws:sagemaker:*:*:training-job/*": "every trial of a governed tuning job is read",
    "arn:aws:kms:*:*:key/*": "the SNS managed key (condition: through SNS, alias/aws/sns)",
}


def _account_free(arn: str) -> str:
    return arn.replace(f":{ACCOUNT}:", ":*:")


def _action_matches(granted: str, action: str) -> bool:
    return fnmatch.fnmatchcase(action.lower(), granted.lower())


def test_every_action_the_boundary_allows_is_granted_to_a_stack_role_on_a_resource_it_names(
    cfn_template: dict[str, Any],
) -> None:
    granted = template_grants(cfn_template)
    unmatched: list[str] = []
    for bound in policy_grants(BOUNDARY, "boundary"):
        # The template's grant, widened only to what a document written before the stack can know
        # (any region, the stack-name prefix), must contain the boundary's resource: the boundary is
        # no broader than the grant. A conditioned template grant needs the same condition here.
        if not any(
            _action_matches(grant.action, bound.action)
            and fnmatch.fnmatchcase(bound.resource, generalise(grant.resource))
            and grant.condition <= bound.condition
            for grant in granted
        ):
            unmatched.append(f"{bound.origin}: {bound.action} on {bound.resource}")
    assert unmatched == [], "the boundary allows what no role of the stack is granted"


def _covers(bound: Grant, grant: Grant) -> bool:
    return (
        _action_matches(bound.action, grant.action)
        and fnmatch.fnmatchcase(grant.resource, bound.resource)
        and bound.condition <= grant.condition
    )


def test_the_boundary_leaves_every_stack_role_what_the_template_grants_it(cfn_template: dict[str, Any]) -> None:
    bounds = policy_grants(BOUNDARY, "boundary")
    cut = [
        f"{grant.origin}: {grant.action} on {grant.resource}"
        for grant in template_grants(cfn_template)
        if not any(_covers(bound, grant) for bound in bounds)
    ]
    assert cut == [], "the boundary would take these from the stack's roles"


def test_the_boundary_administers_no_iam() -> None:
    # Handing the scheduler its role and SageMaker the teams' execution roles (each only to that service),
    # and reading the submitters' roles (the queue's SenderId is a role's unique id): nothing else of IAM.
    iam = [grant for grant in policy_grants(BOUNDARY, "boundary") if grant.action.startswith("iam:")]
    assert {grant.action for grant in iam} == {"iam:PassRole", "iam:GetRole"}
    passed_to = {grant.resource: grant.condition for grant in iam if grant.action == "iam:PassRole"}
    assert passed_to == {
        f"arn:aws:iam::{ACCOUNT}:role/{STACK_PREFIX}*": {
            ("StringLike", "iam:PassedToService", ("scheduler.amazonaws.com",))
        },
        **{
            role: {("StringLike", "iam:PassedToService", ("sagemaker.amazonaws.com",))}
            for role in SAMPLE_PARAMETERS["SubmitExecutionRoleArns"]
        },
    }


def _scopable(action: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # parliament imports pkg_resources
        import parliament  # type: ignore[import-untyped]  # no stubs

    prefix, name = action.split(":")
    service = next(s for s in parliament.iam_definition if s["prefix"] == prefix)
    privileges = [p for p in service["privileges"] if fnmatch.fnmatchcase(p["privilege"], name)]
    assert privileges, f"{action} is not in parliament's IAM database"
    return any(r["resource_type"] for p in privileges for r in p["resource_types"])


def _configured(resource: str) -> bool:
    values = [v for value in SAMPLE_PARAMETERS.values() for v in ([value] if isinstance(value, str) else value)]
    return any(value in resource for value in values)


def test_the_boundary_names_only_the_stack_and_the_configured_names() -> None:
    outside: list[str] = []
    for bound in policy_grants(BOUNDARY, "boundary"):
        resource = _account_free(bound.resource)
        if resource == "*":
            if _scopable(bound.action):
                outside.append(f"{bound.origin}: {bound.action} on * (IAM can scope it)")
        elif f"{STACK_PREFIX}*" not in resource and not _configured(bound.resource) and resource not in ACCOUNT_WIDE:
            outside.append(f"{bound.origin}: {bound.action} on {bound.resource}")
        elif resource == "arn:aws:kms:*:*:key/*" and not any(key == "kms:ViaService" for _, key, _ in bound.condition):
            outside.append(f"{bound.origin}: {bound.action} on every key, not only through SNS")
    assert outside == []


def _allowed(document: dict[str, Any], action: str, arn: str, passed_to: str | None = None) -> bool:
    """Allowed by some statement whose conditions on the passed-to service (if any) admit ``passed_to``."""
    for statement in allowing(document, action, arn):
        wanted = statement.get("Condition", {}).get("StringEquals", {}).get("iam:PassedToService")
        if wanted is None or passed_to in (wanted if isinstance(wanted, list) else [wanted]):
            return True
    return False


def _arn(service: str, rest: str) -> str:
    region = "" if service == "iam" else REGION
    return f"arn:aws:{service}:{region}:{ACCOUNT}:{rest}"


ELSEWHERE = [
    ("secretsmanager:GetSecretValue", _arn("secretsmanager", "secret:prod/payments/db-AbCdEf"), None),
    ("ssm:GetParameter", _arn("ssm", "parameter/prod/payments/db-password"), None),
    ("sns:Publish", _arn("sns", "payments-alerts"), None),
    ("iam:PassRole", _arn("iam", "role/OrganizationAccountAccessRole"), "sagemaker.amazonaws.com"),
    ("iam:PassRole", _arn("iam", f"role/{STACK_PREFIX}-prod-BudgetCheckSchedulerRole-X"), "sagemaker.amazonaws.com"),
    ("iam:GetRole", _arn("iam", "role/OrganizationAccountAccessRole"), None),
    ("lambda:InvokeFunction", _arn("lambda", "function:payments-api"), None),
    ("dynamodb:GetItem", _arn("dynamodb", "table/payments"), None),
]


@pytest.mark.parametrize(("action", "arn", "passed_to"), ELSEWHERE, ids=[f"{a} {r}" for a, r, _ in ELSEWHERE])
def test_the_boundary_refuses_what_a_deployer_could_use_outside_the_stack(
    action: str, arn: str, passed_to: str | None
) -> None:
    assert not _allowed(BOUNDARY, action, arn, passed_to), f"the boundary allows {action} on {arn}"


CONFIGURED = [
    ("secretsmanager:GetSecretValue", str(SAMPLE_PARAMETERS["SlackWebhookSecretArn"]), None),
    *[("secretsmanager:GetSecretValue", arn, None) for arn in CHANNEL_SAMPLES.values()],
    ("secretsmanager:GetSecretValue", _arn("secretsmanager", "secret:ml-platform/team-slack/nlp-AbCdEf"), None),
    ("ssm:GetParameter", _arn("ssm", "parameter/ml-platform/governance-policy"), None),
    ("sns:Publish", _arn("sns", "ml-team-nlp"), None),
    ("iam:PassRole", _arn("iam", "role/ml-exec-cv"), "sagemaker.amazonaws.com"),
    ("iam:GetRole", _arn("iam", "role/ml-submit-nlp"), None),
]


@pytest.mark.parametrize(("action", "arn", "passed_to"), CONFIGURED, ids=[f"{a} {r}" for a, r, _ in CONFIGURED])
def test_the_boundary_allows_the_configured_names(action: str, arn: str, passed_to: str | None) -> None:
    assert _allowed(BOUNDARY, action, arn, passed_to)
    assert not _allowed(render_boundary(NOTHING_OPTIONAL), action, arn, passed_to), "not configured: not allowed"


def test_the_boundary_takes_the_stacks_parameters_as_the_stack_spells_them(sam_template: dict[str, Any]) -> None:
    # The webhook channels' secrets besides Slack's come as one list, so a new channel leaves the boundary as it is.
    parameters = dict(boundary_template()["Parameters"])
    channels = parameters.pop(BOUNDARY_CHANNEL_LIST)
    assert set(parameters) == set(SAMPLE_PARAMETERS) - {BOUNDARY_CHANNEL_LIST, *CHANNEL_SECRETS.values()}
    for name, spec in parameters.items():
        stack = sam_template["Parameters"][name]
        assert {k: stack.get(k) for k in ("Type", "Default", "AllowedPattern")} == {
            k: spec.get(k) for k in ("Type", "Default", "AllowedPattern")
        }, name
    assert "msteams" in CHANNEL_SECRETS
    for name in CHANNEL_SECRETS.values():
        stack = sam_template["Parameters"][name]
        assert (stack["Type"], stack["Default"]) == ("String", "") and channels["Type"] == "CommaDelimitedList"
        # CloudFormation matches a list's AllowedPattern against each of its values.
        assert stack["AllowedPattern"] == channels["AllowedPattern"], name


# kms:ResourceAliases is a condition of every operation on a KMS key ("Conditions for KMS key operations",
# https://docs.aws.amazon.com/kms/latest/developerguide/kms-api-permissions-reference.html); parliament
# 1.6.4's database lacks it, so it is added there for the lint, on the actions the boundary conditions.
ALIASES_CONDITIONED = ("Decrypt", "GenerateDataKey*")


def _parliament_knows_resource_aliases() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        import parliament

    kms = next(s for s in parliament.iam_definition if s["prefix"] == "kms")
    for privilege in kms["privileges"]:
        if any(fnmatch.fnmatchcase(privilege["privilege"], name) for name in ALIASES_CONDITIONED):
            for resource_type in privilege["resource_types"]:
                if (
                    resource_type["resource_type"] == "key*"
                    and "kms:ResourceAliases" not in resource_type["condition_keys"]
                ):
                    resource_type["condition_keys"].append("kms:ResourceAliases")


def _parliament(document: dict[str, Any]) -> list[tuple[str, str]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        from parliament import analyze_policy_string

    return [(f.issue, str(f.detail)) for f in analyze_policy_string(json.dumps(document)).findings]


@pytest.mark.parametrize("parameters", [SAMPLE_PARAMETERS, NOTHING_OPTIONAL], ids=["all set", "none set"])
def test_parliament_finds_nothing_in_the_rendered_boundary(parameters: dict[str, Any]) -> None:
    document = render_boundary(parameters)
    # Without the database entry, the only findings are that condition, once per KMS action ...
    assert {issue for issue, _ in _parliament(document)} <= {"UNKNOWN_CONDITION_FOR_ACTION"}
    _parliament_knows_resource_aliases()
    # ... and with it, nothing at any severity.
    assert _parliament(document) == []
