"""The declarations of the rules on how a job runs (``governance.rules.progress``): its runtime cap and
its objective's progress."""

from __future__ import annotations

from decimal import Decimal

from tuning_governor.policy.fields import Count, Hours, Minutes, Money
from tuning_governor.policy.rules.base import RuleSettings, RuleSpec, register


class RuntimeSettings(RuleSettings):
    max_runtime_hours: Hours = 0.0
    """Stop a tuning job running longer than this (0 = off)."""


class StagnationSettings(RuleSettings):
    stagnation_trials: Count = 0
    """Stop after this many completed trials without a 1 % (or greater) improvement of the best (0 = off)."""
    stagnation_minutes: Minutes = 0.0
    """Stop when the best objective has not improved for this many minutes (0 = off)."""
    stagnation_usd: Money = Decimal(0)
    """Stop when the job has spent this many USD since its best objective last improved (0 = off)."""


RUNTIME = register(
    RuleSpec(
        name="runtime",
        order=40,
        description="Runtime cap per tuning job",
        settings=RuntimeSettings,
        grace_unless="the runtime cap (defaults.max_runtime_hours) is raised",
    )
)

STAGNATION = register(
    RuleSpec(
        name="stagnation",
        order=50,
        description="Trials, minutes or dollars without improving the best objective by 1 % or more",
        settings=StagnationSettings,
        reads_trials=True,
        grace_unless="its best objective improves by 1 % or more",
    )
)
