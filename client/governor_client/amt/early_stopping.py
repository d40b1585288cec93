"""Tuner-side early stopping: which trials the tuning job cuts short, and when.

Simplification (deliberate, documented): the decision is taken when a trial is launched, by comparing
the trial's planned objective with the values earlier trials reached at the same checkpoint. Real AMT
decides while the trial runs, from intermediate metrics; the outcome a governor observes — some trials
``Stopped`` with a shorter training time and a worse reported objective — is the same.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Protocol


class EarlyStoppingPolicy(Protocol):
    """Per tuning job: decide whether trial ``trial_index`` (1-based) is stopped early.

    Returns the fraction (0 < f < 1) of the trial's full training budget after which the tuner stops
    it, or ``None`` to let it run to the end. ``objective`` is the trial's planned final objective.
    """

    def decide(self, trial_index: int, objective: float) -> float | None: ...


def _better(a: float, b: float, maximize: bool) -> bool:
    return a > b if maximize else a < b


class HyperbandPolicy:
    """Successive halving over Hyperband brackets.

    Rungs sit at ``MinResource * eta**k`` (< ``MaxResource``). Trials are assigned to brackets
    ``0..len(rungs)``: bracket ``s`` is first evaluated at rung ``s`` (the last bracket is never cut).
    By default the assignment is round-robin; with ``weighted`` it follows Hyperband's own proportions
    (Li et al.: bracket ``k`` of ``k_max = len(rungs) - 1`` holds ``ceil((k_max + 1) * eta**k / (k + 1))``
    configurations and starts at rung ``k_max - k``; ``k = 0`` runs at the full resource), so most trials
    start at the smallest rung. At a rung a trial survives if it ranks in the top ``1/eta`` of all trials
    that reached that rung so far (at least ``eta - 1`` earlier results are needed before anyone is cut).
    """

    def __init__(
        self, min_resource: float, max_resource: float, maximize: bool, eta: int = 3, *, weighted: bool = False
    ) -> None:
        if min_resource <= 0 or max_resource <= min_resource:
            raise ValueError("Hyperband needs 0 < MinResource < MaxResource")
        self.max_resource = float(max_resource)
        self.maximize = maximize
        self.eta = eta
        self.rungs: list[float] = []
        resource = float(min_resource)
        while resource < max_resource:
            self.rungs.append(resource)
            resource *= eta
        self._seen: defaultdict[int, list[float]] = defaultdict(list)
        self._cycle = _weighted_cycle(self._hyperband_weights()) if weighted else list(range(len(self.rungs) + 1))

    def _hyperband_weights(self) -> dict[int, int]:
        """Configurations per bracket (indexed by first rung; ``len(rungs)`` = never cut), as Hyperband sets them."""
        k_max = len(self.rungs) - 1
        weights: dict[int, int] = {}
        for k in range(k_max + 1):
            bracket = len(self.rungs) if k == 0 else k_max - k
            weights[bracket] = math.ceil((k_max + 1) * self.eta**k / (k + 1))
        return dict(sorted(weights.items()))

    def decide(self, trial_index: int, objective: float) -> float | None:
        bracket = self._cycle[(trial_index - 1) % len(self._cycle)]
        for rung in range(bracket, len(self.rungs)):
            earlier = self._seen[rung]
            rank = sum(1 for value in earlier if _better(value, objective, self.maximize))
            earlier.append(objective)
            survivors = max(1, (len(earlier)) // self.eta)
            if len(earlier) >= self.eta and rank >= survivors:
                return self.rungs[rung] / self.max_resource
        return None


def _weighted_cycle(weights: dict[int, int]) -> list[int]:
    """One period of a smooth weighted round-robin: every prefix is close to the weights' proportions."""
    total = sum(weights.values())
    credit = dict.fromkeys(weights, 0)
    cycle: list[int] = []
    for _ in range(total):
        for key, weight in weights.items():
            credit[key] += weight
        chosen = max(weights, key=lambda key: (credit[key], -key))
        credit[chosen] -= total
        cycle.append(chosen)
    return cycle


class MedianStoppingPolicy:
    """``TrainingJobEarlyStoppingType=Auto`` for Bayesian/Random: stop a trial half-way when its objective is
    worse than the median of the earlier trials (needs ``min_history`` of them)."""

    def __init__(self, maximize: bool, min_history: int = 3, checkpoint: float = 0.5) -> None:
        self.maximize = maximize
        self.min_history = min_history
        self.checkpoint = checkpoint
        self._seen: list[float] = []

    def decide(self, trial_index: int, objective: float) -> float | None:
        earlier = list(self._seen)
        self._seen.append(objective)
        if len(earlier) < self.min_history:
            return None
        median = statistics.median(earlier)
        return self.checkpoint if _better(median, objective, self.maximize) else None


def policy_for(tuning_job_config: Mapping[str, Any], maximize: bool) -> EarlyStoppingPolicy | None:
    """The policy AMT applies for this ``HyperParameterTuningJobConfig`` (None: no early stopping)."""
    strategy = tuning_job_config.get("Strategy", "Bayesian")
    if strategy == "Hyperband":
        hyperband = (tuning_job_config.get("StrategyConfig") or {}).get("HyperbandStrategyConfig") or {}
        min_resource = float(hyperband.get("MinResource") or 1)
        # [inferred] AWS derives a default MaxResource from the algorithm; 30 keeps a few rungs.
        max_resource = float(hyperband.get("MaxResource") or max(30.0, min_resource * 27))
        return HyperbandPolicy(min_resource, max_resource, maximize)
    if tuning_job_config.get("TrainingJobEarlyStoppingType") == "Auto" and strategy in ("Bayesian", "Random"):
        return MedianStoppingPolicy(maximize)
    return None


def fraction_is_valid(fraction: float | None) -> bool:
    """True when ``fraction`` is a real early stop (strictly inside the budget)."""
    return fraction is not None and 0.0 < fraction < 1.0 and not math.isnan(fraction)
