"""The failed-trials rule's declaration (``governance.rules.failures``)."""

from __future__ import annotations

from tuning_governor.policy.fields import Count
from tuning_governor.policy.rules.base import RuleSettings, RuleSpec, register


class FailedTrialsSettings(RuleSettings):
    max_failed_trials: Count = 0
    """Stop after this many failed trials (0 = off)."""


FAILED_TRIALS = register(
    RuleSpec(
        name="failed-trials",
        order=70,
        description="Failed trials per tuning job",
        settings=FailedTrialsSettings,
        reads_trials=True,
        grace_unless="the failed-trial limit (defaults.max_failed_trials) is raised",
    )
)
