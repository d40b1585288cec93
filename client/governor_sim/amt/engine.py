"""The discrete-event core of the stand-in: launches trials, runs timelines, emits events.

It knows nothing about HTTP or boto3: the moto backend calls in (create/stop), the stand-in drives the
clock (``run_until``). Every state change goes through :meth:`SimulationEngine._apply` so that exactly one
event is emitted per observable change, at the virtual time the change happened.
"""

from __future__ import annotations

import heapq
import itertools
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from moto.sagemaker.exceptions import ResourceInUseException, ValidationError

from .behaviour import TrialBehaviour, objective_of
from .clock import VirtualClock, as_naive_utc
from .early_stopping import EarlyStoppingPolicy, fraction_is_valid, policy_for
from .events import TRAINING_DETAIL_TYPE, TUNING_DETAIL_TYPE, EventBridgeEvent, render_event
from .jobs import SimTrainingJob, SimTuningJob
from .sampling import ParameterSpace, StrategySampler
from .timeline import SYSTEM_STOP_GRACE_S, Transition, build_timeline
from .warm_pools import WarmPool, WarmPoolRegistry, pool_key

# [aws-facts §4] quota defaults used when ResourceLimits.MaxNumberOfTrainingJobs is omitted.
DEFAULT_MAX_JOBS = {"Random": 500}
DEFAULT_MAX_JOBS_OTHER = 750


class SageMakerStore(Protocol):
    """The part of moto's SageMaker backend the engine writes to."""

    account_id: str
    region_name: str
    training_jobs: dict[str, Any]
    hyper_parameter_tuning_jobs: dict[str, Any]


@dataclass(order=True)
class _Scheduled:
    at: datetime
    seq: int
    action: Callable[[], None] = field(compare=False)


