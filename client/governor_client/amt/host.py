"""What the tuner asks of the engine, and the part of moto's SageMaker backend both write to.

Protocols only, so :mod:`.tuning` depends on this module rather than on :mod:`.engine`, which builds it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from .early_stopping import EarlyStoppingPolicy
from .events import EventBridgeEvent
from .plans import TrialBehaviour
from .training_job import SimTrainingJob
from .warm_pools import WarmPool


class SageMakerStore(Protocol):
    """The part of moto's SageMaker backend the engine writes to."""

    account_id: str
    region_name: str
    training_jobs: dict[str, Any]
    hyper_parameter_tuning_jobs: dict[str, Any]


class TrialHost(Protocol):
    """The engine as the tuner sees it: the clock and schedule, trials' lifecycles, warm pools, events."""

    seed: int
    behaviour: TrialBehaviour
    on_event: Callable[[EventBridgeEvent], None]
    stop_delay_s: float
    policy_factory: Callable[[dict[str, Any], bool], EarlyStoppingPolicy | None]
    launch_delay_s: float
    finish_delay_s: float

    def now(self) -> datetime: ...

    def schedule(self, at: datetime, action: Callable[[], None]) -> None: ...

    def new_event_id(self) -> uuid.UUID: ...

    def start(
        self,
        store: SageMakerStore,
        job: SimTrainingJob,
        on_end: Callable[[SimTrainingJob, datetime], None] | None = None,
    ) -> None: ...

    def stop(self, job: SimTrainingJob, at: datetime, delay_s: float, reason: str) -> None: ...

    def claim_pool(self, store: SageMakerStore, request: dict[str, Any], at: datetime) -> WarmPool | None: ...

    def hand_over(self, pool: WarmPool, new_job_name: str, at: datetime) -> None: ...
