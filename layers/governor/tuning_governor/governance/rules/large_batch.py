"""The large-batch rule: a distributed job whose batch range, learning rate or warmup will not converge
(``domain.large_batch``, the checks ``tuning-governor check`` runs before launch), judged on arrival."""

from __future__ import annotations

from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules.base import STOP_PERMISSION, Rule, registry
from tuning_governor.models.decisions import Decision
from tuning_governor.policy import Policy
from tuning_governor.policy.rules.large_batch import LARGE_BATCH


@registry.register
class LargeBatchRule(Rule):
    """Warn once per job, on arrival, about its large-batch findings (learning rate not scaled with the
    batch range, no warmup, a batch beyond the literature or past the critical batch, trials judged
    before their warmup ends), each with its numbers and the paper it rests on.

    Never stops a job unless the policy says ``large_batch.on_arrival: stop`` (then a breach, stopped
    under ``mode: enforce`` like any other). Judged on the parts of the request the job item keeps
    (``domain.large_batch.arrival``); a job of an algorithm with no gradient batch (XGBoost) has none.
    The costs at risk are left out: arrival does not price the request.
    """

    spec = LARGE_BATCH
    triggers = frozenset({"arrival"})
    permissions = frozenset({STOP_PERMISSION})

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        settings = policy.large_batch
        if not job.batch_request or settings.on_arrival == "skip":
            return None
        # The checks load with the first job that has a batch to judge (XGBoost and tabular jobs have none).
        from tuning_governor.domain.large_batch import findings  # noqa: PLC0415 - see above

        try:
            found = [
                f for f in findings(job.batch_request, settings=settings, team=job.team) if f.severity == "warning"
            ]
        except (TypeError, ValueError, AttributeError, RecursionError):  # a stored request of an unreadable shape
            return None
        if not found:
            return None
        return self._decision(
            "breach" if settings.on_arrival == "stop" else "warning",
            job,
            "; ".join(f"{f.code}: {f.reason}" for f in found),
            findings=[
                {"code": f.code, "definition": f.definition, "reason": f.reason, "source": f.source} for f in found
            ],
        )
