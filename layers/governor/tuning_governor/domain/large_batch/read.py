"""What the large-batch checks read from a CreateHyperParameterTuningJob request: per training job
definition, its hyperparameters by role (batch, accumulation, learning rate, warmup, optimizer, epochs),
the devices a trial runs on, and its algorithm (a built-in one may have no gradient batch at all).

Values are read as AMT passes them: static ones from StaticHyperParameters (strings), tuned ones from
the Integer/Continuous/Categorical parameter ranges (the job's ParameterRanges for TrainingJobDefinition,
each definition's HyperParameterRanges for TrainingJobDefinitions).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tuning_governor.domain.large_batch.devices import devices_per_instance
from tuning_governor.domain.large_batch.settings import Role

#: The common names (lower case, ``-`` read as ``_``) and what they mean.
COMMON_NAMES: dict[str, Role] = {
    "batch_size": "per_device_batch",
    "train_batch_size": "per_device_batch",
    "per_device_train_batch_size": "per_device_batch",
    "per_gpu_train_batch_size": "per_device_batch",
    "batchsize": "per_device_batch",
    "mini_batch_size": "per_device_batch",
    "global_batch_size": "global_batch",
    "gradient_accumulation_steps": "accumulation",
    "lr": "learning_rate",
    "learning_rate": "learning_rate",
    "base_lr": "learning_rate",
    "lr0": "learning_rate",  # YOLOv5/Ultralytics' initial learning rate
    "warmup_epochs": "warmup_epochs",
    "warmup_ratio": "warmup_ratio",
    "optimizer": "optimizer",
    "optim": "optimizer",
    "epochs": "epochs",
    "num_epochs": "epochs",
    "num_train_epochs": "epochs",
}
#: Built-in algorithms whose ``mini_batch_size`` is per machine: "For the multi-machine training in
#: dist_sync mode, the actual batch size is mini_batch_size*number of machines" (SageMaker Developer
#: Guide, Image Classification / Object Detection / Semantic Segmentation hyperparameters).
PER_MACHINE_BUILT_INS = frozenset({"image-classification", "object-detection", "semantic-segmentation"})
#: Built-in and tabular algorithms: no gradient batch of that kind (trees), or one the checks cannot
#: judge (the algorithm sets its own learning-rate schedule): they stay silent.
SILENT_ALGORITHMS = (
    "xgboost",
    "lightgbm",
    "catboost",
    "autogluon",
    "tabtransformer",
    "linear-learner",
    "factorization-machines",
    "knn",
    "kmeans",
    "pca",
    "randomcutforest",
    "ntm",
    "lda",
    "ipinsights",
    "object2vec",
    "blazingtext",
    "forecasting-deepar",
    "seq2seq",
)


@dataclass(frozen=True)
class Span:
    """One quantity over a job's trials: fixed (``low == high``, not tuned), a range, or listed values."""

    low: float
    high: float
    tuned: bool = False
    log: bool = False
    values: tuple[float, ...] | None = None

    @property
    def ratio(self) -> float:
        return self.high / self.low if self.low > 0 else math.inf

    def times(self, factor: float) -> Span:
        values = tuple(v * factor for v in self.values) if self.values is not None else None
        return Span(self.low * factor, self.high * factor, self.tuned, self.log, values)

    def product(self, other: Span) -> Span:
        """Both tuned: the product's bounds (its spread in log scale when either is log-scaled)."""
        if not other.tuned:
            return self.times(other.low)
        if not self.tuned:
            return other.times(self.low)
        values = None
        if self.values is not None and other.values is not None:
            values = tuple(sorted(a * b for a in self.values for b in other.values))
        return Span(self.low * other.low, self.high * other.high, True, self.log or other.log, values)

    def share_above(self, threshold: float, *, inclusive: bool = False) -> float:
        """The share of trials whose value is above ``threshold`` (at or above with ``inclusive``), as AMT
        samples it: listed values count each; a range is read uniform in its scale (linear or log)."""
        if self.values is not None:
            hits = [v for v in self.values if v > threshold or (inclusive and v == threshold)]
            return len(hits) / len(self.values)
        if self.high <= threshold and not (inclusive and self.high == threshold):
            return 0.0
        if self.low >= threshold and (inclusive or self.low > threshold):
            return 1.0
        if self.log and self.low > 0:
            return math.log(self.high / threshold) / math.log(self.high / self.low)
        return (self.high - threshold) / (self.high - self.low)


@dataclass(frozen=True)
class Hyperparameter:
    name: str
    role: Role
    span: Span | None
    """None: not a number (an optimizer's name, or a value that does not parse)."""
    text: tuple[str, ...]
    """Its values as written (static: one)."""


@dataclass(frozen=True)
class Definition:
    """One training job definition as the checks see it."""

    label: str
    """``TrainingJobDefinition`` or the definition's name."""
    algorithm: str
    hyperparameters: tuple[Hyperparameter, ...]
    clusters: tuple[tuple[str, int], ...]
    """Every (instance type, InstanceCount) a trial may run on."""

    def find(self, *roles: Role) -> Hyperparameter | None:
        return next((h for h in self.hyperparameters if h.role in roles), None)

    @property
    def silent(self) -> bool:
        return any(name in self.algorithm for name in SILENT_ALGORITHMS)

    @property
    def per_machine(self) -> bool:
        return any(self.algorithm.startswith(name) for name in PER_MACHINE_BUILT_INS)


