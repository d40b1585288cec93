"""The tags rule: governance tags the governor cannot honour (warns only)."""

from __future__ import annotations

from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules.base import Rule, registry
from tuning_governor.models.decisions import Decision
from tuning_governor.policy import Policy
from tuning_governor.policy.rules.tags import TAGS


@registry.register
class TagsRule(Rule):
    """Warn, once per job, about governance tags it cannot honour: a budget it cannot read, an
    exemption value other than true/false, a key that matches only when case is ignored, or a team tag
    the job's execution role overrules (``teams.<team>.execution_roles``).

    Never stops anything: the job is governed as if the tag were absent (the next budget source
    applies; a mis-cased exemption key exempts nothing). Judged on arrival and on each sweep (tags
    changed later are seen within a sweep interval), not on trial events: a claim per trial event
    would only find the decision already made.
    """

    spec = TAGS
    triggers = frozenset({"arrival", "sweep"})
    permissions = frozenset()

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        problems = policy.tag_warnings(job.tags, job.roles)
        if not problems:
            return None
        return self._decision(
            "warning",
            job,
            "; ".join(p.message for p in problems),
            tags={p.key: {"value": p.value, "problem": p.problem} for p in problems},
        )
