"""``validate --account ID`` / ``--members``: each member account, checked the way the hub will reach it.

For every governed region of the member (``accounts.<id>.regions``, else ``--region``):

1. ``sts:AssumeRole`` of the member role ``<--member-role>-<region>`` (the ARN the hub assumes:
   ``tuning_governor.adapters.assumed_roles``); refused: ``member-role-not-assumable`` (error), the
   hub would report the member unmanaged and retry its events.
2. With those credentials, harmless read-only probes of what the hub calls there (one-item listings:
   ``PROBES``); refused: ``member-call-denied`` (error), naming the action.
3. The member stack's forwarding rules (member/template.yaml, ``FORWARDING``): the default bus's rules
   that target the hub's bus (``events:ListRuleNamesByTarget``), each read with ``events:DescribeRule``;
   a state-change type no ENABLED rule forwards there: ``member-rule-missing`` (error). The member role
   grants no EventBridge reads (it is exactly what the hub calls), so where they are refused the rule
   check is skipped with ``member-rule-not-checked`` (warning) and what to run instead.

A member that passes everything gets a ``member-ok`` note. Findings carry the account's path,
``accounts["<id>"]``, and name the region in their message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from governor_client.validate.findings import Finding, Severity
from tuning_governor.policy import Policy, render_path

DEFAULT_MEMBER_ROLE = "tuning-governor-member"
"""member/template.yaml's MemberRoleName default (the hub's MemberRoleName)."""

PROBES: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("sagemaker", "list_hyper_parameter_tuning_jobs", "sagemaker:ListHyperParameterTuningJobs", {"MaxResults": 1}),
    ("sagemaker", "list_training_jobs", "sagemaker:ListTrainingJobs", {"MaxResults": 1}),
    (
        "service-quotas",
        "list_service_quotas",
        "servicequotas:ListServiceQuotas",
        {"ServiceCode": "sagemaker", "MaxResults": 1},
    ),
)
"""(service, method, IAM action, arguments): one-item listings, nothing changed."""

FORWARDING: dict[str, str] = {
    "SageMaker HyperParameter Tuning Job State Change": "ForwardTuningJobStateChanges",
    "SageMaker Training Job State Change": "ForwardTrainingJobStateChanges",
}
"""The state changes the hub must receive, and the member/template.yaml rule that forwards each."""

SessionFor = Callable[[str, str], Any]
"""(account, region) -> a boto3 session with the member role's credentials (raises when refused)."""


@dataclass(frozen=True)
class MemberTarget:
    """Which members to check, as whom, and where their events must go."""

    accounts: tuple[str, ...]
    role_name: str = DEFAULT_MEMBER_ROLE
    hub_bus_arn: str = ""
    region: str = "us-east-1"


def _error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code") or type(exc).__name__)


def _finding(severity: Severity, code: str, account: str, message: str) -> Finding:
    return Finding(severity=severity, code=code, path=render_path(("accounts", account)), message=message)


def member_regions(policy: Policy, account: str, default_region: str) -> list[str]:
    terms = policy.accounts.get(account)
    return list(terms.regions) if terms is not None and terms.regions else [default_region]


def _probe_findings(session: Any, account: str, region: str) -> list[Finding]:
    found = []
    for service, method, action, arguments in PROBES:
        try:
            getattr(session.client(service, region_name=region), method)(**arguments)
        except Exception as exc:  # any refusal or failure is the finding
            found.append(
                _finding(
                    "error",
                    "member-call-denied",
                    account,
                    f"{region}: the member role cannot call {action} ({_error_code(exc)}): the hub calls it"
                    " there; redeploy member/template.yaml (its MemberRole grants exactly the hub's calls)",
                )
            )
    return found


def _forwarded_types(events: Any, rule_names: Iterable[str]) -> set[str]:
    """The state-change detail types that the ENABLED rules among ``rule_names`` match."""
    covered: set[str] = set()
    for name in rule_names:
        rule = events.describe_rule(Name=name)
        if rule.get("State") != "ENABLED":
            continue
        pattern = json.loads(rule.get("EventPattern") or "{}")
        if "aws.sagemaker" in pattern.get("source", []):
            covered.update(t for t in pattern.get("detail-type", []) if isinstance(t, str))
    return covered