@dataclass
class TuningRun:
    """Launch bookkeeping of one tuning job."""

    job: SimTuningJob
    store: SageMakerStore
    sampler: StrategySampler
    policy: EarlyStoppingPolicy | None
    max_parallel: int
    max_jobs: int
    launched: int = 0
    exhausted: bool = False
    deadline_hit: bool = False
    #: The job has nothing left to run and its terminal status is scheduled (``finish_delay_s``).
    finishing: bool = False

    def may_launch(self) -> bool:
        return (
            not self.job.stop_requested
            and not self.deadline_hit
            and not self.exhausted
            and self.launched < self.max_jobs
        )


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

    def __init__(
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
        self.tuning_runs: dict[str, TuningRun] = {}
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

    def _new_event_id(self) -> uuid.UUID:
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
                event_id=self._new_event_id(),
            )
        )

    def _emit_tuning(self, run: TuningRun, at: datetime) -> None:
        self.on_event(
            render_event(
                detail_type=TUNING_DETAIL_TYPE,
                account=run.store.account_id,
                region=run.store.region_name,
                resource_arn=run.job.arn,
                describe=run.job.describe_at(at),
                tags=run.job.tags,
                at=at,
                event_id=self._new_event_id(),
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
        pool = self._claim_pool(store, request, at)
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
            self._hand_over(pool, name, at)
        self._start(store, job)
        return job

    def _start(
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

    def _claim_pool(self, store: SageMakerStore, request: dict[str, Any], at: datetime) -> WarmPool | None:
        """The ``Available`` pool a new job created at ``at`` with ``request`` takes over, if any."""
        if not self.warm_pool_reuse:
            return None
        key = pool_key(store.account_id, store.region_name, request)
        return self.warm_pools.claim(key, at) if key is not None else None

    def _hand_over(self, pool: WarmPool, new_job_name: str, at: datetime) -> None:
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
        self._stop(job, self.now(), self.stop_delay_s, "Stopping the training job")

    def _stop(self, job: SimTrainingJob, at: datetime, delay_s: float, reason: str) -> None:
        job.generation += 1
        stopping, stopped = job.timeline.stop_transitions(at, delay_s, reason, progress_at=job.stopping_since)
        if job.training_job_status != "Stopping":
            self._apply(job, job.generation, stopping)
        self._schedule_transition(job, stopped)

    # -- tuning jobs -------------------------------------------------------------------------------------

    def create_tuning_job(self, store: SageMakerStore, **moto_kwargs: Any) -> SimTuningJob:
        """CreateHyperParameterTuningJob: ``InProgress`` at once, first trials launched at creation time."""
        name = moto_kwargs["hyper_parameter_tuning_job_name"]
        config: dict[str, Any] = moto_kwargs["hyper_parameter_tuning_job_config"]
        if not (moto_kwargs.get("training_job_definition") or moto_kwargs.get("training_job_definitions")):
            raise ValidationError(message="Either TrainingJobDefinition or TrainingJobDefinitions must be provided.")
        if len(name) > 32:
            raise ValidationError(
                message=f"1 validation error detected: Value '{name}' at 'hyperParameterTuningJobName' "
                "failed to satisfy constraint: Member must have length less than or equal to 32"
            )
        at = self.now()
        job = SimTuningJob(
            created_at=at,
            now_fn=self.now,
            account_id=store.account_id,
            region_name=store.region_name,
            **moto_kwargs,
        )
        parents = ((job.warm_start_config or {}).get("ParentHyperParameterTuningJobs")) or []
        job.parents = [
            store.hyper_parameter_tuning_jobs[p["HyperParameterTuningJobName"]]
            for p in parents
            if isinstance(store.hyper_parameter_tuning_jobs.get(p["HyperParameterTuningJobName"]), SimTuningJob)
        ]
        strategy = str(config.get("Strategy", "Bayesian"))
        limits = config.get("ResourceLimits") or {}
        try:
            spaces = [
                ParameterSpace.from_ranges(d.get("HyperParameterRanges") or config.get("ParameterRanges"))
                for d in job.definitions
            ]
            sampler = StrategySampler(strategy, spaces, warmup=max(3, int(limits.get("MaxParallelTrainingJobs", 1))))
            policy = self.policy_factory(config, job.maximize)
        except (ValueError, KeyError) as exc:
            raise ValidationError(message=f"Invalid HyperParameterTuningJobConfig: {exc}") from exc
        default_max = sampler.grid_size() or DEFAULT_MAX_JOBS.get(strategy, DEFAULT_MAX_JOBS_OTHER)
        run = TuningRun(
            job=job,
            store=store,
            sampler=sampler,
            policy=policy,
            max_parallel=max(1, int(limits.get("MaxParallelTrainingJobs", 1))),
            max_jobs=int(limits.get("MaxNumberOfTrainingJobs") or default_max),
        )
        store.hyper_parameter_tuning_jobs[name] = job
        self.tuning_runs[job.arn] = run
        self._emit_tuning(run, at)
        if limits.get("MaxRuntimeInSeconds"):
            deadline = at + timedelta(seconds=float(limits["MaxRuntimeInSeconds"]))
            self.schedule(deadline, lambda: self._deadline(run, deadline))
        self._fill(run, at)
        self._maybe_finish(run, at)
        return job

    def _fill(self, run: TuningRun, at: datetime) -> None:
        while run.may_launch() and len(run.job.running_trials) < run.max_parallel:
            if not self._launch(run, at):
                break

    def _launch(self, run: TuningRun, at: datetime) -> bool:
        job = run.job
        index = run.launched + 1
        trial_rng = random.Random(f"{self.seed}|{job.hyper_parameter_tuning_job_name}|{index}")
        random_seed = job.config.get("RandomSeed")
        # AMT's RandomSeed makes the hyperparameter sequence reproducible across jobs, whatever their names.
        sample_rng = (
            random.Random(f"random-seed|{random_seed}|{index}")
            if random_seed is not None
            else random.Random(trial_rng.getrandbits(64))
        )
        best = job.best_trial()
        known = sum(1 for t in job.trials if t.objective_value is not None)
        choice = run.sampler.next(index, sample_rng, best.tuned_hyperparameters if best else None, known)
        if choice is None:
            run.exhausted = True
            return False
        definition_index, tuned = choice
        definition = job.definitions[definition_index]
        name = f"{job.hyper_parameter_tuning_job_name}-{index:03d}-{trial_rng.getrandbits(32):08x}"
        resource_config = trial_resource_config(definition)
        static = {str(k): str(v) for k, v in (definition.get("StaticHyperParameters") or {}).items()}
        request = _drop_none(
            {
                "TrainingJobName": name,
                "HyperParameters": {**static, **tuned},
                "AlgorithmSpecification": definition.get("AlgorithmSpecification"),
                "RoleArn": definition.get("RoleArn"),
                "InputDataConfig": definition.get("InputDataConfig"),
                "OutputDataConfig": definition.get("OutputDataConfig"),
                "ResourceConfig": resource_config,
                "VpcConfig": definition.get("VpcConfig"),
                "StoppingCondition": definition.get("StoppingCondition"),
                "EnableNetworkIsolation": definition.get("EnableNetworkIsolation"),
                "EnableInterContainerTrafficEncryption": definition.get("EnableInterContainerTrafficEncryption"),
                "EnableManagedSpotTraining": definition.get("EnableManagedSpotTraining"),
                "CheckpointConfig": definition.get("CheckpointConfig"),
                "RetryStrategy": definition.get("RetryStrategy"),
                "Environment": definition.get("Environment"),
                # Training jobs launched by a tuning job carry the tuning job's tags.
                "Tags": list(job.tags or []),
            }
        )
        behaviour_view = {**definition, "ResourceConfig": resource_config}
        plan = self.behaviour.plan(
            job.config, behaviour_view, request["HyperParameters"], random.Random(trial_rng.getrandbits(64))
        )
        pool = self._claim_pool(run.store, request, at)
        if (
            run.policy is not None
            and plan.outcome == "Completed"
            and plan.objective_value is not None
            and plan.early_stop_at_s is None
        ):
            fraction = run.policy.decide(index, plan.objective_value)
            if fraction is not None and fraction_is_valid(fraction):
                plan = plan.stopped_early_at(plan.duration_s * fraction)
        timeline = build_timeline(
            plan, at, request, random.Random(trial_rng.getrandbits(64)), warm_start=pool is not None
        )
        objective = objective_of(job.config, definition)
        trial = SimTrainingJob(
            account_id=run.store.account_id,
            region_name=run.store.region_name,
            request=request,
            created_at=at,
            timeline=timeline,
            metric_name=objective[0] if objective else None,
            tuning_job_arn=job.arn,
            tuning_job_name=job.hyper_parameter_tuning_job_name,
            definition_name=definition.get("DefinitionName"),
            tuned_hyperparameters=tuned,
            trial_index=index,
        )
        run.store.training_jobs[name] = trial
        job.trials.append(trial)
        run.launched += 1
        job.last_modified_time = at
        if pool is not None:
            self._hand_over(pool, name, at)
        self._start(run.store, trial, on_end=lambda _trial, end: self._on_trial_end(run, end))
        return True

    def _on_trial_end(self, run: TuningRun, at: datetime) -> None:
        if run.job.is_terminal:
            return
        run.job.last_modified_time = at
        if self.launch_delay_s > 0 and run.may_launch():
            due = at + timedelta(seconds=self.launch_delay_s)
            self.schedule(due, lambda: self._refill(run, due))
            return
        self._fill(run, at)
        self._maybe_finish(run, at)

    def _refill(self, run: TuningRun, at: datetime) -> None:
        if run.job.is_terminal:
            return
        self._fill(run, at)
        self._maybe_finish(run, at)

    def _maybe_finish(self, run: TuningRun, at: datetime) -> None:
        if run.job.is_terminal or run.finishing or run.job.running_trials or run.may_launch():
            return
        delay = 0.0 if run.job.stop_requested else self.finish_delay_s
        if delay > 0:
            run.finishing = True
            due = at + timedelta(seconds=delay)
            self.schedule(due, lambda: self._finish(run, due))
            return
        self._finish(run, at)

    def _finish(self, run: TuningRun, at: datetime) -> None:
        job = run.job
        if job.is_terminal:
            return
        if job.stop_requested:
            status = "Stopped"
        elif job.trials and all(t.training_job_status == "Failed" for t in job.trials):
            status = "Failed"
            # [inferred] wording; AWS's exact message for this case is not documented.
            job.failure_reason = "All training jobs launched by the tuning job failed."
        else:
            # Reaching MaxNumberOfTrainingJobs or MaxRuntimeInSeconds ends the job normally [inferred].
            status = "Completed"
        job.hyper_parameter_tuning_job_status = status
        job.hyper_parameter_tuning_end_time = at
        job.last_modified_time = at
        self._emit_tuning(run, at)

    def _deadline(self, run: TuningRun, at: datetime) -> None:
        if run.job.is_terminal or run.job.stop_requested:
            return
        run.deadline_hit = True
        for trial in run.job.running_trials:
            if trial.training_job_status == "InProgress":
                self._stop(trial, at, SYSTEM_STOP_GRACE_S, "Stopping: the tuning job reached MaxRuntimeInSeconds")
        self._maybe_finish(run, at)

    def stop_tuning_job(self, job: SimTuningJob) -> None:
        """StopHyperParameterTuningJob: the job and its running trials go ``Stopping`` now; they are
        ``Stopped`` after ``stop_delay_s`` (on the next advance)."""
        run = self.tuning_runs[job.arn]
        if job.is_terminal:
            raise ValidationError(
                message=f"The request was rejected because the tuning job is in status {job.hyper_parameter_tuning_job_status}."
            )
        if job.stop_requested:
            return  # already Stopping
        at = self.now()
        job.stop_requested = True
        job.hyper_parameter_tuning_job_status = "Stopping"
        job.last_modified_time = at
        self._emit_tuning(run, at)
        stopped_by = at + timedelta(seconds=self.stop_delay_s)
        for trial in job.running_trials:
            # Trials already Stopping (early stopping) are hurried along if they would end later.
            if trial.training_job_status == "InProgress" or (
                trial.scheduled_end is not None and trial.scheduled_end > stopped_by
            ):
                self._stop(trial, at, self.stop_delay_s, "Stopping the training job (its tuning job is stopping)")
        if not job.running_trials:
            due = at + timedelta(seconds=self.stop_delay_s)
            self.schedule(due, lambda: self._maybe_finish(run, due))


def trial_resource_config(definition: dict[str, Any]) -> dict[str, Any]:
    """The ResourceConfig a trial of ``definition`` runs with.

    ``HyperParameterTuningResourceConfig.InstanceConfigs`` lists alternatives in priority order
    (AllocationStrategy=Prioritized); with capacity always available the first one is used.
    """
    if definition.get("ResourceConfig"):
        return dict(definition["ResourceConfig"])
    tuning_rc = definition.get("HyperParameterTuningResourceConfig") or {}
    configs = tuning_rc.get("InstanceConfigs") or []
    chosen = configs[0] if configs else tuning_rc
    return _drop_none(
        {
            "InstanceType": chosen.get("InstanceType"),
            "InstanceCount": chosen.get("InstanceCount", 1),
            "VolumeSizeInGB": chosen.get("VolumeSizeInGB", tuning_rc.get("VolumeSizeInGB")),
            "VolumeKmsKeyId": tuning_rc.get("VolumeKmsKeyId"),
        }
    )


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}
