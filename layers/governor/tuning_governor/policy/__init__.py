"""The governance policy: what the guards enforce, parsed from YAML or JSON and loaded from a file or SSM.

The document (every key optional; see ``policy.example.yaml`` and ``docs/reference/policy.md``)::

    mode: enforce                     # enforce | monitor (the default: decide and report, never stop)
    exempt_tag: governance:exempt     # tag value "true": never stopped, decisions still reported
    team_tag: team                    # tag naming the owning team
    budget_tag: governance:budget-usd # tag overriding the job's budget
    quotas: {ml.p3.2xlarge: 8}        # account limit of concurrent instances per type
    teams: {vision: {instances: {ml.p3.2xlarge: 4}, job_budget_usd: 500, monthly_budget_usd: 20000}}
    defaults: {job_budget_usd: 1000, max_runtime_hours: 48, stagnation_trials: 0, stagnation_minutes: 0,
               stagnation_usd: 0, max_failed_trials: 0,
               grace_minutes: {budget: 30}}  # per rule: notice first, stop at the breach + 30 min
    prices: {ml.p3.2xlarge: 3.825, eu-north-1: {ml.g5.xlarge: 1.6}}  # USD per instance-hour, all regions or
                                      # one region; they fill gaps (refreshed and bundled catalogs win)
    teams: {vision: {slack_secret: tuning-governor/teams/vision,   # a team's own report channels, besides
                     sns_topic_arn: arn:aws:sns:us-east-1:123456789012:tg-team-vision}}  # the default ones
    slack_users: {alice@example.com: U012AB3CD}  # owner tag value -> Slack member ID, for mentions

The package, one module per reason to change: ``model`` (the policy and its query helpers, pure),
``fields`` (field types and validators), ``tags`` (budget and exemption tags as jobs carry them),
``rules`` (each rule's declaration: its own ``defaults`` keys, composed into ``Defaults``, and its traits),
``document`` (YAML/JSON text to a validated ``Policy``), ``errors`` (``PolicyError`` and how problems are
worded) and ``sources`` (a file or an SSM parameter, keeping the last good policy when an update is
invalid). Import from the package: the names below are its public API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuning_governor.lazy import lazy_exports

if TYPE_CHECKING:
    from tuning_governor.policy.document import parse_policy
    from tuning_governor.policy.errors import PolicyError, PolicyUnavailable, render_path
    from tuning_governor.policy.fields import TOPIC_ARN
    from tuning_governor.policy.model import (
        DEFAULT_BUDGET_TAG,
        Budget,
        BudgetSource,
        Defaults,
        Mode,
        Policy,
        TeamPolicy,
    )
    from tuning_governor.policy.rules import GraceRule
    from tuning_governor.policy.sources import (
        BUNDLED_POLICY,
        DEFAULT_MAX_AGE_SECONDS,
        FilePolicySource,
        LoadedPolicy,
        PolicySource,
        SsmPolicySource,
        bundled_policy_source,
        load_policy,
        policy_source,
    )
    from tuning_governor.policy.tags import TagWarning, parse_budget_tag, tag_lookup

#: Each public name and the module that defines it, imported on first use (PEP 562): importing one
#: submodule (or this package for one name) does not load the others' dependencies.
_EXPORTS: dict[str, str] = {
    "BUNDLED_POLICY": "tuning_governor.policy.sources",
    "Budget": "tuning_governor.policy.model",
    "BudgetSource": "tuning_governor.policy.model",
    "DEFAULT_BUDGET_TAG": "tuning_governor.policy.model",
    "DEFAULT_MAX_AGE_SECONDS": "tuning_governor.policy.sources",
    "Defaults": "tuning_governor.policy.model",
    "FilePolicySource": "tuning_governor.policy.sources",
    "GraceRule": "tuning_governor.policy.rules",
    "LoadedPolicy": "tuning_governor.policy.sources",
    "Mode": "tuning_governor.policy.model",
    "Policy": "tuning_governor.policy.model",
    "PolicyError": "tuning_governor.policy.errors",
    "PolicySource": "tuning_governor.policy.sources",
    "PolicyUnavailable": "tuning_governor.policy.errors",
    "SsmPolicySource": "tuning_governor.policy.sources",
    "TOPIC_ARN": "tuning_governor.policy.fields",
    "TagWarning": "tuning_governor.policy.tags",
    "TeamPolicy": "tuning_governor.policy.model",
    "bundled_policy_source": "tuning_governor.policy.sources",
    "load_policy": "tuning_governor.policy.sources",
    "parse_budget_tag": "tuning_governor.policy.tags",
    "parse_policy": "tuning_governor.policy.document",
    "policy_source": "tuning_governor.policy.sources",
    "render_path": "tuning_governor.policy.errors",
    "tag_lookup": "tuning_governor.policy.tags",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "BUNDLED_POLICY",
    "DEFAULT_BUDGET_TAG",
    "DEFAULT_MAX_AGE_SECONDS",
    "TOPIC_ARN",
    "Budget",
    "BudgetSource",
    "Defaults",
    "FilePolicySource",
    "GraceRule",
    "LoadedPolicy",
    "Mode",
    "Policy",
    "PolicyError",
    "PolicySource",
    "PolicyUnavailable",
    "SsmPolicySource",
    "TagWarning",
    "TeamPolicy",
    "bundled_policy_source",
    "load_policy",
    "parse_budget_tag",
    "parse_policy",
    "policy_source",
    "render_path",
    "tag_lookup",
]
