"""Hyperparameter sampling from ``ParameterRanges``, per tuning strategy.

Values are rendered as strings, as SageMaker passes them (``TunedHyperParameters``). Each sampler draws
only from the ``random.Random`` it is handed, so a seed reproduces the sequence of trials.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class NumericRange:
    """An Integer or Continuous parameter range."""

    name: str
    low: float
    high: float
    integer: bool
    scaling: str = "Auto"


@dataclass(frozen=True)
class CategoricalRange:
    """A Categorical parameter range."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class ParameterSpace:
    """The tuned hyperparameters of one training job definition."""

    numeric: tuple[NumericRange, ...] = ()
    categorical: tuple[CategoricalRange, ...] = ()

    @classmethod
    def from_ranges(cls, ranges: Mapping[str, Any] | None) -> ParameterSpace:
        """Build from a ``ParameterRanges`` / ``HyperParameterRanges`` structure (None: nothing tuned)."""
        ranges = ranges or {}
        numeric = [
            NumericRange(
                str(r["Name"]),
                float(r["MinValue"]),
                float(r["MaxValue"]),
                integer=kind == "IntegerParameterRanges",
                scaling=str(r.get("ScalingType", "Auto")),
            )
            for kind in ("IntegerParameterRanges", "ContinuousParameterRanges")
            for r in ranges.get(kind) or []
        ]
        categorical = [
            CategoricalRange(str(r["Name"]), tuple(str(v) for v in r.get("Values") or []))
            for r in ranges.get("CategoricalParameterRanges") or []
        ]
        return cls(tuple(numeric), tuple(categorical))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.numeric) + tuple(r.name for r in self.categorical)

    def sample(self, rng: random.Random) -> dict[str, str]:
        """One point drawn uniformly (on each range's scale)."""
        point = {r.name: _render(r, _sample_numeric(r, rng)) for r in self.numeric}
        point.update({r.name: rng.choice(r.values) for r in self.categorical if r.values})
        return point

    def perturb(self, base: Mapping[str, str], rng: random.Random, scale: float = 0.15) -> dict[str, str]:
        """A point near ``base`` (a Gaussian step of ``scale`` on each range's normalised scale)."""
        point: dict[str, str] = {}
        for r in self.numeric:
            try:
                u = _to_unit(r, float(base[r.name]))
            except (KeyError, ValueError):
                u = rng.random()
            point[r.name] = _render(r, _from_unit(r, min(1.0, max(0.0, u + rng.gauss(0.0, scale)))))
        for c in self.categorical:
            keep = base.get(c.name) in c.values and rng.random() > scale
            point[c.name] = str(base[c.name]) if keep else rng.choice(c.values)
        return point

    def grid(self) -> list[dict[str, str]]:
        """Every combination of the categorical values, in declaration order (the Grid strategy)."""
        if self.numeric:
            raise ValueError("the Grid strategy supports only categorical parameter ranges")
        names = [c.name for c in self.categorical]
        return [
            dict(zip(names, combo, strict=True)) for combo in itertools.product(*(c.values for c in self.categorical))
        ]


def _uses_log(r: NumericRange) -> bool:
    return r.scaling == "Logarithmic" and r.low > 0


def _uses_reverse_log(r: NumericRange) -> bool:
    return r.scaling == "ReverseLogarithmic" and r.high < 1 and not r.integer


def _sample_numeric(r: NumericRange, rng: random.Random) -> float:
    return _from_unit(r, rng.random())


def _from_unit(r: NumericRange, u: float) -> float:
    if r.high <= r.low:
        return r.low
    if _uses_log(r):
        value = math.exp(math.log(r.low) + u * (math.log(r.high) - math.log(r.low)))
    elif _uses_reverse_log(r):
        value = 1.0 - math.exp(math.log(1 - r.high) + (1 - u) * (math.log(1 - r.low) - math.log(1 - r.high)))
    else:
        value = r.low + u * (r.high - r.low)
    return min(r.high, max(r.low, value))


def _to_unit(r: NumericRange, value: float) -> float:
    if r.high <= r.low:
        return 0.5
    if _uses_log(r):
        return (math.log(max(value, r.low)) - math.log(r.low)) / (math.log(r.high) - math.log(r.low))
    if _uses_reverse_log(r):
        return 1 - (math.log(1 - min(value, r.high)) - math.log(1 - r.high)) / (
            math.log(1 - r.low) - math.log(1 - r.high)
        )
    return (value - r.low) / (r.high - r.low)


def _render(r: NumericRange, value: float) -> str:
    if r.integer:
        return str(int(min(r.high, max(r.low, round(value)))))
    return repr(float(value))


class StrategySampler:
    """Chooses the tuned hyperparameters of the next trial of one tuning job.

    * ``Random`` and ``Hyperband``: independent uniform draws.
    * ``Bayesian``: uniform draws while fewer than ``warmup`` results are known, then mostly (70 %) a local
      perturbation of the best *reported* result — a cheap stand-in for a surrogate model.
    * ``Grid``: every categorical combination once, in order; ``next`` returns ``None`` when exhausted.
    """

    def __init__(self, strategy: str, spaces: Sequence[ParameterSpace], warmup: int = 3) -> None:
        self.strategy = strategy
        self.spaces = list(spaces)
        self.warmup = warmup
        self._grid: list[list[dict[str, str]]] | None = (
            [space.grid() for space in self.spaces] if strategy == "Grid" else None
        )
        self._grid_cursor = 0

    def grid_size(self) -> int | None:
        """Number of grid points (Grid strategy only)."""
        return None if self._grid is None else sum(len(points) for points in self._grid)

    def next(
        self,
        trial_index: int,
        rng: random.Random,
        best: Mapping[str, str] | None = None,
        known_results: int = 0,
    ) -> tuple[int, dict[str, str]] | None:
        """``(definition index, tuned hyperparameters)`` of trial ``trial_index`` (1-based); None: nothing left.

        Trials are spread round-robin across definitions (Grid: definition by definition).
        """
        if self._grid is not None:
            cursor = self._grid_cursor
            for definition_index, points in enumerate(self._grid):
                if cursor < len(points):
                    self._grid_cursor += 1
                    return definition_index, dict(points[cursor])
                cursor -= len(points)
            return None
        definition_index = (trial_index - 1) % len(self.spaces)
        space = self.spaces[definition_index]
        exploit = self.strategy == "Bayesian" and best is not None and known_results >= self.warmup
        if exploit and best is not None and rng.random() < 0.7:
            return definition_index, space.perturb(best, rng)
        return definition_index, space.sample(rng)
