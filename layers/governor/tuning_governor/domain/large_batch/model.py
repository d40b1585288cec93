"""A large-batch finding, the sources the checks cite, and what every check of a definition reads (its
global batch per optimizer step, the job's trials and their worst-case cost)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import ConfigDict

from tuning_governor.domain.large_batch.read import Definition, Hyperparameter, Span, devices, normal
from tuning_governor.domain.large_batch.settings import LargeBatchSettings
from tuning_governor.model_base import GovernorModel

SOURCE_RANGE = (
    "SageMaker Developer Guide, distributed training concepts (batch size: global batch = per-device batch x"
    " devices x instances x accumulation steps)"
)
SOURCE_LINEAR = "Goyal et al. 2017, Accurate, Large Minibatch SGD (linear scaling rule)"
SOURCE_SQRT = "Malladi et al. 2022, On the SDEs and Scaling Rules for Adaptive Gradient Algorithms (square-root rule)"
SOURCE_WARMUP = "Goyal et al. 2017, Accurate, Large Minibatch SGD (gradual warmup)"
SOURCE_LITERATURE = {
    "sgd": "Goyal et al. 2017, Accurate, Large Minibatch SGD (ResNet-50 on ImageNet up to 8k)",
    "lars": "You et al. 2017, Large Batch Training of Convolutional Networks (LARS, to 32k)",
    "lamb": "You et al. 2019, Large Batch Optimization for Deep Learning (LAMB, BERT to 64k)",
}
SOURCE_CRITICAL = "McCandlish et al. 2018, An Empirical Model of Large-Batch Training (critical batch size)"
SOURCE_JUDGED = (
    "Goyal et al. 2017 (warmup); SageMaker Developer Guide, Hyperband (MinResource) and early stopping"
    " (judged after each epoch)"
)


class BatchFinding(GovernorModel):
    """One large-batch finding: a stable ``code``, how bad, why (with the numbers), where the rule comes
    from, and the worst-case cost of the trials it puts at risk (None when no price or trial count is known)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    severity: Literal["info", "warning"]
    reason: str
    source: str
    dollars: float | None = None
    definition: str | None = None
    """The training job definition it is about (``TrainingJobDefinition`` or a definition's name)."""


@dataclass(frozen=True)
class Judged:
    """What every check of one definition reads: the definition, its global batch, the job's trials."""

    definition: Definition
    batch: Span
    explained: str
    optimizer: str | None
    settings: LargeBatchSettings
    trials: int | None
    trial_dollars: float | None
    strategy: str | None
    min_resource: int | None
    max_resource: int | None
    early_stopping: bool

    def dollars(self, share: float) -> float | None:
        """The worst case of the trials a ``share`` (0-1) of the job puts at risk: ceil(trials x share)."""
        if self.trials is None or self.trial_dollars is None or share <= 0:
            return None
        return round(math.ceil(self.trials * share - 1e-9) * self.trial_dollars, 2)

    def finding(self, code: str, reason: str, source: str, dollars: float | None) -> BatchFinding:
        return BatchFinding(
            code=code,
            severity="info" if code == "global-batch-range" else "warning",
            reason=reason,
            source=source,
            dollars=dollars,
            definition=self.definition.label,
        )


def number(value: float) -> str:
    """``1,024`` for a whole number, ``0.0001`` (shortest) otherwise."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def spread(span: Span) -> str:
    if span.values is not None and span.tuned:
        return "{" + ", ".join(number(v) for v in span.values) + "}"
    return number(span.low) if not span.tuned else f"{number(span.low)}-{number(span.high)}"


def global_batch(definition: Definition) -> tuple[Span, str] | None:
    """The definition's global batch per optimizer step over its trials, and how it was reached."""
    batch = definition.find("per_device_batch", "per_machine_batch", "global_batch")
    if batch is None or batch.span is None or batch.span.low <= 0:
        return None
    accumulation = definition.find("accumulation")
    steps = accumulation.span if accumulation is not None and accumulation.span is not None else Span(1, 1)
    if batch.role == "global_batch":
        return batch.span, f"{batch.name} {spread(batch.span)} (global)"
    clusters = definition.clusters or (("an unknown type", 1),)
    per_machine = batch.role == "per_machine_batch" or (
        definition.per_machine and normal(batch.name) == "mini_batch_size"
    )
    counts = [cluster[1] if per_machine else devices(cluster)[0] for cluster in clusters]
    low, high = min(counts), max(counts)
    span = batch.span.product(Span(low, high, low != high)).product(steps)
    return span, _explain(batch, clusters, per_machine=per_machine, steps=steps, accumulation=accumulation)


def _explain(
    batch: Hyperparameter,
    clusters: tuple[tuple[str, int], ...],
    *,
    per_machine: bool,
    steps: Span,
    accumulation: Hyperparameter | None,
) -> str:
    shapes = []
    for cluster in clusters:
        total, known = devices(cluster)
        instance_type, count = cluster
        per_instance = total // count
        if per_machine:
            shapes.append(f"{count} x {instance_type}")
        elif known:
            shapes.append(f"{per_instance} devices per {instance_type} x {count} instances")
        else:
            shapes.append(f"{count} x {instance_type} (devices per instance unknown: counted as 1)")
    where = " or ".join(shapes)
    kind = "per machine" if per_machine else "per device"
    text = f"{batch.name} {spread(batch.span or Span(0, 0))} ({kind}) x {where}"
    if accumulation is not None:
        text += f" x {accumulation.name} {spread(steps)}"
    return text
