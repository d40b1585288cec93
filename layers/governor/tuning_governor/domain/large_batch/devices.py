"""Devices per training instance: a trial's data-parallel processes per machine (one per GPU or NeuronCore).

Sources: the GPU counts per size on the Amazon EC2 accelerated computing instance pages (P2, P3, P4d,
P4de, P5, G4dn, G5, G6, G6e; as AWS Batch's "Run GPU jobs" table lists them too), and the AWS Neuron
architecture pages for Trainium and Inferentia (Trn1: 2 NeuronCore-v2 per Trainium chip, 1 chip on
trn1.2xlarge and 16 on trn1.32xlarge/trn1n.32xlarge; Trn2: 16 chips of 4 logical NeuronCores each by
default; Inf2: 2 NeuronCores per chip). A CPU instance counts as one device (one process per machine).
"""

from __future__ import annotations

# One GPU (or NeuronCore) count per SageMaker training type; sizes not listed in a family below have one.
_ACCELERATORS: dict[str, int] = {
    "ml.p2.xlarge": 1,
    "ml.p2.8xlarge": 8,
    "ml.p2.16xlarge": 16,
    "ml.p3.2xlarge": 1,
    "ml.p3.8xlarge": 4,
    "ml.p3.16xlarge": 8,
    "ml.p3dn.24xlarge": 8,
    "ml.p4d.24xlarge": 8,
    "ml.p4de.24xlarge": 8,
    "ml.p5.48xlarge": 8,
    "ml.p5e.48xlarge": 8,
    "ml.p5en.48xlarge": 8,
    "ml.g4dn.12xlarge": 4,
    "ml.g5.12xlarge": 4,
    "ml.g5.24xlarge": 4,
    "ml.g5.48xlarge": 8,
    "ml.g6.12xlarge": 4,
    "ml.g6.24xlarge": 4,
    "ml.g6.48xlarge": 8,
    "ml.g6e.12xlarge": 4,
    "ml.g6e.24xlarge": 4,
    "ml.g6e.48xlarge": 8,
    "ml.trn1.2xlarge": 2,
    "ml.trn1.32xlarge": 32,
    "ml.trn1n.32xlarge": 32,
    "ml.trn2.48xlarge": 64,
    "ml.inf2.xlarge": 2,
    "ml.inf2.8xlarge": 2,
    "ml.inf2.24xlarge": 12,
    "ml.inf2.48xlarge": 24,
}
#: Accelerated families whose other sizes (xlarge to 16xlarge) carry one GPU.
_ONE_GPU_FAMILIES = ("ml.g4dn.", "ml.g5.", "ml.g6.", "ml.g6e.")
#: Accelerated families: a size of theirs not in the table has an unknown device count.
_ACCELERATED_PREFIXES = ("ml.p", "ml.g", "ml.trn", "ml.inf")


def devices_per_instance(instance_type: str) -> int | None:
    """GPUs or NeuronCores on one ``instance_type`` instance; 1 for a CPU type; None when it is an
    accelerated type this table does not know (the caller says so rather than guessing)."""
    if instance_type in _ACCELERATORS:
        return _ACCELERATORS[instance_type]
    if instance_type.startswith(_ONE_GPU_FAMILIES):
        return 1
    if instance_type.startswith(_ACCELERATED_PREFIXES):
        return None
    return 1
