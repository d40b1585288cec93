"""The large-batch checks of one training job definition (each returns a finding or None)."""

from __future__ import annotations

import math
from collections.abc import Callable

from tuning_governor.domain.large_batch.model import (
    SOURCE_CRITICAL,
    SOURCE_JUDGED,
    SOURCE_LINEAR,
    SOURCE_LITERATURE,
    SOURCE_RANGE,
    SOURCE_SQRT,
    SOURCE_WARMUP,
    BatchFinding,
    Judged,
    number,
    spread,
)


def batch_range(j: Judged) -> BatchFinding | None:
    ratio = f" ({j.batch.ratio:.3g}x)" if j.batch.tuned else ""
    return j.finding(
        "global-batch-range",
        f"global batch {spread(j.batch)}{ratio} per optimizer step: {j.explained}",
        SOURCE_RANGE,
        None,
    )


def scaling(j: Judged) -> tuple[bool, str]:
    """Whether the learning rate should scale linearly with the batch (else by its square root), and why."""
    name = j.optimizer
    if name in j.settings.linear_optimizers:
        return True, f"optimizer {name} scales it linearly"
    if name in j.settings.sqrt_optimizers:
        return False, f"optimizer {name} (Adam family) scales it by the square root"
    what = f"optimizer {name} is not" if name else "the optimizer is not"
    return False, f"{what} known: judged by the square-root rule, the lenient one"


def lr_not_scaled(j: Judged) -> BatchFinding | None:
    r = j.batch.ratio
    if not j.batch.tuned or r < j.settings.range_ratio:
        return None
    linear, why = scaling(j)
    needed = r if linear else math.sqrt(r)
    lr = j.definition.find("learning_rate")
    head = f"global batch spans {r:.3g}x ({spread(j.batch)})"
    tail = f"{why}, so the learning-rate range must span at least {needed:.3g}x"
    if lr is None:
        reason = f"{head} but no learning-rate hyperparameter is set (every trial trains at the script's default)"
    elif lr.span is None:
        return None
    elif not lr.span.tuned:
        reason = f"{head} but the learning rate is fixed ({lr.name} = {lr.text[0]})"
    elif lr.span.ratio < needed:
        reason = f"{head} but the learning-rate range {lr.name} {spread(lr.span)} spans only {lr.span.ratio:.3g}x"
    else:
        return None
    return j.finding("lr-not-scaled", f"{reason}: {tail}", SOURCE_LINEAR if linear else SOURCE_SQRT, j.dollars(1.0))


def no_warmup(j: Judged) -> BatchFinding | None:
    threshold = j.settings.warmup_batch
    if j.batch.high < threshold:
        return None
    warmup = j.definition.find("warmup", "warmup_epochs", "warmup_ratio")
    if warmup is not None and (warmup.span is None or warmup.span.high > 0):
        return None
    share = j.batch.share_above(threshold, inclusive=True)
    said = f" ({warmup.name} = {warmup.text[0]})" if warmup is not None else ""
    reason = (
        f"global batch up to {number(j.batch.high)}, at least {number(threshold)} in {share:.0%} of the trials,"
        f" with no warmup{said}: large batches diverge or lose accuracy early without one (warmup_* hyperparameter)"
    )
    return j.finding("no-warmup", reason, SOURCE_WARMUP, j.dollars(share))


def beyond_literature(j: Judged) -> BatchFinding | None:
    name = j.optimizer
    limit = j.settings.literature_limits.get(name) if name else None
    if name is None or limit is None or j.batch.high <= limit:
        return None
    share = j.batch.share_above(limit)
    reason = (
        f"global batch up to {number(j.batch.high)} > {number(limit)}, the largest the literature trained well"
        f" with {name}, in {share:.0%} of the trials"
    )
    source = SOURCE_LITERATURE.get(name, f"the policy's large_batch.literature_limits.{name}")
    return j.finding("batch-beyond-literature", reason, source, j.dollars(share))


def past_critical(j: Judged) -> BatchFinding | None:
    critical, factor = j.settings.critical_batch, j.settings.critical_factor
    if critical is None or j.batch.high <= factor * critical:
        return None
    bound = factor * critical
    examples = 1 + j.batch.high / critical
    extra = examples / (1 + factor)
    share = j.batch.share_above(bound)
    reason = (
        f"global batch up to {number(j.batch.high)} > {factor:g} x the critical batch {number(critical)}"
        f" ({number(bound)}), in {share:.0%} of the trials: it needs {examples:.3g}x the minimum examples"
        f" (1 + B/B_crit), {extra:.3g}x what a batch of {number(bound)} needs, for few fewer steps"
    )
    return j.finding("past-critical-batch", reason, SOURCE_CRITICAL, j.dollars(share))


def warmup_epochs(j: Judged) -> tuple[float, str] | None:
    """The longest warmup in epochs, and how it was read (warmup_epochs, or warmup_ratio x epochs)."""
    epochs_hp = j.definition.find("warmup_epochs")
    if epochs_hp is not None and epochs_hp.span is not None:
        return epochs_hp.span.high, f"{epochs_hp.name} up to {number(epochs_hp.span.high)}"
    ratio = j.definition.find("warmup_ratio")
    if ratio is None or ratio.span is None:
        return None
    epochs = j.definition.find("epochs")
    if epochs is not None and epochs.span is not None:
        total, said = epochs.span.high, f"{epochs.name} {number(epochs.span.high)}"
    elif j.strategy == "Hyperband" and j.max_resource:
        total, said = float(j.max_resource), f"MaxResource {j.max_resource}"
    else:
        return None
    return ratio.span.high * total, f"{ratio.name} {number(ratio.span.high)} x {said}"


def judged_before_warmup(j: Judged) -> BatchFinding | None:
    warm = warmup_epochs(j)
    if warm is None:
        return None
    length, how = warm
    if j.strategy == "Hyperband":
        first = j.min_resource or 1
        who = f"Hyperband judges every trial first at MinResource {first} epoch{'s' if first != 1 else ''}"
    elif j.early_stopping:
        first, who = 1, "early stopping (Auto) judges trials from their first epoch"
    else:
        return None
    if first > length:
        return None
    reason = (
        f"{who}, within the warmup of {length:.3g} epochs ({how}): trials are compared while the"
        " learning rate is still ramping up, so the large-batch ones are cut before they converge"
    )
    return j.finding("judged-before-warmup", reason, SOURCE_JUDGED, j.dollars(1.0))


CHECKS: tuple[Callable[[Judged], BatchFinding | None], ...] = (
    batch_range,
    lr_not_scaled,
    no_warmup,
    beyond_literature,
    past_critical,
    judged_before_warmup,
)
