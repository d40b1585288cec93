"""Ports: what the governor needs from the outside world, named once as Protocols (one module per port)."""

from tuning_governor.ports.sagemaker import SageMaker, StopResult
from tuning_governor.ports.store import Store

__all__ = ["SageMaker", "StopResult", "Store"]
