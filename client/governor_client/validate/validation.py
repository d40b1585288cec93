"""A policy's text to a ``ValidationResult``: the governor's schema errors, or the semantic findings on
the policy and, when asked, on what it is compared with (the account's quotas, the stack's grants)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from governor_client.cli.defaults import DEFAULT_REGION
from governor_client.validate.findings import EXIT_CODES, AccountQuota, Finding, Status, ValidationResult
from tuning_governor.policy.document import parse_policy
from tuning_governor.policy.errors import PolicyError

if TYPE_CHECKING:
    from tuning_governor.domain.pricing import PriceCatalog
    from tuning_governor.policy.model import Policy


@dataclass(frozen=True)
class CheckOptions:
    """What the semantic checks compare a policy with, besides itself.

    ``catalog`` defaults to the bundled one; the policy's ``prices`` fill its gaps. ``account_quota``
    (None: offline, the account check is skipped with a note) answers an instance type's applied
    Service Quota for training, or None when unknown. ``slack_secret_prefix`` / ``team_topic_prefix``:
    the stack's parameters ("" = none granted; None = unknown, that check is skipped with a note).
    """

    region: str = DEFAULT_REGION
    account_quota: AccountQuota | None = None
    catalog: PriceCatalog | None = None
    slack_secret_prefix: str | None = None
    team_topic_prefix: str | None = None
    members: Callable[[Policy], list[Finding]] | None = None
    """``validate --account ID`` / ``--members``: the member checks (``validate.members``), or None."""


def check_policy(policy: Policy, options: CheckOptions | None = None) -> list[Finding]:
    """The semantic findings on a valid policy, in a stable order (see the package docstring). A broken
    policy's schema errors need none of them: they (and the price catalogue) load here."""
    from governor_client.validate.account import account_quota_findings, team_channel_findings  # noqa: PLC0415
    from governor_client.validate.checks import policy_findings  # noqa: PLC0415
    from tuning_governor.domain.pricing import bundled_catalog  # noqa: PLC0415

    options = options or CheckOptions()
    catalog = options.catalog or bundled_catalog()
    prices = catalog.with_policy_prices(policy.price_overrides(), policy.regional_prices())
    return [
        *policy_findings(policy, prices, options.region),
        *account_quota_findings(policy, options.account_quota),
        *team_channel_findings(policy, options.region, options.slack_secret_prefix, options.team_topic_prefix),
        *(options.members(policy) if options.members is not None else []),
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


def validate_text(text: str, source: str, options: CheckOptions | None = None) -> ValidationResult:
    """Validate a policy's text: schema errors (broken) or semantic findings (warnings, notes)."""
    options = options or CheckOptions()
    try:
        policy = parse_policy(text, source)
    except PolicyError as exc:
        findings = _schema_findings(exc)
    else:
        findings = check_policy(policy, options)
    status: Status = "ok"
    if any(f.severity == "error" for f in findings):
        status = "broken"
    elif any(f.severity == "warning" for f in findings):
        status = "warnings"
    return ValidationResult(
        policy=source,
        status=status,
        exit_code=EXIT_CODES[status],
        region=options.region,
        account_checked=options.account_quota is not None,
        findings=findings,
    )