def _rule_findings(session: Any, account: str, region: str, hub_bus_arn: str) -> list[Finding]:
    events = session.client("events", region_name=region)
    try:
        names = events.list_rule_names_by_target(TargetArn=hub_bus_arn).get("RuleNames", [])
        covered = _forwarded_types(events, names)
    except Exception as exc:  # refused (the member role grants no EventBridge reads)
        return [
            _finding(
                "warning",
                "member-rule-not-checked",
                account,
                f"{region}: the forwarding rules could not be read ({_error_code(exc)}): run"
                f" `aws events list-rule-names-by-target --target-arn {hub_bus_arn}` in the member",
            )
        ]
    return [
        _finding(
            "error",
            "member-rule-missing",
            account,
            f"{region}: no enabled rule forwards {detail_type!r} to the hub's bus {hub_bus_arn}"
            f" (member/template.yaml's {rule}): the hub receives none of these events from there"
            " (only the sweep finds its jobs); deploy the member stack in this region",
        )
        for detail_type, rule in FORWARDING.items()
        if detail_type not in covered
    ]


def check_member_place(session_for: SessionFor, target: MemberTarget, account: str, region: str) -> list[Finding]:
    """The findings on one member account in one region."""
    role = f"{target.role_name}-{region}"
    try:
        session = session_for(account, region)
    except Exception as exc:  # MemberUnreachable or any STS failure
        return [
            _finding(
                "error",
                "member-role-not-assumable",
                account,
                f"{region}: the member role {role} cannot be assumed ({_error_code(exc.__cause__ or exc)}):"
                " the hub would report this member unmanaged and retry its events; deploy member/template.yaml"
                " there, trusting the hub's function roles",
            )
        ]
    found = _probe_findings(session, account, region) + _rule_findings(session, account, region, target.hub_bus_arn)
    if not found:
        found.append(
            _finding(
                "note",
                "member-ok",
                account,
                f"{region}: role {role} assumed, {len(PROBES)} hub calls permitted,"
                f" {len(FORWARDING)} state changes forwarded to {target.hub_bus_arn}",
            )
        )
    return found


def member_findings(policy: Policy, target: MemberTarget, session_for: SessionFor) -> list[Finding]:
    """Every checked member's findings, by account then region; an account not in ``accounts`` is an error."""
    if not target.accounts:
        return [Finding(severity="note", code="no-members", path="accounts", message="the policy lists no accounts")]
    found: list[Finding] = []
    for account in target.accounts:
        if account not in policy.accounts:
            found.append(
                _finding(
                    "error",
                    "member-not-listed",
                    account,
                    f"{account} is not under the policy's accounts: the hub rejects its events; add it there",
                )
            )
            continue
        for region in member_regions(policy, account, target.region):
            found += check_member_place(session_for, target, account, region)
    return found


def live_session_for(role_name: str, region: str) -> SessionFor:
    """Sessions in members through STS with the caller's credentials, as the hub assumes the role."""
    import boto3  # noqa: PLC0415 - only with --account ID / --members

    from governor_client.cli.aws import cli_client  # noqa: PLC0415
    from tuning_governor.adapters.assumed_roles import AssumedRoles  # noqa: PLC0415

    roles = AssumedRoles(cli_client("sts", region), role_name, session_name="tuning-governor-validate")
    return lambda account, where: boto3.session.Session(**roles.session_kwargs(account, where))  # type: ignore[arg-type]


def default_hub_bus(region: str) -> str:
    """The caller's account's default bus in ``region`` (the hub's HubEventBusArn when run in the hub)."""
    from governor_client.cli.aws import cli_client  # noqa: PLC0415

    arn = cli_client("sts", region).get_caller_identity()["Arn"]
    partition, account = arn.split(":")[1], arn.split(":")[4]
    return f"arn:{partition}:events:{region}:{account}:event-bus/default"