def _number(text: Any) -> float | None:
    try:
        value = float(str(text))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def normal(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def role_of(name: str, names: Mapping[str, Role]) -> Role | None:
    key = normal(name)
    custom = {normal(k): v for k, v in names.items()}
    if key in custom:
        return custom[key]
    if key in COMMON_NAMES:
        return COMMON_NAMES[key]
    return "warmup" if "warmup" in key or "warm_up" in key else None


def _unquoted(value: Any) -> str:
    """A value as the training script reads it: the SDK's framework estimators JSON-encode static values
    and categorical values (``"sgd"`` arrives as ``'"sgd"'``, categorical 32 as ``'"32"'``)."""
    text = str(value)
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            decoded = json.loads(text)
        except ValueError:
            return text
        return decoded if isinstance(decoded, str) else text
    return text


def _static(name: str, role: Role, text: Any) -> Hyperparameter:
    value = _number(_unquoted(text))
    span = Span(value, value) if value is not None else None
    return Hyperparameter(name, role, span, (_unquoted(text),))


def _ranged(name: str, role: Role, kind: str, entry: Mapping[str, Any]) -> Hyperparameter:
    if kind == "CategoricalParameterRanges":
        texts = tuple(_unquoted(v) for v in entry.get("Values") or [])
        numbers = [_number(t) for t in texts]
        if not texts or any(n is None for n in numbers):
            return Hyperparameter(name, role, None, texts)
        found = tuple(sorted(n for n in numbers if n is not None))
        return Hyperparameter(name, role, Span(found[0], found[-1], len(found) > 1, values=found), texts)
    low, high = _number(entry.get("MinValue")), _number(entry.get("MaxValue"))
    texts = (str(entry.get("MinValue")), str(entry.get("MaxValue")))
    if low is None or high is None:
        return Hyperparameter(name, role, None, texts)
    log = str(entry.get("ScalingType") or "") == "Logarithmic"
    return Hyperparameter(name, role, Span(low, high, high > low, log), texts)


def _hyperparameters(
    static: Mapping[str, Any], ranges: Mapping[str, Any], names: Mapping[str, Role]
) -> tuple[Hyperparameter, ...]:
    found: dict[str, Hyperparameter] = {}
    for name, text in static.items():
        role = role_of(str(name), names)
        if role is not None and role != "ignore":
            found[normal(str(name))] = _static(str(name), role, text)
    for kind in ("IntegerParameterRanges", "ContinuousParameterRanges", "CategoricalParameterRanges"):
        for entry in ranges.get(kind) or []:
            name = str(entry.get("Name") or "") if isinstance(entry, Mapping) else ""
            role = role_of(name, names) if name else None
            if role is not None and role != "ignore":
                # A tuned value overrides a static one of the same name (AMT rejects both; be safe).
                found[normal(name)] = _ranged(name, role, kind, entry)
    return tuple(found.values())


def _algorithm(definition: Mapping[str, Any]) -> str:
    spec = definition.get("AlgorithmSpecification") or {}
    name = str(spec.get("AlgorithmName") or "").lower()
    image = str(spec.get("TrainingImage") or "").lower()
    repository = image.rsplit("/", 1)[-1].split("@")[0].split(":")[0]
    return repository or name.rsplit("/", 1)[-1]


def _clusters(definition: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    found: list[tuple[str, int]] = []
    config = definition.get("ResourceConfig") or {}
    if config.get("InstanceType") and config.get("InstanceCount"):
        found.append((str(config["InstanceType"]), int(config["InstanceCount"])))
    tuning = definition.get("HyperParameterTuningResourceConfig") or {}
    for option in [tuning, *(tuning.get("InstanceConfigs") or [])]:
        if option.get("InstanceType") and option.get("InstanceCount"):
            found.append((str(option["InstanceType"]), int(option["InstanceCount"])))
    return tuple(found)


def definitions(request: Mapping[str, Any], names: Mapping[str, Role]) -> Iterator[Definition]:
    """Each training job definition of ``request``, read for the checks."""
    single = request.get("TrainingJobDefinition")
    if isinstance(single, Mapping):
        config = request.get("HyperParameterTuningJobConfig") or {}
        ranges = single.get("HyperParameterRanges") or config.get("ParameterRanges") or {}
        static = single.get("StaticHyperParameters") or {}
        yield Definition(
            "TrainingJobDefinition", _algorithm(single), _hyperparameters(static, ranges, names), _clusters(single)
        )
    for index, entry in enumerate(request.get("TrainingJobDefinitions") or []):
        if isinstance(entry, Mapping):
            label = str(entry.get("DefinitionName") or f"TrainingJobDefinitions[{index}]")
            static, ranges = entry.get("StaticHyperParameters") or {}, entry.get("HyperParameterRanges") or {}
            yield Definition(label, _algorithm(entry), _hyperparameters(static, ranges, names), _clusters(entry))


def devices(cluster: tuple[str, int]) -> tuple[int, bool]:
    """A cluster's devices (per-instance devices x InstanceCount) and whether the type's count is known."""
    instance_type, count = cluster
    per_instance = devices_per_instance(instance_type)
    return (per_instance or 1) * count, per_instance is not None
