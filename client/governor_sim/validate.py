"""``tuning-governor validate POLICY``: check a policy before it goes live, like a linter.

    tuning-governor validate policy.yaml                     # offline: schema + semantic checks
    tuning-governor validate policy.yaml --format json       # for CI pipelines (docs/validate-result.schema.json)
    tuning-governor validate policy.yaml --account --region eu-west-1   # also compare quotas with Service Quotas
    tuning-governor validate policy.yaml --slack-secret-prefix tuning-governor/teams/ --team-topic-prefix tg-team-

Exit status: 0 the policy is good (notes only), 1 it is valid but has warnings, 2 it is broken (the
governor would refuse it: a syntax error, an unknown key, a wrong value) or unreadable.

The schema checks are the governor's own (``parse_policy``: the same messages it logs when it rejects
an update). The semantic checks, all warnings, find what is valid but will not do what it says:

- ``deprecated-key``: a key still read under an old name (``Policy.warnings()``);
- ``monitor-mode-stops-nothing``: stop guards or limits set while ``mode`` is monitor (or absent);
- ``budget-below-one-hour``: a per-job budget a single hour at a team's instance limit (or one
  instance of an account-limited type) already exceeds, at the bundled catalog's price in ``--region``
  (the policy's ``prices`` fill gaps, as in the governor);
- ``monthly-below-job-budget``: a team's monthly budget below its per-job budget;
- ``team-limit-above-quota``: a team limit above the policy's account quota for the type (never reached);
- ``unpriced-instance-type``: a type the bundled catalog and the policy's ``prices`` price nowhere
  (often a typo: the governor cannot cost its trials);
- ``quota-above-account`` (``--account`` only): a policy quota or team limit above the account's
  Service Quota for the type (the lower figure governs). Offline this check is skipped with a note;
- ``team-channel-not-granted``: a team's ``slack_secret`` not named under the stack's
  ``SlackSecretPrefix``, or its ``sns_topic_arn`` outside ``--region`` or not named under
  ``TeamTopicPrefix`` (the governor would not use it; the team's reports go to the default channels
  only). The prefixes come from ``--slack-secret-prefix`` / ``--team-topic-prefix`` or the
  ``SLACK_SECRET_PREFIX`` / ``TEAM_TOPIC_PREFIX`` environment variables (the functions' own); unknown,
  the check is skipped with a note.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog
from tuning_governor.policy import Policy, PolicyError, parse_policy, render_path
from tuning_governor.routing import ChannelGrants, routing_warnings

Severity = Literal["error", "warning", "note"]
Status = Literal["ok", "warnings", "broken"]
SCHEMA_ID: Literal["tuning-governor/validate-result/v1"] = "tuning-governor/validate-result/v1"
DEFAULT_REGION = "us-east-1"
EXIT_CODES: dict[Status, int] = {"ok": 0, "warnings": 1, "broken": 2}

# Quota lookup for --account: an instance type -> the account's concurrent training instances, or None.
AccountQuota = Callable[[str], int | None]


class Finding(BaseModel):
    """One problem: how bad, a stable code for CI filters, where in the document, and what to do."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    severity: Severity
    code: str
    path: str | None
    message: str


