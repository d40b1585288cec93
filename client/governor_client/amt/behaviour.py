"""The stand-in's default :class:`~.plans.TrialBehaviour`: a seeded objective landscape, durations and failures."""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .plans import FailurePhase, ObjectiveCurve, TrialPlan, objective_of, parameter_ranges_of

_ROUND_KEYS = ("num_round", "num_rounds", "epochs", "epoch", "n_estimators", "iterations", "max_iter")

# Relative throughput of an instance size against an xlarge; only the ordering matters for the simulation.
_SIZE_SPEED = {
    "medium": 0.3,
    "large": 0.6,
    "xlarge": 1.0,
    "2xlarge": 1.8,
    "4xlarge": 3.2,
    "8xlarge": 5.5,
    "12xlarge": 7.5,
    "16xlarge": 9.0,
    "24xlarge": 11.0,
    "48xlarge": 16.0,
}
_ACCELERATED_FAMILIES = ("p2", "p3", "p4d", "p4de", "p5", "g4dn", "g5", "g6", "g6e", "trn1", "trn2")


def _stable_unit(*parts: object) -> float:
    """A value in [0, 1) that depends only on ``parts`` (not on PYTHONHASHSEED)."""
    return (zlib.crc32("|".join(str(p) for p in parts).encode()) & 0xFFFFFFFF) / 2**32


def _as_float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


#: ``FailureReason`` per failure phase. The CapacityError wording is AWS's; the other two follow the
#: ``<ErrorType>: <message>`` form of real reasons with our own message text.
FAILURE_REASONS: dict[str, str] = {
    "Starting": "CapacityError: Unable to provision requested ML compute capacity. "
    "Please retry using a different ML instance type.",
    "Downloading": "ClientError: Data download failed: simulated missing input object (NoSuchKey)",
    "Training": "AlgorithmError: simulated training failure (exit code 1)",
}

#: Names under which algorithms take a learning rate; a higher rate makes the learning curve saturate sooner.
_LEARNING_RATE_KEYS = ("eta", "learning_rate", "learning-rate", "lr")


