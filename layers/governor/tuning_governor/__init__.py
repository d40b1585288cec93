"""Tuning Governor: governs Amazon SageMaker automatic model tuning.

The package is the Lambda layer's domain and adapters. ``domain`` and ``models`` import no boto3;
only ``adapters`` talk to AWS; ``service`` wires them together for the handlers.
"""

__version__ = "0.1.0"
