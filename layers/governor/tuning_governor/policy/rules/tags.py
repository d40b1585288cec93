"""The tags rule's declaration (``governance.rules.tags``): it warns only, on the policy's tag keys."""

from __future__ import annotations

from tuning_governor.policy.rules.base import RuleSpec, register

TAGS = register(
    RuleSpec(
        name="tags",
        order=60,
        description="Governance tags with a value or a key spelling the governor cannot honour",
        reads=("budget_tag", "exempt_tag", "team_tag"),
    )
)
