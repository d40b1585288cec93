"""Use case: learn how long the account's stops take, from each job the governor stopped.

At a stopped job's finalisation its trials' TrainingEndTime, less the governor's stop
(``stop_requested_at``), give one observation per instance family of the job (the longest of its
trials'; ``domain.stop_latency``), kept once per job by the store. The budget rule's lead is read back
from them (``governance.job.stop_lead_update``).
"""

from __future__ import annotations

from collections.abc import Iterable

from tuning_governor.domain import stop_latency
from tuning_governor.domain.job import JobState
from tuning_governor.models.tuning_job import TrialSummary
from tuning_governor.observability import logger
from tuning_governor.ports import PriceStore


def learn_stop_latency(state: JobState | None, trials: Iterable[TrialSummary], store: PriceStore) -> float | None:
    """Record the stop latency a job the governor stopped shows (None: not one, or nothing to learn)."""
    if state is None or state.stop_requested_at is None:
        return None
    stopped = [t.training_end_time for t in trials if t.training_job_status == "Stopped"]
    seconds = stop_latency.observed_latency(state.stop_requested_at, stopped)
    if seconds is None:
        return None
    for family in sorted({stop_latency.instance_family(t) for t in state.demand}):
        if store.record_stop_latency(family, state.key, seconds, state.stop_requested_at):
            logger.info("stop latency observed", extra={"job": state.key, "family": family, "seconds": seconds})
    return seconds