@dataclass
class DefaultTrialBehaviour:
    """A smooth, seeded objective landscape and hyperparameter-dependent durations and learning curves.

    * The objective depends only on the *tuned* hyperparameters: each range has a hidden optimum derived
      from ``seed`` and its name; a Maximize objective lies in 0.5..0.99 (AUC-like), a Minimize one in
      0.05..1.0 (loss-like). Small Gaussian noise comes from the trial's ``rng``.
    * Training time grows with the number of rounds/epochs (``num_round``, ``epochs``… or Hyperband's
      ``MaxResource``) and ``max_depth``, and shrinks with instance size and count.
    * The learning curve (the objective reported by a trial stopped early) saturates faster with a higher
      learning rate (``eta``, ``learning_rate``, ``lr``); without one it has a fixed shape.
    * ``failure_rate`` (default 0): the share of trials that fail, in a phase drawn from
      ``failure_phases`` (weights): ``Starting`` (no billing at all), ``Downloading`` (seconds of billing)
      or ``Training`` (billed up to the failure, 5-60 % into training).
    * ``spot_interruption_rate`` (default 0): the share of managed-spot trials interrupted once, for a
      time drawn from ``spot_interruption_s``; managed-spot trials save a share drawn from ``spot_savings``
      of their billable time.

    Callers may rely on: with the default rates a run has no failures and no interruptions; a given
    ``seed``, request and ``rng`` state always give the same plan.
    """

    seed: int = 0
    failure_rate: float = 0.0
    spot_interruption_rate: float = 0.0
    seconds_per_round: float = 10.0
    noise: float = 0.01
    failure_phases: tuple[tuple[FailurePhase, float], ...] = (
        ("Training", 0.8),
        ("Downloading", 0.1),
        ("Starting", 0.1),
    )
    spot_interruption_s: tuple[float, float] = (60.0, 600.0)
    spot_savings: tuple[float, float] = (0.60, 0.75)

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> TrialPlan:
        """See :class:`TrialBehaviour`."""
        objective = objective_of(tuning_job_config, definition)
        maximize = objective is None or objective[1] != "Minimize"
        quality = self._quality(tuning_job_config, definition, hyperparameters, rng)
        final = self._objective_value(quality, maximize) if objective is not None else None
        duration = self._duration(tuning_job_config, definition, hyperparameters, rng)
        spot = bool(definition.get("EnableManagedSpotTraining"))

        if rng.random() < self.failure_rate:
            failed_after = round(duration * rng.uniform(0.05, 0.6), 3)
            phases = [phase for phase, _ in self.failure_phases] or ["Training"]
            weights = [max(0.0, weight) for _, weight in self.failure_phases] or [1.0]
            phase: FailurePhase = rng.choices(phases, weights=weights)[0] if sum(weights) > 0 else "Training"
            return TrialPlan(
                duration_s=failed_after if phase == "Training" else 0.0,
                objective_value=None,
                outcome="Failed",
                failure_reason=FAILURE_REASONS[phase],
                failure_phase=phase,
                # Whatever a spot job was billed before failing, it was billed at the spot discount.
                spot_savings_fraction=round(rng.uniform(*self.spot_savings), 4) if spot else 0.0,
            )
        interrupted = 0.0
        if spot and rng.random() < self.spot_interruption_rate:
            interrupted = round(rng.uniform(*self.spot_interruption_s), 3)
        rate = self._learning_speed(tuning_job_config, definition, hyperparameters)
        return TrialPlan(
            duration_s=round(duration, 3),
            objective_value=final,
            spot_interrupted_s=interrupted,
            spot_savings_fraction=round(rng.uniform(*self.spot_savings), 4) if spot else 0.0,
            objective_curve=_saturating_curve(final, maximize, rate) if final is not None else None,
        )

    # -- internals -------------------------------------------------------------------------------------------

    def _quality(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> float:
        ranges = parameter_ranges_of(tuning_job_config, definition)
        scores: list[tuple[float, float]] = []  # (weight, score in 0..1)
        for kind in ("IntegerParameterRanges", "ContinuousParameterRanges"):
            for spec in ranges.get(kind) or []:
                name = str(spec["Name"])
                value = _as_float(hyperparameters.get(name))
                low, high = _as_float(spec.get("MinValue")), _as_float(spec.get("MaxValue"))
                if value is None or low is None or high is None:
                    continue
                u = _normalise(value, low, high, str(spec.get("ScalingType", "Auto")))
                optimum = 0.15 + 0.7 * _stable_unit(self.seed, "optimum", name)
                width = 0.2 + 0.2 * _stable_unit(self.seed, "width", name)
                weight = 0.5 + _stable_unit(self.seed, "weight", name)
                scores.append((weight, math.exp(-((u - optimum) ** 2) / (2 * width**2))))
        for spec in ranges.get("CategoricalParameterRanges") or []:
            name = str(spec["Name"])
            chosen = hyperparameters.get(name)
            if chosen is None:
                continue
            best = max(spec.get("Values") or [chosen], key=lambda v: _stable_unit(self.seed, "cat", name, v))
            score = 1.0 if chosen == best else 0.45 + 0.45 * _stable_unit(self.seed, "cat", name, chosen)
            scores.append((0.5 + _stable_unit(self.seed, "weight", name), score))
        if scores:
            quality = sum(w * s for w, s in scores) / sum(w for w, _ in scores)
        else:
            quality = 0.6 + 0.3 * _stable_unit(self.seed, "untuned", sorted(hyperparameters.items()))
        # Different definitions (algorithms) of a multi-definition job reach different ceilings.
        quality *= 0.9 + 0.1 * _stable_unit(self.seed, "definition", definition.get("DefinitionName", ""))
        return min(1.0, max(0.0, quality + rng.gauss(0.0, self.noise)))

    @staticmethod
    def _learning_speed(
        tuning_job_config: Mapping[str, Any] | None, definition: Mapping[str, Any], hyperparameters: Mapping[str, str]
    ) -> float:
        """Rate of the saturating learning curve: 4 without a learning rate, 2 (slowest) to 8 (fastest)."""
        ranges = parameter_ranges_of(tuning_job_config, definition)
        for key in _LEARNING_RATE_KEYS:
            value = _as_float(hyperparameters.get(key))
            if value is None or value <= 0:
                continue
            spec = next(
                (
                    r
                    for kind in ("ContinuousParameterRanges", "IntegerParameterRanges")
                    for r in ranges.get(kind) or []
                    if r.get("Name") == key
                ),
                None,
            )
            low = _as_float(spec.get("MinValue")) if spec else None
            high = _as_float(spec.get("MaxValue")) if spec else None
            if low is not None and high is not None and low > 0:
                u = _normalise(value, low, high, "Logarithmic")
            else:
                u = min(1.0, max(0.0, (math.log10(value) + 4.0) / 4.0))  # 1e-4 .. 1 on a log scale
            return 2.0 + 6.0 * u
        return 4.0

    @staticmethod
    def _objective_value(quality: float, maximize: bool) -> float:
        if maximize:
            return round(min(0.99, 0.5 + 0.49 * quality), 6)
        return round(0.05 + 0.95 * (1.0 - quality), 6)

    def _duration(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> float:
        rounds: float | None = None
        for key in _ROUND_KEYS:
            rounds = _as_float(hyperparameters.get(key))
            if rounds is not None:
                break
        hyperband = ((tuning_job_config or {}).get("StrategyConfig") or {}).get("HyperbandStrategyConfig")
        if hyperband and hyperband.get("MaxResource"):
            # Hyperband caps the resource (rounds/epochs) a trial may use at MaxResource.
            max_resource = float(hyperband["MaxResource"])
            rounds = max_resource if rounds is None else min(rounds, max_resource)
        rounds = max(1.0, rounds if rounds is not None else 100.0)
        depth = _as_float(hyperparameters.get("max_depth")) or 6.0
        instance_type, instance_count = _instance_of(definition.get("ResourceConfig") or {})
        speed = _instance_speed(instance_type) * max(1.0, float(instance_count)) ** 0.7
        per_round = self.seconds_per_round * (1.0 + depth / 8.0) / speed
        return float((30.0 + rounds * per_round) * rng.uniform(0.9, 1.1))


def _normalise(value: float, low: float, high: float, scaling: str) -> float:
    if high <= low:
        return 0.5
    if scaling == "Logarithmic" and low > 0:
        return (math.log(max(value, low)) - math.log(low)) / (math.log(high) - math.log(low))
    if scaling == "ReverseLogarithmic" and high < 1:
        return 1.0 - (math.log(1 - min(value, high)) - math.log(1 - high)) / (math.log(1 - low) - math.log(1 - high))
    return min(1.0, max(0.0, (value - low) / (high - low)))


def _saturating_curve(final: float, maximize: bool, rate: float = 4.0) -> ObjectiveCurve:
    """A learning curve that starts at a poor value and saturates at ``final`` when the budget is used up.

    ``rate`` > 0 sets how early it saturates (higher: closer to ``final`` early on).
    """
    start = 0.5 if maximize else final + 0.5

    def curve(fraction: float) -> float:
        progress = (1.0 - math.exp(-rate * min(1.0, fraction))) / (1.0 - math.exp(-rate))
        return round(start + (final - start) * progress, 6)

    return curve


def _instance_of(resource_config: Mapping[str, Any]) -> tuple[str, int]:
    groups = resource_config.get("InstanceGroups") or []
    if groups and not resource_config.get("InstanceType"):
        # A heterogeneous cluster: the largest group dominates the step time.
        group = max(groups, key=lambda g: int(g.get("InstanceCount", 1)))
        return str(group.get("InstanceType", "ml.m5.xlarge")), int(group.get("InstanceCount", 1))
    return str(resource_config.get("InstanceType", "ml.m5.xlarge")), int(resource_config.get("InstanceCount", 1))


def _instance_speed(instance_type: str) -> float:
    parts = instance_type.split(".")
    family = parts[1] if len(parts) > 2 else ""
    size = parts[-1]
    speed = _SIZE_SPEED.get(size, 1.0)
    if family in _ACCELERATED_FAMILIES:
        speed *= 4.0
    return speed