class ValidationResult(BaseModel):
    """What ``--format json`` prints (its JSON Schema: docs/validate-result.schema.json)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_id: Literal["tuning-governor/validate-result/v1"] = SCHEMA_ID
    policy: str
    status: Status
    exit_code: int
    region: str
    account_checked: bool
    findings: list[Finding]


# -- checks (pure: the policy, a catalog, and optionally the account's quotas) -----------------------
def _money(value: Decimal) -> str:
    return f"${value.quantize(Decimal('0.01'))}"


def _deprecated(policy: Policy) -> list[Finding]:
    # The governor's own warnings (what it logs when it loads the policy), worded as it words them; each
    # starts with the path it is about. Any warning it adds later shows up here as policy-warning.
    found: list[Finding] = []
    for text in policy.warnings():
        head = text.split(" ", 1)[0]
        path = head if ("." in head or "[" in head) and not head.endswith(":") else None
        code = "deprecated-key" if "deprecated" in text else "policy-warning"
        found.append(Finding(severity="warning", code=code, path=path, message=text))
    return found


def _stop_guards(policy: Policy) -> list[str]:
    d = policy.defaults
    guards: list[str] = []
    if d.job_budget:
        guards.append("defaults.job_budget_usd" if d.job_budget_usd is not None else "defaults.budget_usd")
    for key in ("max_runtime_hours", "stagnation_trials", "stagnation_minutes", "stagnation_usd", "max_failed_trials"):
        if getattr(d, key):
            guards.append(f"defaults.{key}")
    for name, team in sorted(policy.teams.items()):
        if team.job_budget:
            guards.append(render_path(("teams", name, "job_budget_usd")))
        if team.monthly_budget_usd:
            guards.append(render_path(("teams", name, "monthly_budget_usd")))
        if team.instances:
            guards.append(render_path(("teams", name, "instances")))
    if policy.quotas:
        guards.append("quotas")
    if policy.spot_quotas:
        guards.append("spot_quotas")
    return guards


def _monitor_mode(policy: Policy) -> list[Finding]:
    guards = _stop_guards(policy)
    if policy.enforcing or not guards:
        return []
    return [
        Finding(
            severity="warning",
            code="monitor-mode-stops-nothing",
            path="mode",
            message=(
                f"mode is monitor{'' if 'mode' in policy.model_fields_set else ' (the default: mode is not set)'}:"
                f" {', '.join(guards)} will be evaluated and reported but no job will be stopped;"
                " set mode: enforce when the replay and the reports look right"
            ),
        )
    ]


def _grace(policy: Policy) -> list[Finding]:
    # A budget can always come from a job's tag, so its grace period always means something.
    d = policy.defaults
    rule_on = {
        "runtime": bool(d.max_runtime_hours),
        "stagnation": bool(d.stagnation_trials or d.stagnation_minutes or d.stagnation_usd),
        "failed-trials": bool(d.max_failed_trials),
    }
    return [
        Finding(
            severity="warning",
            code="grace-for-a-rule-that-is-off",
            path=render_path(("defaults", "grace_minutes", rule)),
            message=(
                f"{render_path(('defaults', 'grace_minutes', rule))} is {minutes:g} but the {rule} rule is off:"
                " the grace period delays nothing"
            ),
        )
        for rule, minutes in sorted(d.grace_minutes.items())
        if minutes and not rule_on.get(rule, True)
    ]


def _hourly(catalog: PriceCatalog, region: str, instance_type: str) -> Decimal | None:
    quote = catalog.quote(region, instance_type)
    return quote.usd_per_hour if quote is not None else None


def _budgets(policy: Policy, catalog: PriceCatalog, region: str) -> list[Finding]:
    found: list[Finding] = []
    default = policy.defaults.job_budget or None
    default_path = "defaults.job_budget_usd" if policy.defaults.job_budget_usd is not None else "defaults.budget_usd"
    for name, team in sorted(policy.teams.items()):
        budget = team.job_budget if team.job_budget is not None else default
        if not budget:
            continue
        if team.job_budget is not None:
            path = render_path(("teams", name, "job_budget_usd" if team.job_budget_usd is not None else "budget_usd"))
        else:
            path = default_path
        for itype, limit in sorted(team.instances.items()):
            price = _hourly(catalog, region, itype)
            if not limit or price is None or budget >= limit * price:
                continue
            hour = limit * price
            found.append(
                Finding(
                    severity="warning",
                    code="budget-below-one-hour",
                    path=path,
                    message=(
                        f"team {name}'s per-job budget {_money(budget)} is below one hour at its limit of"
                        f" {limit} {itype} ({limit} x ${price}/h = {_money(hour)} in {region}):"
                        " a job using the team's capacity reaches it in"
                        f" {int(budget / hour * 60)} minutes"
                    ),
                )
            )
        if team.monthly_budget_usd and team.monthly_budget_usd < budget:
            found.append(
                Finding(
                    severity="warning",
                    code="monthly-below-job-budget",
                    path=render_path(("teams", name, "monthly_budget_usd")),
                    message=(
                        f"team {name}'s monthly budget {_money(team.monthly_budget_usd)} is below its per-job"
                        f" budget {_money(budget)}: one job can spend the whole month's budget"
                    ),
                )
            )
    if default:
        for itype in sorted(set(policy.quotas) | set(policy.spot_quotas)):
            price = _hourly(catalog, region, itype)
            if price is not None and default < price:
                found.append(
                    Finding(
                        severity="warning",
                        code="budget-below-one-hour",
                        path=default_path,
                        message=(
                            f"the default per-job budget {_money(default)} is below one hour of a single"
                            f" {itype} (${price}/h in {region}): one trial on one instance exceeds it"
                        ),
                    )
                )
    return found


def _team_limits(policy: Policy) -> list[Finding]:
    found: list[Finding] = []
    for name, team in sorted(policy.teams.items()):
        for itype, limit in sorted(team.instances.items()):
            quota = policy.quotas.get(itype)
            if quota is not None and limit > quota:
                found.append(
                    Finding(
                        severity="warning",
                        code="team-limit-above-quota",
                        path=render_path(("teams", name, "instances", itype)),
                        message=(
                            f"team {name}'s limit of {limit} {itype} is above the policy's account quota of"
                            f" {quota} (quotas[{json.dumps(itype)}]): the team can never reach it"
                        ),
                    )
                )
    return found


def _known_types(catalog: PriceCatalog) -> set[str]:
    return {itype for region in catalog.regions() for itype in catalog.types(region)}


def _unpriced(policy: Policy, catalog: PriceCatalog, region: str) -> list[Finding]:
    named: dict[str, str] = {}
    for itype in policy.quotas:
        named.setdefault(itype, render_path(("quotas", itype)))
    for itype in policy.spot_quotas:
        named.setdefault(itype, render_path(("spot_quotas", itype)))
    for name, team in sorted(policy.teams.items()):
        for itype in team.instances:
            named.setdefault(itype, render_path(("teams", name, "instances", itype)))
    known = _known_types(catalog)
    found: list[Finding] = []
    for itype, path in sorted(named.items()):
        if catalog.quote(region, itype) is not None:
            continue
        hint = difflib.get_close_matches(itype, sorted(known), n=1)
        found.append(
            Finding(
                severity="warning",
                code="unpriced-instance-type",
                path=path,
                message=(
                    f"{itype} has no price in any region of the bundled catalog nor in the policy's prices:"
                    f" {f'did you mean {hint[0]}? ' if hint else ''}(a type the governor cannot price is"
                    " not counted against budgets; add it under prices if it is real)"
                ),
            )
        )
    return found


def _account(policy: Policy, account_quota: AccountQuota | None) -> list[Finding]:
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


def _team_channels(
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


def check_policy(
    policy: Policy,
    *,
    catalog: PriceCatalog | None = None,
    region: str = DEFAULT_REGION,
    account_quota: AccountQuota | None = None,
    slack_secret_prefix: str | None = None,
    team_topic_prefix: str | None = None,
) -> list[Finding]:
    """The semantic findings on a valid policy, in a stable order (see the module docstring).

    ``catalog`` defaults to the bundled one; the policy's ``prices`` fill its gaps. ``account_quota``
    (None: offline, the account check is skipped with a note) answers an instance type's applied
    Service Quota for training, or None when unknown. ``slack_secret_prefix`` / ``team_topic_prefix``:
    the stack's parameters ("" = none granted; None = unknown, that check is skipped with a note).
    """
    prices = (catalog or bundled_catalog()).with_policy_prices(policy.price_overrides(), policy.regional_prices())
    return [
        *_deprecated(policy),
        *_monitor_mode(policy),
        *_grace(policy),
        *_budgets(policy, prices, region),
        *_team_limits(policy),
        *_unpriced(policy, prices, region),
        *_account(policy, account_quota),
        *_team_channels(policy, region, slack_secret_prefix, team_topic_prefix),
    ]


def _schema_findings(exc: PolicyError) -> list[Finding]:
    if not exc.problems:
        return [Finding(severity="error", code="invalid-policy", path=None, message=str(exc).splitlines()[0])]
    found: list[Finding] = []
    for problem in exc.problems:
        path: str | None = None
        message = problem
        head, sep, rest = problem.partition(": ")
        if sep and not head.startswith(("line ", "JSON", "the document")):
            path, message = head, rest
        found.append(Finding(severity="error", code="invalid-policy", path=path, message=message))
    return found


def validate_text(
    text: str,
    source: str,
    *,
    region: str = DEFAULT_REGION,
    account_quota: AccountQuota | None = None,
    catalog: PriceCatalog | None = None,
    slack_secret_prefix: str | None = None,
    team_topic_prefix: str | None = None,
) -> ValidationResult:
    """Validate a policy's text: schema errors (broken) or semantic findings (warnings, notes)."""
    try:
        policy = parse_policy(text, source)
    except PolicyError as exc:
        findings = _schema_findings(exc)
    else:
        findings = check_policy(
            policy,
            catalog=catalog,
            region=region,
            account_quota=account_quota,
            slack_secret_prefix=slack_secret_prefix,
            team_topic_prefix=team_topic_prefix,
        )
    status: Status = "ok"
    if any(f.severity == "error" for f in findings):
        status = "broken"
    elif any(f.severity == "warning" for f in findings):
        status = "warnings"
    return ValidationResult(
        policy=source,
        status=status,
        exit_code=EXIT_CODES[status],
        region=region,
        account_checked=account_quota is not None,
        findings=findings,
    )


