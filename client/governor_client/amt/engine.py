"""The discrete-event core of the stand-in: the schedule, training jobs' timelines, warm pools, events.

It knows nothing about HTTP or boto3: the moto backend calls in (create/stop), the stand-in drives the
clock (``run_until``). Every state change goes through :meth:`SimulationEngine._apply` so that exactly one
event is emitted per observable change, at the virtual time the change happened. Tuning jobs (which trial
runs next, when a job ends) are the :class:`~.tuning.Tuner`'s, which runs on this engine.
"""

from __future__ import annotations

import heapq
import itertools
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from moto.sagemaker.exceptions import ResourceInUseException, ValidationError

from .clock import VirtualClock, as_naive_utc
from .early_stopping import EarlyStoppingPolicy, policy_for
from .events import TRAINING_DETAIL_TYPE, EventBridgeEvent, render_event
from .host import SageMakerStore
from .layout import build_timeline
from .plans import TrialBehaviour, objective_of
from .timeline import Transition
from .training_job import SimTrainingJob
from .tuning import Tuner, TuningRun
from .tuning_job import SimTuningJob
from .warm_pools import WarmPool, WarmPoolRegistry, pool_key


@dataclass(order=True)
class _Scheduled:
    at: datetime
    seq: int
    action: Callable[[], None] = field(compare=False)


