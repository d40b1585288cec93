"""The concurrency rule's declaration (``governance.rules.concurrency``): the account's and teams'
instance limits are the policy's (``quotas``, ``spot_quotas``, ``teams.<team>.instances``)."""

from __future__ import annotations

from tuning_governor.policy.rules.base import RuleSpec, register

CONCURRENCY = register(
    RuleSpec(
        name="concurrency",
        order=10,
        description="Concurrent training instances per type vs. the applied Service Quota and team policy",
        reads=("quotas", "spot_quotas", "teams.<team>.instances", "defaults.on_over_capacity"),
        no_grace=(
            "concurrency is judged once, when the job arrives: a grace period would let it hold instances that"
            " the jobs arriving after it are refused, so it stays 0"
        ),
        requeued_as="stopped on arrival",
    )
)