# -- the command -------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``validate`` subcommand's arguments."""
    parser.add_argument("policy", metavar="POLICY", help="the policy file, YAML or JSON (- = stdin)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument(
        "--region",
        default=DEFAULT_REGION,
        help=f"region whose prices (and, with --account, quotas) the checks use (default: {DEFAULT_REGION})",
    )
    parser.add_argument(
        "--account",
        action="store_true",
        help="also compare quotas and team limits with the account's SageMaker Service Quotas (AWS credentials)",
    )
    parser.add_argument(
        "--slack-secret-prefix",
        default=os.environ.get("SLACK_SECRET_PREFIX"),
        metavar="PREFIX",
        help="the stack's SlackSecretPrefix (default: $SLACK_SECRET_PREFIX): warn on team secrets outside it",
    )
    parser.add_argument(
        "--team-topic-prefix",
        default=os.environ.get("TEAM_TOPIC_PREFIX"),
        metavar="PREFIX",
        help="the stack's TeamTopicPrefix (default: $TEAM_TOPIC_PREFIX): warn on team topics outside it",
    )


def _live_account_quota(region: str) -> AccountQuota:
    # Imported here: the offline checks need neither boto3 nor credentials.
    from datetime import UTC, datetime  # noqa: PLC0415

    import boto3  # noqa: PLC0415

    from tuning_governor.adapters.quotas import QuotaGateway  # noqa: PLC0415

    gateway = QuotaGateway(boto3.client("service-quotas", region_name=region), clock=lambda: datetime.now(UTC))

    def applied(instance_type: str) -> int | None:
        quota = gateway.training_quota(instance_type)
        return quota.value if quota is not None else None

    return applied