class SimulationEngine:
    """Owns the schedule of every simulated job.

    Callers may rely on: transitions run in virtual-time order (ties in scheduling order); nothing
    happens between calls except through :meth:`run_until`; randomness derives only from ``seed``
    (and ``HyperParameterTuningJobConfig.RandomSeed`` for sampling), so a seed reproduces a run.

    Timing knobs (all default to the instantaneous behaviour):

    * ``launch_delay_s``: seconds the tuner takes to launch the next trial after one ends (AMT picks the
      next hyperparameters, then provisions). The first ``MaxParallelTrainingJobs`` trials start at once.
    * ``finish_delay_s``: seconds between the last trial's end and the tuning job's terminal status (not
      applied after a StopHyperParameterTuningJob).
    * ``warm_pool_reuse``: whether new jobs take over matching ``Available`` warm pools
      (see :mod:`.warm_pools`).
    """

    def __init__(  # noqa: PLR0913 - the stand-in's knobs, keyword-only with defaults
        self,
        clock: VirtualClock,
        *,
        seed: int,
        behaviour: TrialBehaviour,
        on_event: Callable[[EventBridgeEvent], None],
        stop_delay_s: float = 0.0,
        policy_factory: Callable[[dict[str, Any], bool], EarlyStoppingPolicy | None] = policy_for,
        launch_delay_s: float = 0.0,
        finish_delay_s: float = 0.0,
        warm_pool_reuse: bool = True,
    ) -> None:
        if launch_delay_s < 0 or finish_delay_s < 0 or stop_delay_s < 0:
            raise ValueError("delays cannot be negative")
        self.clock = clock
        self.seed = seed
        self.behaviour = behaviour
        self.on_event = on_event
        self.stop_delay_s = stop_delay_s
        self.policy_factory = policy_factory
        self.launch_delay_s = launch_delay_s
        self.finish_delay_s = finish_delay_s
        self.warm_pool_reuse = warm_pool_reuse
        self.warm_pools = WarmPoolRegistry()
        self._heap: list[_Scheduled] = []
        self._seq = itertools.count()
        self._event_ids = random.Random(f"{seed}|event-ids")
        self.training_jobs: list[SimTrainingJob] = []
        self.tuner = Tuner(self)
        self._on_end: dict[int, Callable[[SimTrainingJob, datetime], None]] = {}
        self._stores: dict[int, SageMakerStore] = {}

    # -- time --------------------------------------------------------------------------------------------

    def now(self) -> datetime:
        """Virtual now as a naive UTC datetime (moto's representation)."""
        return as_naive_utc(self.clock.now())

    def schedule(self, at: datetime, action: Callable[[], None]) -> None:
        heapq.heappush(self._heap, _Scheduled(at, next(self._seq), action))

    def next_due(self) -> datetime | None:
        return self._heap[0].at if self._heap else None

    def run_until(self, until: datetime, inclusive: bool = True) -> None:
        """Run every scheduled transition due before (or at, if ``inclusive``) ``until``."""
        while self._heap and (self._heap[0].at <= until if inclusive else self._heap[0].at < until):
            item = heapq.heappop(self._heap)
            self.clock.advance_to(item.at)
            item.action()

    def catch_up(self) -> None:
        """Bring state up to the clock (if someone moved it directly) before serving an API call.

        Transitions due exactly *now* are left for the next advance, so a Stop is observable as
        ``Stopping`` until the caller advances the clock.
        """
        self.run_until(self.now(), inclusive=False)

    def is_idle(self) -> bool:
        """True when no tuning job and no training job is in a non-terminal status."""
        return all(job.is_terminal for job in self.training_jobs) and all(
            run.job.is_terminal for run in self.tuning_runs.values()
        )

    # -- events ------------------------------------------------------------------------------------------

    def new_event_id(self) -> uuid.UUID:
        return uuid.UUID(int=self._event_ids.getrandbits(128), version=4)

    def _emit_training(self, job: SimTrainingJob, at: datetime) -> None:
        store = self._stores[id(job)]
        self.on_event(
            render_event(
                detail_type=TRAINING_DETAIL_TYPE,
                account=store.account_id,
                region=store.region_name,
                resource_arn=job.arn,
                describe=job.response_object,
                tags=job.tags,
                at=at,
                event_id=self.new_event_id(),
            )
        )

    # -- training jobs -----------------------------------------------------------------------------------

    def create_training_job(self, store: SageMakerStore, request: dict[str, Any]) -> SimTrainingJob:
        """A standalone CreateTrainingJob: plan it with the behaviour and start its timeline."""
        name = request["TrainingJobName"]
        if name in store.training_jobs:
            raise ResourceInUseException(
                message=f"Training job names must be unique within an AWS account and region, and a training job with this name already exists ({name})"
            )
        at = self.now()
        rng = random.Random(f"{self.seed}|training|{name}")
        hyperparameters = {str(k): str(v) for k, v in (request.get("HyperParameters") or {}).items()}
        plan = self.behaviour.plan(None, request, hyperparameters, random.Random(rng.getrandbits(64)))
        pool = self.claim_pool(store, request, at)
        timeline = build_timeline(plan, at, request, random.Random(rng.getrandbits(64)), warm_start=pool is not None)
        objective = objective_of(None, request)
        job = SimTrainingJob(
            account_id=store.account_id,
            region_name=store.region_name,
            request=request,
            created_at=at,
            timeline=timeline,
            metric_name=objective[0] if objective else None,
        )
        store.training_jobs[name] = job
        if pool is not None:
            self.hand_over(pool, name, at)
        self.start(store, job)
        return job

    def start(
        self,
        store: SageMakerStore,
        job: SimTrainingJob,
        on_end: Callable[[SimTrainingJob, datetime], None] | None = None,
    ) -> None:
        self.training_jobs.append(job)
        self._stores[id(job)] = store
        if on_end is not None:
            self._on_end[id(job)] = on_end
        first, *rest = job.timeline.transitions
        # Creation is a state change of its own (InProgress/Starting), even though the model starts there.
        self._apply(job, job.generation, first, created=True)
        for transition in rest:
            self._schedule_transition(job, transition)

    def _schedule_transition(self, job: SimTrainingJob, transition: Transition) -> None:
        generation = job.generation
        if transition.ends_job:
            job.scheduled_end = transition.at
        self.schedule(transition.at, lambda: self._apply(job, generation, transition))

    def _apply(self, job: SimTrainingJob, generation: int, transition: Transition, created: bool = False) -> None:
        if generation != job.generation:
            return  # superseded by a stop (or, for a pending warm-pool expiry, by a reuse)
        changed = job.apply(transition)
        if transition.warm_pool == "Available":
            key = pool_key(self._stores[id(job)].account_id, self._stores[id(job)].region_name, job.request)
            if key is not None and self.warm_pool_reuse:
                self.warm_pools.offer(key, job, transition.at, job.timeline.keep_alive_s)
        elif transition.warm_pool in ("Terminated", "Reused"):
            self.warm_pools.withdraw(job)
        if changed or created:
            self._emit_training(job, transition.at)
        if transition.ends_job:
            on_end = self._on_end.get(id(job))
            if on_end is not None:
                on_end(job, transition.at)

    # -- warm pools --------------------------------------------------------------------------------------

    def claim_pool(self, store: SageMakerStore, request: dict[str, Any], at: datetime) -> WarmPool | None:
        """The ``Available`` pool a new job created at ``at`` with ``request`` takes over, if any."""
        if not self.warm_pool_reuse:
            return None
        key = pool_key(store.account_id, store.region_name, request)
        return self.warm_pools.claim(key, at) if key is not None else None

    def hand_over(self, pool: WarmPool, new_job_name: str, at: datetime) -> None:
        """The donor's pool moves to ``new_job_name``: ``Reused`` now; its pending expiry is cancelled."""
        donor = pool.owner
        donor.generation += 1
        reused = Transition(
            at,
            "Completed",
            donor.secondary_status,
            "Training job completed",
            warm_pool="Reused",
            retained_s=pool.retained_seconds(at),
            reused_by=new_job_name,
        )
        self._apply(donor, donor.generation, reused)

    def stop_training_job(self, job: SimTrainingJob) -> None:
        """StopTrainingJob: ``Stopping`` now, ``Stopped`` after ``stop_delay_s`` (on the next advance)."""
        if job.is_terminal:
            raise ValidationError(
                message=f"The request was rejected because the training job is in status {job.training_job_status}."
            )
        if job.training_job_status == "Stopping":
            return  # already on its way; stopping twice is harmless
        self.stop(job, self.now(), self.stop_delay_s, "Stopping the training job")

    def stop(self, job: SimTrainingJob, at: datetime, delay_s: float, reason: str) -> None:
        job.generation += 1
        stopping, stopped = job.timeline.stop_transitions(at, delay_s, reason, progress_at=job.stopping_since)
        if job.training_job_status != "Stopping":
            self._apply(job, job.generation, stopping)
        self._schedule_transition(job, stopped)

    # -- tuning jobs (the tuner's) -------------------------------------------------------------------------

    @property
    def tuning_runs(self) -> dict[str, TuningRun]:
        """Each tuning job's launch bookkeeping, by ARN."""
        return self.tuner.runs

    def create_tuning_job(self, store: SageMakerStore, **moto_kwargs: Any) -> SimTuningJob:
        """CreateHyperParameterTuningJob (see :meth:`.tuning.Tuner.create_tuning_job`)."""
        return self.tuner.create_tuning_job(store, **moto_kwargs)

    def stop_tuning_job(self, job: SimTuningJob) -> None:
        """StopHyperParameterTuningJob (see :meth:`.tuning.Tuner.stop_tuning_job`)."""
        self.tuner.stop_tuning_job(job)
