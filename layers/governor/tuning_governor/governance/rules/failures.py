"""The failed-trials rule: stop a job after N failed trials."""

from __future__ import annotations

from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules.base import STOP_PERMISSION, Rule, registry
from tuning_governor.models.decisions import Decision
from tuning_governor.policy import Policy


@registry.register
class FailedTrialsRule(Rule):
    """Stop after N failed trials (0 = off). Judged on trial events, and by the sweep (a breach waiting
    for its grace period is stopped at its time even when no trial ends then)."""

    name = "failed-trials"
    order = 70
    description = "Failed trials per tuning job"
    triggers = frozenset({"trial", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    policy_keys = ("defaults.max_failed_trials",)

    late_ok = True
    grace_able = True

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        limit = policy.defaults.max_failed_trials
        if not limit or job.trials_failed < limit:
            return None
        return self._decision(
            "breach", job, f"{job.trials_failed} failed trials >= limit {limit}", failed=job.trials_failed, limit=limit
        )
