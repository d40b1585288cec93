"""The pricing rule's declaration (``governance.rules.pricing``): it warns only, on the policy's prices."""

from __future__ import annotations

from tuning_governor.policy.rules.base import RuleSpec, register

PRICING = register(
    RuleSpec(
        name="pricing",
        order=80,
        description="Instance types without a price in the job's region (approximate) or anywhere (unpriced)",
        reads=("prices",),
    )
)
