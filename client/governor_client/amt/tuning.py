"""AMT's tuner on the engine: creates tuning jobs, launches their trials, finishes, deadlines and stops them.

The engine (:class:`~.engine.SimulationEngine`) owns the clock, the schedule and every training job's
lifecycle; the :class:`Tuner` decides which trial runs next, with which hyperparameters, and when a tuning
job ends. It reaches the engine only through :class:`~.host.TrialHost`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from moto.sagemaker.exceptions import ValidationError

from .early_stopping import EarlyStoppingPolicy, fraction_is_valid
from .events import TUNING_DETAIL_TYPE, render_event
from .host import SageMakerStore, TrialHost
from .layout import build_timeline
from .plans import TrialPlan, objective_of
from .sampling import ParameterSpace, StrategySampler
from .timeline import SYSTEM_STOP_GRACE_S, TrainingTimeline
from .training_job import SimTrainingJob
from .trials import trial_request
from .tuning_job import SimTuningJob
from .warm_pools import WarmPool
from .warm_start import warm_start_parents

# [aws-facts §4] quota defaults used when ResourceLimits.MaxNumberOfTrainingJobs is omitted.
DEFAULT_MAX_JOBS = {"Random": 500}
DEFAULT_MAX_JOBS_OTHER = 750


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


class Tuner:
    """The tuning jobs of one engine; ``runs`` maps each job's ARN to its :class:`TuningRun`."""

    def __init__(self, host: TrialHost) -> None:
        self.host = host
        self.runs: dict[str, TuningRun] = {}

    def _emit(self, run: TuningRun, at: datetime) -> None:
        self.host.on_event(
            render_event(
                detail_type=TUNING_DETAIL_TYPE,
                account=run.store.account_id,
                region=run.store.region_name,
                resource_arn=run.job.arn,
                describe=run.job.describe_at(at),
                tags=run.job.tags,
                at=at,
                event_id=self.host.new_event_id(),
            )
        )

    # -- creation ----------------------------------------------------------------------------------------

    def create_tuning_job(self, store: SageMakerStore, **moto_kwargs: Any) -> SimTuningJob:
        """CreateHyperParameterTuningJob: ``InProgress`` at once, first trials launched at creation time."""
        name = moto_kwargs["hyper_parameter_tuning_job_name"]
        config: dict[str, Any] = moto_kwargs["hyper_parameter_tuning_job_config"]
        _validate(name, moto_kwargs)
        at = self.host.now()
        job = SimTuningJob(
            created_at=at,
            now_fn=self.host.now,
            account_id=store.account_id,
            region_name=store.region_name,
            **moto_kwargs,
        )
        strategy = str(config.get("Strategy", "Bayesian"))
        job.parents = warm_start_parents(job, store, DEFAULT_MAX_JOBS.get(strategy, DEFAULT_MAX_JOBS_OTHER))
        run = self._new_run(job, store, config)
        store.hyper_parameter_tuning_jobs[name] = job
        self.runs[job.arn] = run
        self._emit(run, at)
        limits = config.get("ResourceLimits") or {}
        if limits.get("MaxRuntimeInSeconds"):
            deadline = at + timedelta(seconds=float(limits["MaxRuntimeInSeconds"]))
            self.host.schedule(deadline, lambda: self._deadline(run, deadline))
        self._fill(run, at)
        self._maybe_finish(run, at)
        return job

    def _new_run(self, job: SimTuningJob, store: SageMakerStore, config: dict[str, Any]) -> TuningRun:
        """The job's sampler, early-stopping policy and limits (``ValidationError`` when they are invalid)."""
        strategy = str(config.get("Strategy", "Bayesian"))
        limits = config.get("ResourceLimits") or {}
        try:
            spaces = [
                ParameterSpace.from_ranges(d.get("HyperParameterRanges") or config.get("ParameterRanges"))
                for d in job.definitions
            ]
            sampler = StrategySampler(strategy, spaces, warmup=max(3, int(limits.get("MaxParallelTrainingJobs", 1))))
            policy = self.host.policy_factory(config, job.maximize)
        except (ValueError, KeyError) as exc:
            raise ValidationError(message=f"Invalid HyperParameterTuningJobConfig: {exc}") from exc
        default_max = sampler.grid_size() or DEFAULT_MAX_JOBS.get(strategy, DEFAULT_MAX_JOBS_OTHER)
        return TuningRun(
            job=job,
            store=store,
            sampler=sampler,
            policy=policy,
            max_parallel=max(1, int(limits.get("MaxParallelTrainingJobs", 1))),
            max_jobs=int(limits.get("MaxNumberOfTrainingJobs") or default_max),
        )

    # -- launching trials --------------------------------------------------------------------------------

    def _fill(self, run: TuningRun, at: datetime) -> None:
        while run.may_launch() and len(run.job.running_trials) < run.max_parallel:
            if not self._launch(run, at):
                break

    def _launch(self, run: TuningRun, at: datetime) -> bool:
        job = run.job
        index = run.launched + 1
        trial_rng = random.Random(f"{self.host.seed}|{job.hyper_parameter_tuning_job_name}|{index}")
        choice = self._choose(run, index, trial_rng)
        if choice is None:
            run.exhausted = True
            return False
        definition_index, tuned = choice
        definition = job.definitions[definition_index]
        name = f"{job.hyper_parameter_tuning_job_name}-{index:03d}-{trial_rng.getrandbits(32):08x}"
        request = trial_request(job, definition, name, tuned)
        pool, timeline = self._course(run, definition, request, trial_rng, at)
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
        self._register(run, trial, pool, at)
        return True

    @staticmethod
    def _choose(run: TuningRun, index: int, trial_rng: random.Random) -> tuple[int, dict[str, str]] | None:
        """The next trial's (definition index, tuned hyperparameters), or None when the space is exhausted."""
        job = run.job
        random_seed = job.config.get("RandomSeed")
        # AMT's RandomSeed makes the hyperparameter sequence reproducible across jobs, whatever their names.
        sample_rng = (
            random.Random(f"random-seed|{random_seed}|{index}")
            if random_seed is not None
            else random.Random(trial_rng.getrandbits(64))
        )
        best = job.best_trial()
        known = sum(1 for t in job.trials if t.objective_value is not None)
        return run.sampler.next(index, sample_rng, best.tuned_hyperparameters if best else None, known)

    def _course(
        self,
        run: TuningRun,
        definition: dict[str, Any],
        request: dict[str, Any],
        trial_rng: random.Random,
        at: datetime,
    ) -> tuple[WarmPool | None, TrainingTimeline]:
        """The warm pool the trial takes over (if any) and its timeline, early stopping applied."""
        behaviour_view = {**definition, "ResourceConfig": request["ResourceConfig"]}
        plan = self.host.behaviour.plan(
            run.job.config, behaviour_view, request["HyperParameters"], random.Random(trial_rng.getrandbits(64))
        )
        pool = self.host.claim_pool(run.store, request, at)
        plan = _early_stopped(run, run.launched + 1, plan)
        timeline = build_timeline(
            plan, at, request, random.Random(trial_rng.getrandbits(64)), warm_start=pool is not None
        )
        return pool, timeline

    def _register(self, run: TuningRun, trial: SimTrainingJob, pool: WarmPool | None, at: datetime) -> None:
        job = run.job
        run.store.training_jobs[trial.training_job_name] = trial
        job.trials.append(trial)
        run.launched += 1
        job.last_modified_time = at
        if pool is not None:
            self.host.hand_over(pool, trial.training_job_name, at)
        self.host.start(run.store, trial, on_end=lambda _trial, end: self._on_trial_end(run, end))

    # -- ending ------------------------------------------------------------------------------------------

    def _on_trial_end(self, run: TuningRun, at: datetime) -> None:
        if run.job.is_terminal:
            return
        run.job.last_modified_time = at
        if self.host.launch_delay_s > 0 and run.may_launch():
            due = at + timedelta(seconds=self.host.launch_delay_s)
            self.host.schedule(due, lambda: self._refill(run, due))
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
        delay = 0.0 if run.job.stop_requested else self.host.finish_delay_s
        if delay > 0:
            run.finishing = True
            due = at + timedelta(seconds=delay)
            self.host.schedule(due, lambda: self._finish(run, due))
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
        self._emit(run, at)

    def _deadline(self, run: TuningRun, at: datetime) -> None:
        if run.job.is_terminal or run.job.stop_requested:
            return
        run.deadline_hit = True
        for trial in run.job.running_trials:
            if trial.training_job_status == "InProgress":
                self.host.stop(trial, at, SYSTEM_STOP_GRACE_S, "Stopping: the tuning job reached MaxRuntimeInSeconds")
        self._maybe_finish(run, at)

    def stop_tuning_job(self, job: SimTuningJob) -> None:
        """StopHyperParameterTuningJob: the job and its running trials go ``Stopping`` now; they are
        ``Stopped`` after ``stop_delay_s`` (on the next advance)."""
        run = self.runs[job.arn]
        if job.is_terminal:
            raise ValidationError(
                message=f"The request was rejected because the tuning job is in status {job.hyper_parameter_tuning_job_status}."
            )
        if job.stop_requested:
            return  # already Stopping
        at = self.host.now()
        job.stop_requested = True
        job.hyper_parameter_tuning_job_status = "Stopping"
        job.last_modified_time = at
        self._emit(run, at)
        stop_delay_s = self.host.stop_delay_s
        stopped_by = at + timedelta(seconds=stop_delay_s)
        for trial in job.running_trials:
            # Trials already Stopping (early stopping) are hurried along if they would end later.
            if trial.training_job_status == "InProgress" or (
                trial.scheduled_end is not None and trial.scheduled_end > stopped_by
            ):
                self.host.stop(trial, at, stop_delay_s, "Stopping the training job (its tuning job is stopping)")
        if not job.running_trials:
            due = at + timedelta(seconds=stop_delay_s)
            self.host.schedule(due, lambda: self._maybe_finish(run, due))


def _validate(name: str, moto_kwargs: dict[str, Any]) -> None:
    if not (moto_kwargs.get("training_job_definition") or moto_kwargs.get("training_job_definitions")):
        raise ValidationError(message="Either TrainingJobDefinition or TrainingJobDefinitions must be provided.")
    if len(name) > 32:
        raise ValidationError(
            message=f"1 validation error detected: Value '{name}' at 'hyperParameterTuningJobName' "
            "failed to satisfy constraint: Member must have length less than or equal to 32"
        )


def _early_stopped(run: TuningRun, index: int, plan: TrialPlan) -> TrialPlan:
    """``plan`` as the job's early-stopping policy (if any) cuts it; plans that end early already stay."""
    if (
        run.policy is not None
        and plan.outcome == "Completed"
        and plan.objective_value is not None
        and plan.early_stop_at_s is None
    ):
        fraction = run.policy.decide(index, plan.objective_value)
        if fraction is not None and fraction_is_valid(fraction):
            return plan.stopped_early_at(plan.duration_s * fraction)
    return plan
