"""What a simulation runs: who creates which job when, how trials behave, and how EventBridge retries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governor_client.amt import DefaultTrialBehaviour, TrialBehaviour


@dataclass(frozen=True)
class CreateTuningJob:
    """At ``at_s`` virtual seconds after the start, call CreateHyperParameterTuningJob(**request)."""

    at_s: float
    request: Mapping[str, Any]
    account: str | None = None
    """The account it is created in (None: the simulation's own); its events carry it (``simulation.places``)."""
    region: str | None = None
    """The region it is created in (None: the simulation's own)."""

    @property
    def name(self) -> str:
        return str(self.request["HyperParameterTuningJobName"])


@dataclass(frozen=True)
class CreateTrainingJob:
    """At ``at_s`` virtual seconds after the start, call CreateTrainingJob(**request) (a standalone job)."""

    at_s: float
    request: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.request["TrainingJobName"])


@dataclass(frozen=True)
class SubmitTuningJob:
    """At ``at_s`` virtual seconds, a session of the ``submitter`` role sends ``request`` to the governor's
    submission queue (docs/explanation/queue.md) with ``client_token``; the governor creates it when it fits."""

    at_s: float
    request: Mapping[str, Any]
    submitter: str
    client_token: str
    session: str = "simulated"
    fit_to_share: bool = False
    """The submitter's consent to be admitted with a lower MaxParallelTrainingJobs (message ``fit_to_share``)."""


@dataclass(frozen=True)
class TagTuningJob:
    """At ``at_s`` virtual seconds, its owner calls AddTags on the tuning job ``job`` (e.g. raising its
    budget tag); the stand-in emits the tag event CloudTrail would send."""

    at_s: float
    job: str
    tags: Mapping[str, str]


ScenarioAction = CreateTuningJob | CreateTrainingJob | SubmitTuningJob | TagTuningJob


@dataclass(frozen=True)
class Scenario:
    """Who creates which job when, and how the trials behave.

    ``failure_rate`` / ``spot_interruption_rate`` configure the stand-in's
    :class:`~governor_client.amt.DefaultTrialBehaviour` (seeded with the simulation's seed); ``behaviour``
    replaces it altogether. ``launch_delay_s``, ``finish_delay_s`` and ``warm_pool_reuse`` are the
    stand-in's timing knobs (see :class:`~governor_client.amt.AmtStandIn`).
    """

    actions: Sequence[ScenarioAction]
    failure_rate: float = 0.0
    spot_interruption_rate: float = 0.0
    launch_delay_s: float = 0.0
    finish_delay_s: float = 0.0
    warm_pool_reuse: bool = True
    behaviour: TrialBehaviour | None = None

    def trial_behaviour(self, seed: int) -> TrialBehaviour:
        if self.behaviour is not None:
            return self.behaviour
        return DefaultTrialBehaviour(
            seed=seed, failure_rate=self.failure_rate, spot_interruption_rate=self.spot_interruption_rate
        )

    @property
    def tuning_jobs(self) -> list[str]:
        return [a.name for a in self.actions if isinstance(a, CreateTuningJob)]

    @property
    def training_jobs(self) -> list[str]:
        return [a.name for a in self.actions if isinstance(a, CreateTrainingJob)]


@dataclass(frozen=True)
class RetryPolicy:
    """EventBridge's retries of a failed target invocation (template.yaml: 10 attempts, 3600 s)."""

    maximum_retry_attempts: int = 10
    maximum_event_age_s: float = 3600.0
    delay_s: float = 60.0
