"""The large-batch rule's declaration (``governance.rules.large_batch``): its thresholds are the policy's
``large_batch`` section, which ``tuning-governor check`` reads before launch too."""

from __future__ import annotations

from tuning_governor.policy.rules.base import RuleSpec, register

LARGE_BATCH = register(
    RuleSpec(
        name="large-batch",
        order=65,
        description="Distributed trials whose batch range, learning rate or warmup will not converge",
        reads=("large_batch",),
    )
)