def render_text(result: ValidationResult) -> str:
    """Linter-style lines ``POLICY: severity [code] path: message`` and a closing summary line."""
    lines = [
        f"{result.policy}: {f.severity} [{f.code}] {f.path + ': ' if f.path else ''}{f.message}"
        for f in result.findings
    ]
    counts = {s: sum(f.severity == s for f in result.findings) for s in ("error", "warning", "note")}
    lines.append(
        f"{result.policy}: {result.status} ({counts['error']} errors, {counts['warning']} warnings,"
        f" {counts['note']} notes)"
    )
    return "\n".join(lines)


def run_command(args: argparse.Namespace) -> int:
    """Run ``validate``: print the findings and return 0 (good), 1 (warnings) or 2 (broken/unreadable)."""
    source: str = args.policy
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"tuning-governor validate: cannot read {source}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    account_quota = _live_account_quota(args.region) if args.account else None
    result = validate_text(
        text,
        source,
        region=args.region,
        account_quota=account_quota,
        slack_secret_prefix=args.slack_secret_prefix,
        team_topic_prefix=args.team_topic_prefix,
    )
    if args.format == "json":
        print(result.model_dump_json(indent=2))
    else:
        print(render_text(result))
    return result.exit_code


def json_schema() -> dict[str, object]:
    """The JSON Schema of ``--format json`` (written to docs/validate-result.schema.json)."""
    return ValidationResult.model_json_schema()


if __name__ == "__main__":  # pragma: no cover - regenerates the schema file
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
