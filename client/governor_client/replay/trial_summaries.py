"""The trial summaries the replay's SageMaker lists (ListTrainingJobsForHyperParameterTuningJob), made from
the trials' latest events (see :class:`governor_client.replay.sagemaker.EventSourcedSageMaker`).

The governor lists a job's trials again at every sweep that finds its counts out of step and at its end;
a trial's summary only changes with its own latest event, its tuning job's, or the tuned hyperparameter
names its tuning job's events named, so :class:`TrialSummaries` makes each summary once per such state.
"""

from __future__ import annotations

from collections.abc import Set

from tuning_governor.domain.trial_record import OBJECTIVE_HYPERPARAMETER
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import ObjectiveMetric, TrialSummary, TuningJob


def trial_summary(trial: TrainingJob, tuning: TuningJob | None, key: str, ranges: Set[str]) -> TrialSummary:
    """The summary of ``trial`` of tuning job ``key`` (``tuning``: its latest state, None if only its trials
    were seen; ``ranges``: the tuned hyperparameters' names, empty if none is known)."""
    if ranges:
        tuned = {k: v for k, v in trial.hyper_parameters.items() if k in ranges}
    else:
        static = {k for d in (tuning.definitions() if tuning else []) for k in d.static_hyper_parameters}
        tuned = {k: v for k, v in trial.hyper_parameters.items() if k not in static and not k.startswith("_")}
    objective = tuning.objective if tuning else None
    name = trial.hyper_parameters.get(OBJECTIVE_HYPERPARAMETER, "").strip('"') or (
        objective.metric_name if objective else None
    )
    value = trial.metric(name) if name else None
    metric = None
    if name is not None and value is not None:
        metric = ObjectiveMetric(type=objective.type if objective else None, metric_name=name, value=value)
    if metric is not None:
        objective_status = "Succeeded"
    elif trial.status in TUNING_TERMINAL:
        objective_status = "Failed"
    else:
        objective_status = "Pending"
    return TrialSummary(
        training_job_name=trial.name,
        training_job_arn=trial.arn,
        tuning_job_name=tuning.name if tuning else key,
        creation_time=trial.creation_time,
        training_start_time=trial.training_start_time,
        training_end_time=trial.training_end_time,
        training_job_status=trial.status,
        tuned_hyper_parameters=tuned,
        failure_reason=trial.failure_reason,
        final_hyper_parameter_tuning_job_objective_metric=metric,
        objective_status=objective_status,
    )


class TrialSummaries:
    """The summaries made so far, per tuning job key and trial name, with the states they were made from:
    one is made again when its trial's or its tuning job's latest state is another object (the replay's
    SageMaker keeps each latest state until a later event replaces it) or the tuned names changed."""

    def __init__(self) -> None:
        self._made: dict[str, dict[str, tuple[TrainingJob, TuningJob | None, frozenset[str], TrialSummary]]] = {}

    def of(self, key: str, trial: TrainingJob, tuning: TuningJob | None, ranges: Set[str]) -> TrialSummary:
        made = self._made.setdefault(key, {})
        known = made.get(trial.name)
        if known is not None and known[0] is trial and known[1] is tuning and known[2] == ranges:
            return known[3]
        summary = trial_summary(trial, tuning, key, ranges)
        made[trial.name] = (trial, tuning, frozenset(ranges), summary)
        return summary

    def forget(self, key: str) -> None:
        """Drop tuning job ``key``'s summaries (a job the replay forgets)."""
        self._made.pop(key, None)
