"""The checks against what lies outside the policy: the account's Service Quotas (``--account``) and
the team channels the stack grants (its SlackSecretPrefix / TeamTopicPrefix)."""

from __future__ import annotations

from governor_client.validate.findings import AccountQuota, Finding
from tuning_governor.policy import Policy, render_path
from tuning_governor.policy.routing import ChannelGrants, routing_warnings


def account_quota_findings(policy: Policy, account_quota: AccountQuota | None) -> list[Finding]:
    if account_quota is None:
        if not (policy.quotas or any(team.instances for team in policy.teams.values())):
            return []
        return [
            Finding(
                severity="note",
                code="quotas-not-checked",
                path="quotas" if policy.quotas else None,
                message=(
                    "quotas and team limits were not compared with the account's Service Quotas (offline);"
                    " run with --account (AWS credentials, servicequotas:ListServiceQuotas) to compare them"
                ),
            )
        ]
    found: list[Finding] = []
    limits: list[tuple[str, str, int]] = [(render_path(("quotas", t)), t, n) for t, n in sorted(policy.quotas.items())]
    for name, team in sorted(policy.teams.items()):
        limits += [(render_path(("teams", name, "instances", t)), t, n) for t, n in sorted(team.instances.items())]
    for path, itype, limit in limits:
        applied = account_quota(itype)
        if applied is not None and limit > applied:
            found.append(
                Finding(
                    severity="warning",
                    code="quota-above-account",
                    path=path,
                    message=(
                        f"{limit} {itype} is above the account's Service Quota of {applied}"
                        f' ("{itype} for training job usage"): the lower figure governs;'
                        " request a quota increase or lower this figure"
                    ),
                )
            )
    return found


def team_channel_findings(
    policy: Policy, region: str, slack_secret_prefix: str | None, team_topic_prefix: str | None
) -> list[Finding]:
    kinds = {"slack_secret": slack_secret_prefix, "sns_topic_arn": team_topic_prefix}
    named = {key for team in policy.teams.values() for key in kinds if getattr(team, key)}
    unknown = sorted(key for key in named if kinds[key] is None)
    grants = ChannelGrants(
        slack_secret_prefix=slack_secret_prefix or "", topic_prefix=team_topic_prefix or "", region=region
    )
    found = [
        Finding(severity="warning", code="team-channel-not-granted", path=path, message=message)
        for path, message in routing_warnings(policy, grants)
        if kinds[path.rsplit(".", 1)[-1]] is not None
    ]
    if unknown:
        options = {"slack_secret": "--slack-secret-prefix", "sns_topic_arn": "--team-topic-prefix"}
        found.append(
            Finding(
                severity="note",
                code="team-channels-not-checked",
                path=None,
                message=(
                    f"teams' {' and '.join(unknown)} were not compared with what the stack grants; pass"
                    f" {' and '.join(options[k] for k in unknown)} (the stack's SlackSecretPrefix / TeamTopicPrefix)"
                    " to check them"
                ),
            )
        )
    return found


def live_account_quota(region: str) -> AccountQuota:
    # Imported here: the offline checks need neither boto3 nor credentials.
    from datetime import UTC, datetime  # noqa: PLC0415

    from governor_client.cli.aws import cli_client  # noqa: PLC0415
    from tuning_governor.adapters.quotas import QuotaGateway  # noqa: PLC0415

    gateway = QuotaGateway(cli_client("service-quotas", region), clock=lambda: datetime.now(UTC))

    def applied(instance_type: str) -> int | None:
        quota = gateway.training_quota(instance_type)
        return quota.value if quota is not None else None

    return applied
