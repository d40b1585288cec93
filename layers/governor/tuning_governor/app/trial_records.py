"""A finished trial as the governor records it (built in ``domain.trial_record``, so governance can
record trials SageMaker lists whose events were lost); kept here for the callers that import it."""

from __future__ import annotations

from tuning_governor.domain.trial_record import OBJECTIVE_HYPERPARAMETER, build_trial_record

__all__ = ["OBJECTIVE_HYPERPARAMETER", "build_trial_record"]
