"""Rules on how a job runs: its runtime, its objective's progress, its failed trials."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from tuning_governor.domain.stagnation import replayed_stagnation
from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules.base import STOP_PERMISSION, Rule, registry
from tuning_governor.models.decisions import Decision
from tuning_governor.models.records import TrialRecord
from tuning_governor.policy import Policy
from tuning_governor.policy.rules.progress import RUNTIME, STAGNATION, RuntimeSettings, StagnationSettings


@registry.register
class RuntimeRule(Rule):
    """A tuning job running max_runtime_hours or longer is stopped (0 = off)."""

    spec = RUNTIME
    triggers = frozenset({"arrival", "trial", "sweep"})
    permissions = frozenset({STOP_PERMISSION})

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        cap_hours = RuntimeSettings.of(policy.defaults).max_runtime_hours
        if not cap_hours or job.created_at is None:
            return None
        cap = round(cap_hours * 3600)
        elapsed = int((job.now - job.created_at).total_seconds())
        if elapsed < cap:
            return None
        return self._decision(
            "breach",
            job,
            f"running {elapsed / 3600:.2f} h >= cap {cap_hours:g} h",
            runtime_seconds=elapsed,
            cap_seconds=cap,
        )


@registry.register
class StagnationRule(Rule):
    """Stop a job whose best objective has not improved by 1 % or more for N completed trials, M minutes
    or $D of spend (each 0 = off); the first measure that reaches its limit decides.

    Judged from the state kept on the job item (``JobFacts.stagnation``): trials since the last
    improvement, minutes from the improving trial's end to ``now`` (the event's time, or the sweep's
    clock), and dollars = the job's spend now (finished + accrued) - its spend at the improvement.
    Nothing is judged before the first completed trial with an objective value.
    """

    spec = STAGNATION
    triggers = frozenset({"trial", "sweep"})
    permissions = frozenset({STOP_PERMISSION})
    late_ok = True

    def evaluate_late(
        self, policy: Policy, job: JobFacts, trials: Callable[[], Sequence[TrialRecord]]
    ) -> Decision | None:
        """The stored state was advanced in the order trials were recorded; judged late, it is replayed
        as the trials' events would have come (by end time), at each trial, as the live path would have."""
        for state, ended in replayed_stagnation(job.objectives, trials()):
            decision = self.evaluate(policy, job.model_copy(update={"stagnation": state, "now": ended}), None)
            if decision is not None:
                return decision
        return None

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        defaults = StagnationSettings.of(policy.defaults)
        trials_limit, minutes_limit, usd_limit = (
            defaults.stagnation_trials,
            defaults.stagnation_minutes,
            defaults.stagnation_usd,
        )
        state = job.stagnation
        if not (trials_limit or minutes_limit or usd_limit) or state is None or state.improved_at is None:
            return None
        minutes = max(Decimal(0), Decimal(str((job.now - state.improved_at).total_seconds())) / 60)
        usd = (
            job.spent_usd - state.spent_at_improvement
            if job.spent_usd is not None and state.spent_at_improvement is not None
            else None
        )
        tripped: list[tuple[str, Any, str]] = []
        if trials_limit and state.trials_since >= trials_limit:
            tripped.append(("trials", trials_limit, f"{state.trials_since} completed trials"))
        if minutes_limit and minutes >= Decimal(str(minutes_limit)):
            tripped.append(("minutes", minutes_limit, f"{minutes:.1f} minutes"))
        if usd_limit and usd is not None and usd >= usd_limit:
            tripped.append(("usd", usd_limit, f"${usd:,.2f}"))
        if not tripped:
            return None
        measure, limit, amount = tripped[0]
        unit = {"trials": " trials", "minutes": " minutes", "usd": ""}[measure]
        shown_limit = f"${limit:,.2f}" if measure == "usd" else f"{limit:g}{unit}"
        best = state.best_objective
        return self._decision(
            "breach",
            job,
            f"{amount} without improving the best {state.metric} ({state.direction}) by 1 % or more"
            f" (limit {shown_limit}); best {best:.6g}",
            measure=measure,
            limit=limit,
            tripped=[name for name, _, _ in tripped],
            trials_without_improvement=state.trials_since,
            minutes_since_improvement=_plain_number(minutes.quantize(Decimal("0.01"))),
            usd_since_improvement=usd,
            spent_usd=job.spent_usd,
            spent_at_improvement_usd=state.spent_at_improvement,
            best_objective=best,
            objective_metric=state.metric,
            direction=state.direction,
            improved_at=state.improved_at.isoformat(),
            limits={"trials": trials_limit, "minutes": minutes_limit, "usd": usd_limit},
        )


def _plain_number(value: Decimal) -> int | Decimal:
    """30.00 minutes reads as 30."""
    return int(value) if value == value.to_integral_value() else value
