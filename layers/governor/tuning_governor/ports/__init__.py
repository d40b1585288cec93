"""Ports: what the governor needs from the outside world, named once as Protocols (one module per port;
the store's, one module per area of its table)."""

from tuning_governor.ports.capacity import CapacityStore, SweepStore
from tuning_governor.ports.checks import CHECK_KEY, CheckScheduler
from tuning_governor.ports.decisions import DecisionStore, DeliveryStore, JudgementStore
from tuning_governor.ports.jobs import JobStore
from tuning_governor.ports.notifier import Notifier
from tuning_governor.ports.prices import PriceStore
from tuning_governor.ports.queue import QueueStore
from tuning_governor.ports.quotas import Quotas
from tuning_governor.ports.sagemaker import SageMaker, StopResult
from tuning_governor.ports.store import AREAS, Store
from tuning_governor.ports.team_months import TeamMonthStore
from tuning_governor.ports.trials import TrialStore

__all__ = [
    "AREAS",
    "CHECK_KEY",
    "CapacityStore",
    "CheckScheduler",
    "DecisionStore",
    "DeliveryStore",
    "JobStore",
    "JudgementStore",
    "Notifier",
    "PriceStore",
    "QueueStore",
    "Quotas",
    "SageMaker",
    "StopResult",
    "Store",
    "SweepStore",
    "TeamMonthStore",
    "TrialStore",
]
