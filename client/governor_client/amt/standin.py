"""``AmtStandIn``: the public face of the SageMaker AMT stand-in."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Self

from moto.events.models import events_backends

from .behaviour import DefaultTrialBehaviour
from .clock import VirtualClock, as_naive_utc, as_utc
from .engine import SimulationEngine
from .events import EventBridgeEvent
from .moto_sagemaker import install as install_sagemaker
from .plans import TrialBehaviour, TrialPlan
from .quotas import QuotaCatalogue
from .quotas import install as install_quotas
from .tuning_job import SimTuningJob

DEFAULT_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
DEFAULT_MAX_IDLE_WAIT_S = 7 * 24 * 3600.0


@dataclass(frozen=True)
class TrialInfo:
    """What the stand-in decided for one trial of a tuning job (a snapshot)."""

    name: str
    index: int
    definition_name: str | None
    instance_type: str | None
    instance_count: int | None
    tuned_hyperparameters: dict[str, str]
    status: str
    plan: TrialPlan


class AmtStandIn:
    """A faithful-enough SageMaker automatic model tuning service on top of moto.

    Use inside ``mock_aws()``::

        with AmtStandIn(clock=VirtualClock(start), seed=7) as amt:
            sm.create_hyper_parameter_tuning_job(...)
            amt.advance(600)
            amt.run_until_idle()

    Callers may rely on:

    * Plain boto3 ``sagemaker`` / ``service-quotas`` clients reach the simulation while installed (any
      account/region); nothing changes between calls except through :meth:`advance` /
      :meth:`run_until_idle` (or moving ``clock`` directly, which API calls catch up with).
    * Identical inputs and ``seed`` give identical job names, hyperparameters, times and events.
    * :attr:`events` holds one EventBridge event per observable state change, oldest first.
    * ``uninstall()`` (or leaving the ``with`` block) restores moto exactly; jobs keep their last state.
    """

    def __init__(  # noqa: PLR0913 - the stand-in's knobs, keyword-only with defaults
        self,
        clock: VirtualClock | None = None,
        *,
        seed: int = 0,
        behaviour: TrialBehaviour | None = None,
        region: str = "us-east-1",
        account_id: str = "123456789012",
        forward_to_eventbridge: bool = False,
        stop_delay_s: float = 0.0,
        launch_delay_s: float = 0.0,
        finish_delay_s: float = 0.0,
        warm_pool_reuse: bool = True,
    ) -> None:
        """``stop_delay_s``: virtual seconds between ``Stopping`` and ``Stopped`` after a Stop* call
        (0 = stopped on the next ``advance``). ``forward_to_eventbridge`` also puts every event on moto's
        default event bus of the job's account/region, so rules with SQS targets receive them.

        ``launch_delay_s`` (the tuner's pause before launching the next trial), ``finish_delay_s`` (between
        a tuning job's last trial and its terminal status) and ``warm_pool_reuse`` (new jobs take over
        matching ``Available`` warm pools) are described on :class:`SimulationEngine`; the defaults keep
        launches and finishes instantaneous."""
        self.clock = clock or VirtualClock(DEFAULT_START)
        self.seed = seed
        self.behaviour: TrialBehaviour = behaviour or DefaultTrialBehaviour(seed=seed)
        self.region = region
        self.account_id = account_id
        self.forward_to_eventbridge = forward_to_eventbridge
        self._events: list[EventBridgeEvent] = []
        self.engine = SimulationEngine(
            clock=self.clock,
            seed=seed,
            behaviour=self.behaviour,
            on_event=self._record,
            stop_delay_s=stop_delay_s,
            launch_delay_s=launch_delay_s,
            finish_delay_s=finish_delay_s,
            warm_pool_reuse=warm_pool_reuse,
        )
        self.quotas = QuotaCatalogue()
        self._undo: list[Callable[[], None]] = []

    # -- installation ------------------------------------------------------------------------------------

    @property
    def installed(self) -> bool:
        return bool(self._undo)

    def install(self) -> None:
        """Plug into moto (SageMaker and Service Quotas). Only one stand-in can be installed at a time."""
        if self._undo:
            return
        undo_sagemaker = install_sagemaker(self.engine)
        try:
            undo_quotas = install_quotas(self.quotas)
        except Exception:
            undo_sagemaker()
            raise
        self._undo = [undo_sagemaker, undo_quotas]

    def uninstall(self) -> None:
        """Restore moto as it was before :meth:`install`."""
        while self._undo:
            self._undo.pop()()

    def __enter__(self) -> Self:
        self.install()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.uninstall()

    # -- time --------------------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward, running every transition due on the way in time order."""
        if seconds < 0:
            raise ValueError("cannot advance by a negative number of seconds")
        target = self.clock.now() + timedelta(seconds=seconds)
        self.engine.run_until(as_naive_utc(target))
        self.clock.advance_to(target)

    def advance_to(self, when: datetime) -> None:
        """Move the clock to ``when`` (tz-aware, or naive UTC), running every transition due up to and
        including it (``when`` = now runs what is due now); a ``when`` in the past runs nothing and leaves
        the clock where it is."""
        target = as_utc(when)
        if target < self.clock.now():
            return
        self.engine.run_until(as_naive_utc(target))
        self.clock.advance_to(target)

    def next_due(self) -> datetime | None:
        """When the next scheduled transition happens (tz-aware UTC), or ``None`` if nothing is scheduled
        (no job running and no warm pool waiting to expire)."""
        due = self.engine.next_due()
        return as_utc(due) if due is not None else None

    def idle(self) -> bool:
        """True when no tuning or training job is in a non-terminal status (warm pools may be Available)."""
        return self.engine.is_idle()

    def run_until_idle(self, max_seconds: float = DEFAULT_MAX_IDLE_WAIT_S) -> float:
        """Advance until no tuning or training job is in a non-terminal status; return the virtual seconds
        that passed. Warm pools may still be ``Available`` afterwards.

        Raises ``TimeoutError`` (after advancing ``max_seconds``) if jobs are still running by then.
        """
        start = self.clock.now()
        deadline = as_naive_utc(start) + timedelta(seconds=max_seconds)
        while not self.engine.is_idle():
            due = self.engine.next_due()
            if due is None:
                raise RuntimeError("jobs are in progress but nothing is scheduled (a stand-in bug)")
            if due > deadline:
                self.engine.run_until(deadline)
                self.clock.advance_to(as_utc(deadline))
                raise TimeoutError(f"jobs still running after {max_seconds} virtual seconds")
            self.engine.run_until(due)
        return (self.clock.now() - start).total_seconds()

    # -- events ------------------------------------------------------------------------------------------

    @property
    def events(self) -> list[EventBridgeEvent]:
        """Every EventBridge event emitted so far, oldest first (a copy)."""
        return list(self._events)

    def drain_events(self) -> list[EventBridgeEvent]:
        """Return the events emitted so far and forget them."""
        drained, self._events = self._events, []
        return drained

    def _record(self, event: EventBridgeEvent) -> None:
        self._events.append(event)
        if self.forward_to_eventbridge:
            _put_on_default_bus(event)

    # -- quotas ------------------------------------------------------------------------------------------

    def set_applied_quota(self, quota_name_or_instance_type: str, value: float) -> str:
        """Set the applied value of a SageMaker quota for this stand-in's account and region.

        Accepts a quota name ("ml.g5.xlarge for spot training job usage"), a quota code, or a bare
        instance type (→ its "for training job usage" quota). Returns the quota code.
        """
        definition = self.quotas.set_applied(self.account_id, self.region, quota_name_or_instance_type, value)
        return definition.code

    def clear_applied_quota(self, quota_name_or_instance_type: str) -> str:
        """Leave a SageMaker quota without an applied value, as in accounts that never had one: it is
        then absent from ListServiceQuotas and GetServiceQuota, and only AWS's default value is served
        (ListAWSDefaultServiceQuotas, GetAWSDefaultServiceQuota). Returns the quota code."""
        definition = self.quotas.clear_applied(self.account_id, self.region, quota_name_or_instance_type)
        return definition.code

    # -- inspection --------------------------------------------------------------------------------------

    def _tuning_job(self, tuning_job_name: str) -> SimTuningJob:
        for run in self.engine.tuning_runs.values():
            job = run.job
            if (
                job.hyper_parameter_tuning_job_name == tuning_job_name
                and run.store.account_id == self.account_id
                and run.store.region_name == self.region
            ):
                return job
        raise KeyError(f"no simulated tuning job named {tuning_job_name!r} in {self.account_id}/{self.region}")

    def training_jobs_of(self, tuning_job_name: str) -> list[str]:
        """Names of the training jobs the tuning job launched, in launch order."""
        return [trial.training_job_name for trial in self._tuning_job(tuning_job_name).trials]

    def trials_of(self, tuning_job_name: str) -> list[TrialInfo]:
        """Snapshots of the tuning job's trials (chosen instance type, tuned values, effective plan)."""
        infos = []
        for trial in self._tuning_job(tuning_job_name).trials:
            resource = trial.resource_config or {}
            infos.append(
                TrialInfo(
                    name=trial.training_job_name,
                    index=trial.trial_index or 0,
                    definition_name=trial.definition_name,
                    instance_type=resource.get("InstanceType"),
                    instance_count=resource.get("InstanceCount"),
                    tuned_hyperparameters=dict(trial.tuned_hyperparameters),
                    status=trial.training_job_status,
                    plan=trial.timeline.plan,
                )
            )
        return infos


def _put_on_default_bus(event: EventBridgeEvent) -> None:
    backend = events_backends[event["account"]][event["region"]]
    backend.put_events(
        [
            {
                "Source": event["source"],
                "DetailType": event["detail-type"],
                "Detail": json.dumps(event["detail"]),
                "Resources": event["resources"],
                "Time": datetime.strptime(event["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp(),
                "EventBusName": "default",
            }
        ]
    )
