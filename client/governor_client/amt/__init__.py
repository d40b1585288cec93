"""A SageMaker automatic model tuning (AMT) stand-in built on moto — client side only, never in a Lambda.

Public API: :class:`VirtualClock`, :class:`AmtStandIn`, :class:`TrialBehaviour` / :class:`TrialPlan` /
:class:`DefaultTrialBehaviour` (and :data:`FailurePhase`), :func:`stub_pricing`.
"""

from .behaviour import DefaultTrialBehaviour
from .clock import VirtualClock
from .early_stopping import EarlyStoppingPolicy, HyperbandPolicy, MedianStoppingPolicy
from .events import TRAINING_DETAIL_TYPE, TUNING_DETAIL_TYPE, EventBridgeEvent
from .plans import FailurePhase, ObjectiveCurve, TrialBehaviour, TrialOutcome, TrialPlan
from .pricing import PriceListStubber, price_list_entry, stub_pricing
from .standin import AmtStandIn, TrialInfo

__all__ = [
    "TRAINING_DETAIL_TYPE",
    "TUNING_DETAIL_TYPE",
    "AmtStandIn",
    "DefaultTrialBehaviour",
    "EarlyStoppingPolicy",
    "EventBridgeEvent",
    "FailurePhase",
    "HyperbandPolicy",
    "MedianStoppingPolicy",
    "ObjectiveCurve",
    "PriceListStubber",
    "TrialBehaviour",
    "TrialInfo",
    "TrialOutcome",
    "TrialPlan",
    "VirtualClock",
    "price_list_entry",
    "stub_pricing",
]
