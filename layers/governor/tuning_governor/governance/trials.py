"""A finished trial recorded once, with the job's stagnation state advanced in the same transaction."""

from __future__ import annotations

from tuning_governor.domain.job import JobState, job_state, trial_objective
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.domain.stagnation import StagnationState
from tuning_governor.domain.totals import job_after_trial
from tuning_governor.errors import StaleState
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.job import job_facts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.models.records import TrialRecord
from tuning_governor.models.training_job import TrainingJob

STALE_ATTEMPTS = 5


def _advanced(job: JobState | None, record: TrialRecord, trial: TrainingJob) -> StagnationState | None:
    if record.status != "Completed":
        return None
    objective = trial_objective(job, trial)
    value = trial.metric(objective.metric) if objective is not None else None
    if objective is None or value is None:
        return None  # no objective value, or no direction to judge it by: not counted either way
    current = (job.stagnation if job is not None else None) or StagnationState()
    return current.advance(value, objective, record.end_time or record.event_time)


def _with_spend_at_improvement(
    state: StagnationState | None,
    job: JobState | None,
    record: TrialRecord,
    services: EngineServices,
    catalog: PriceCatalog | None,
) -> StagnationState | None:
    """At an improvement, the job's spend then: finished (this trial included) + accrued at its event."""
    if state is None or state.improved_at is None or state.spent_at_improvement is not None:
        return state
    policy = services.policy()
    after = job_after_trial(job.item if job is not None else None, record)
    facts = job_facts(after, now=record.event_time, policy=policy, catalog=catalog or services.price_catalog(policy))
    return state.model_copy(update={"spent_at_improvement": facts.spent_usd})


def record_trial(
    record: TrialRecord,
    trial: TrainingJob,
    job: JobState | None,
    *,
    team: str | None,
    services: EngineServices,
    catalog: PriceCatalog | None = None,
) -> JobState | None:
    """Record a finished trial once and advance the job's stagnation state in the same transaction:
    the best objective, trials / time since it last improved and, at an improvement, the job's spend
    then (finished + accrued at the trial's event, priced with ``catalog``, by default the policy's).

    Returns the job as this write left it (``job`` with the trial applied), for judging the job
    without reading it again; None for a duplicate. Reads no trial records: the state is on the job
    item (``job``, already read by the caller). When a concurrent trial of the same job wrote first,
    the item is read again and the trial re-applied.
    """
    for attempt in range(STALE_ATTEMPTS):
        state = _with_spend_at_improvement(_advanced(job, record, trial), job, record, services, catalog)
        known_end = job.last_trial_end if job is not None else None
        later = record.end_time is not None and (known_end is None or record.end_time > known_end)
        try:
            written = services.store.record_trial(
                record,
                job=job.item if job is not None else None,
                team=team,
                stagnation=state.to_item() if state is not None else None,
                latest_end=record.end_time if later else None,
            )
        except StaleState:
            if attempt == STALE_ATTEMPTS - 1:
                raise
            job = job_state(services.store.get_job(record.job_key))
            continue
        return job_state(written)
    raise AssertionError("unreachable")  # pragma: no cover


def with_stagnation_spend(facts: JobFacts, services: EngineServices) -> JobFacts:
    """Fill in the spend at the last improvement when the job's state lacks it (a state recorded
    before the trial's own transaction carried it): the first judgement after the improvement
    stores ``spent_usd`` then; a later trial that advanced the state first wins.
    """
    state = facts.stagnation
    if state is None or state.improved_at is None or state.spent_at_improvement is not None:
        return facts
    if facts.spent_usd is None:
        return facts  # unpriced: dollars since the improvement cannot be judged
    services.store.set_stagnation_spend(facts.job_key, state.trials_seen, facts.spent_usd)
    return facts.model_copy(update={"stagnation": state.model_copy(update={"spent_at_improvement": facts.spent_usd})})
