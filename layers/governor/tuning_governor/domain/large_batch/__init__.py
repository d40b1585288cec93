"""Large-batch checks: a distributed trial's global batch (per-device batch x devices per instance x
InstanceCount x gradient accumulation) against the learning-rate scaling, warmup and batch limits the
literature found, before launch (``tuning-governor check``) and on arrival (the ``large-batch`` rule).

``findings(request)`` is the whole API: a CreateHyperParameterTuningJob request in, the findings out
(empty for a job with no gradient batch: XGBoost and the other tabular or built-in algorithms).
``rescale_findings(before, after)`` compares a request with a changed InstanceCount against the original.
Pure: no AWS, no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuning_governor.lazy import lazy_exports

if TYPE_CHECKING:
    from tuning_governor.domain.large_batch.devices import devices_per_instance
    from tuning_governor.domain.large_batch.judge import findings, rescale_findings
    from tuning_governor.domain.large_batch.model import BatchFinding
    from tuning_governor.domain.large_batch.settings import LargeBatchSettings, Role

#: Each public name and the module that defines it, imported on first use (PEP 562): the policy imports
#: ``settings`` alone, the checks (``judge``, ``model``, ``read``) load with the first arrival judged.
_EXPORTS: dict[str, str] = {
    "BatchFinding": "tuning_governor.domain.large_batch.model",
    "LargeBatchSettings": "tuning_governor.domain.large_batch.settings",
    "Role": "tuning_governor.domain.large_batch.settings",
    "devices_per_instance": "tuning_governor.domain.large_batch.devices",
    "findings": "tuning_governor.domain.large_batch.judge",
    "rescale_findings": "tuning_governor.domain.large_batch.judge",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = ["BatchFinding", "LargeBatchSettings", "Role", "devices_per_instance", "findings", "rescale_findings"]
