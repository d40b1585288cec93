"""The failed-trials rule: stop a job after N failed trials."""

from __future__ import annotations

from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules.base import STOP_PERMISSION, Rule, registry
from tuning_governor.models.decisions import Decision
from tuning_governor.policy import Policy
from tuning_governor.policy.rules.failures import FAILED_TRIALS, FailedTrialsSettings


@registry.register
class FailedTrialsRule(Rule):
    """Stop after N failed trials (0 = off). Judged on trial events, and by the sweep (a breach waiting
    for its grace period is stopped at its time even when no trial ends then)."""

    spec = FAILED_TRIALS
    triggers = frozenset({"trial", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    late_ok = True

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        limit = FailedTrialsSettings.of(policy.defaults).max_failed_trials
        if not limit or job.trials_failed < limit:
            return None
        return self._decision(
            "breach", job, f"{job.trials_failed} failed trials >= limit {limit}", failed=job.trials_failed, limit=limit
        )
