"""Which tuning jobs a replay may forget before its end, so that its memory does not grow with the log.

A replay of a file or a capture folder can read its events twice. The first reading
(:func:`last_lines`) finds, for each tuning job, the last line that names it: one of its own events,
or one of its trials' (by ``TuningJobArn``). Once that line has been processed, no later event
touches the job; only the sweep and the budget checks could. :func:`settled` says when they no longer
can. Then the job's result is taken, and its items and its SageMaker state are dropped:

* SageMaker: the job and every one of its trials are terminal, and no trial keeps a warm pool;
* the governor's table: the job's summary is final and its META item terminal; nothing is left to
  finish: no ``GAPS`` item, no pending decision, no report still being sent, no running trial in its
  team's spend, no reservation in the capacity ledger, no warm pool held by one of its trials;
* no budget check is scheduled for it.

The replay asks at the job's last line, and again after every sweep and budget check while it has
not settled. A job that never settles (the log ends while it runs, or a report gap only a sweep would
close with ``--sweep-every 0``) is kept to the end, as before. A replay that
reads its events once (``replay_lines`` without ``reread``) forgets nothing; standard input is copied
to a temporary file first, so that it can be read twice. tests/integration/replay checks that a replay
that forgets gives the same result as one that does not.
"""

from __future__ import annotations

from functools import cached_property
from typing import Protocol

from tuning_governor.adapters.checks import PendingChecks
from tuning_governor.adapters.store import job_partition
from tuning_governor.models.sagemaker import TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.ports import Store


class JobHistory(Protocol):
    """What :func:`settled` reads of the replay's SageMaker (``EventSourcedSageMaker``)."""

    def tuning_job(self, key: str) -> TuningJob | None: ...

    def trials_of(self, key: str) -> list[TrainingJob]: ...


class Holders:
    """The jobs the capacity ledger reserves for and the trials keeping warm pools, read on first use:
    once for every job asked about in one pass (forgetting a job changes neither)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @cached_property
    def reserved(self) -> frozenset[str]:
        return frozenset(self._store.read_ledger().reservations)

    @cached_property
    def pools(self) -> frozenset[str]:
        return frozenset(name.lower() for name in self._store.warm_pool_names())


def settled(key: str, history: JobHistory, store: Store, checks: PendingChecks, holders: Holders | None = None) -> bool:
    """Whether nothing the sweep or a budget check could do would change tuning job ``key`` any more."""
    trials = _ended_trials(key, history, checks)
    return trials is not None and _table_settled(key, store, trials, holders or Holders(store))


def _ended_trials(key: str, history: JobHistory, checks: PendingChecks) -> list[TrainingJob] | None:
    """The job's trials if SageMaker's side has settled (the job and every trial terminal, no warm pool
    kept, no budget check scheduled); None if not."""
    job = history.tuning_job(key)
    if job is None or job.status not in TUNING_TERMINAL or key in checks.pending:
        return None
    trials = history.trials_of(key)
    for trial in trials:
        pool = trial.warm_pool_status
        if trial.status not in TRAINING_TERMINAL or (pool is not None and pool.status == "Available"):
            return None
    return trials


def _table_settled(key: str, store: Store, trials: list[TrainingJob], holders: Holders) -> bool:
    """Whether the governor's table has nothing left to finish for the job (see the module docstring)."""
    meta, _, decisions = job_partition(items := store.items(key))
    if meta is None or meta.get("status") not in TUNING_TERMINAL or not any(i.get("sk") == "SUMMARY" for i in items):
        return False  # no final summary yet (its item is the one ``Store.get_summary`` reads)
    for item in items:
        sk = str(item.get("sk", ""))
        if sk == "GAPS" or (sk.startswith("DELIVERY#") and item.get("state") != "sent"):
            return False
    if any(decision.get("state") == "pending" for decision in decisions):
        return False
    team = meta.get("team")
    if team and any(running.job_key == key for running in store.team_running(str(team))):
        return False
    if key in holders.reserved:
        return False
    return not {trial.name.lower() for trial in trials} & holders.pools
