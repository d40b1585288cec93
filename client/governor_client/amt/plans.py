"""What a single trial (training job) does if nobody interferes with it: the plan and who makes it.

The stand-in asks a :class:`TrialBehaviour` for a :class:`TrialPlan` when a training job is created; the
tuner-side decisions (Hyperband / median early stopping, user stops, MaxRuntime) are applied on top of
that plan by the engine. Keeping the two apart lets later simulators inject failures, spot interruptions
or scripted objective values without touching the state machine.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

TrialOutcome = Literal["Completed", "Failed"]
#: The secondary status a failed job is in when it fails. ``Starting``: the instances never became ready
#: (nothing is billed, no TrainingStartTime); ``Downloading``: input data could not be read (seconds of
#: billing); ``Training``: the algorithm failed part-way (billed up to the failure).
FailurePhase = Literal["Starting", "Downloading", "Training"]

#: Maps the fraction of the full training budget done (0..1) to the objective value reported at that point.
ObjectiveCurve = Callable[[float], float]


@dataclass(frozen=True)
class TrialPlan:
    """The natural course of one training job.

    Attributes (callers may rely on these meanings):
        duration_s: seconds of the *Training* secondary phase for a full run (start-up, download and upload
            come on top). For ``outcome="Failed"`` the seconds of training before the failure.
        objective_value: objective metric reported at the end of a full run; ``None`` = the job never emits it.
        outcome: ``"Completed"`` or ``"Failed"``.
        failure_reason: ``FailureReason`` of a failed job.
        spot_interrupted_s: seconds the job spends ``Interrupted`` (only for managed spot jobs; wall-clock
            time that is not billed).
        early_stop_at_s: if set, the job is stopped this many seconds into training (status ``Stopped``);
            the engine's own early-stopping policies only act when this is ``None``.
        spot_savings_fraction: share of the on-demand billable time saved by managed spot
            (``BillableTimeInSeconds = (training - interrupted) * (1 - fraction)``; on-demand jobs ignore it).
        objective_curve: objective value at a fraction of the budget, used when a job ends early; ``None``
            means "report ``objective_value`` whenever the job stops".
        failure_phase: for ``outcome="Failed"``, the secondary status in which the job fails (see
            :data:`FailurePhase`); ``duration_s`` counts only for ``"Training"``.
        startup_s, download_s, upload_s: seconds of ``Starting`` (creation to TrainingStartTime),
            ``Downloading`` and ``Uploading`` when the plan fixes them (a calibrated workload); ``None``
            lets :func:`~governor_client.amt.layout.build_timeline` draw them.
    """

    duration_s: float
    objective_value: float | None
    outcome: TrialOutcome = "Completed"
    failure_reason: str | None = None
    spot_interrupted_s: float = 0.0
    early_stop_at_s: float | None = None
    spot_savings_fraction: float = 0.0
    objective_curve: ObjectiveCurve | None = field(default=None, compare=False, repr=False)
    failure_phase: FailurePhase = "Training"
    startup_s: float | None = None
    download_s: float | None = None
    upload_s: float | None = None

    def objective_at(self, fraction: float) -> float | None:
        """The objective the job reports after ``fraction`` of its full training budget (None: no metric)."""
        if self.objective_value is None:
            return None
        if fraction >= 1.0 or self.objective_curve is None:
            return self.objective_value
        return self.objective_curve(max(0.0, fraction))

    def stopped_early_at(self, seconds: float) -> TrialPlan:
        """A copy of this plan that the tuner stops ``seconds`` into training."""
        return replace(self, early_stop_at_s=seconds)


class TrialBehaviour(Protocol):
    """Decides how a training job would run on its own.

    ``tuning_job_config`` is the tuning job's ``HyperParameterTuningJobConfig`` (``None`` for a standalone
    ``CreateTrainingJob``); ``definition`` is the training job definition with the trial's effective
    ``ResourceConfig`` (for a standalone job: the CreateTrainingJob request); ``hyperparameters`` are the
    job's full hyperparameters (static and tuned, as strings). Implementations must draw randomness only
    from ``rng`` so a seed reproduces a run.
    """

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> TrialPlan: ...


def objective_of(tuning_job_config: Mapping[str, Any] | None, definition: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(MetricName, Type)`` of the objective a trial reports, or ``None`` when there is none.

    A definition's ``TuningObjective`` wins over the tuning job's objective (multi-definition jobs); a
    standalone job reports its first ``AlgorithmSpecification.MetricDefinitions`` entry as a Maximize metric.
    """
    objective = definition.get("TuningObjective") or (tuning_job_config or {}).get("HyperParameterTuningJobObjective")
    if objective and objective.get("MetricName"):
        return str(objective["MetricName"]), str(objective.get("Type", "Maximize"))
    metric_definitions = (definition.get("AlgorithmSpecification") or {}).get("MetricDefinitions") or []
    if metric_definitions:
        return str(metric_definitions[0]["Name"]), "Maximize"
    return None


def parameter_ranges_of(
    tuning_job_config: Mapping[str, Any] | None, definition: Mapping[str, Any]
) -> Mapping[str, Any]:
    """The ranges tuned for this definition (a definition's own ranges win, as in multi-definition jobs)."""
    return definition.get("HyperParameterRanges") or (tuning_job_config or {}).get("ParameterRanges") or {}
