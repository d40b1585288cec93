"""A finished trial recorded once, with the job's stagnation state advanced in the same transaction.

The stagnation state is the one the trials give in order of their end (TrainingEndTime, then name),
whatever order their events are handled in: a trial that ended before one already recorded is folded in
by replaying the job's recorded trials in that order (one Query of them, only then), and a duplicate is
never counted (the trial's write is conditional). Trials SageMaker lists as finished but whose events
were lost are recorded here too (:func:`record_listed_trials`: the finaliser, the sweep, a judgement
about to stop), through the same write as a trial event.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain import spend
from tuning_governor.domain.job import JobState, job_state, trial_objective
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.domain.stagnation import StagnationState, replayed_stagnation
from tuning_governor.domain.totals import job_after_trial
from tuning_governor.domain.trial_record import build_trial_record
from tuning_governor.errors import StaleState
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.job import job_facts
from tuning_governor.governance.ports import EngineServices
from tuning_governor.models.records import TrialRecord
from tuning_governor.models.sagemaker import TRAINING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TrialSummary, TuningJob
from tuning_governor.observability import metrics
from tuning_governor.policy.rules.progress import STAGNATION

if TYPE_CHECKING:
    from tuning_governor.ports.uses import TrialsStore

STALE_ATTEMPTS = 5


def _ended(record: TrialRecord) -> datetime:
    return record.end_time or record.event_time


def _out_of_order(job: JobState | None, record: TrialRecord) -> bool:
    """The trial ended at or before a trial already recorded: folding it in last would count it in the
    wrong order (ties are ordered by name, which the state does not keep, so they are replayed too)."""
    return job is not None and job.last_trial_end is not None and _ended(record) <= job.last_trial_end


def spend_at(at: datetime, records: Iterable[TrialRecord], job: JobState, catalog: PriceCatalog) -> Decimal | None:
    """The job's spend at ``at`` as a trial event then would have judged it: the trials finished by then
    (billed) plus what the trials running then had accrued. None while any of them is unpriced."""
    records = list(records)
    recorded = {record.training_job_name.lower() for record in records}
    finished = Decimal(0)
    running = [trial for trial in job.running if trial.start <= at and trial.trial not in recorded]
    for record in records:
        if record.end_time is not None and record.end_time <= at:
            if record.cost_usd is None:
                return None
            finished += record.cost_usd
        elif record.start_time is not None and record.start_time <= at:
            running.append(
                spend.RunningTrial(
                    job_key=job.key,
                    trial=record.training_job_name.lower(),
                    start=record.start_time,
                    instances=record.instances,
                    spot=record.spot,
                    region=record.region,
                )
            )
    accrued = spend.accrue(running, at, catalog, default_region=job.region, spot_discount=job.spot_discount)
    return finished + accrued.usd if accrued.usd is not None else None


def _stagnation_watched(services: EngineServices[TrialsStore]) -> bool:
    """The policy sets a stagnation limit: only then is the order of trials worth a Query of the job's
    records (the best objective, all that is read without the rule, does not depend on the order)."""
    return STAGNATION.switched_on(services.policy().defaults)


def _replayed(
    job: JobState, record: TrialRecord, services: EngineServices[TrialsStore], catalog: PriceCatalog | None
) -> StagnationState | None:
    """The state the job's trials give in order of their end, this one included (one Query)."""
    records = {r.training_job_name.lower(): r for r in services.store.trial_records(job.key)}
    records.setdefault(record.training_job_name.lower(), record)
    states = [state for state, _ in replayed_stagnation(job.objectives, list(records.values()))]
    if not states:
        return None
    state, current = states[-1], job.stagnation
    if current is not None and (current.improved_at, current.bests) == (state.improved_at, state.bests):
        return state.model_copy(update={"spent_at_improvement": current.spent_at_improvement})
    if state.improved_at is None:
        return state
    catalog = catalog or services.price_catalog(services.policy())
    return state.model_copy(
        update={"spent_at_improvement": spend_at(state.improved_at, records.values(), job, catalog)}
    )


def _advanced(
    job: JobState | None,
    record: TrialRecord,
    trial: TrainingJob,
    services: EngineServices[TrialsStore],
    catalog: PriceCatalog | None,
) -> StagnationState | None:
    if record.status != "Completed":
        return None
    objective = trial_objective(job, trial)
    value = trial.metric(objective.metric) if objective is not None else None
    if objective is None or value is None:
        return None  # no objective value, or no direction to judge it by: not counted either way
    if job is not None and _out_of_order(job, record) and _stagnation_watched(services):
        return _replayed(job, record, services, catalog)
    current = (job.stagnation if job is not None else None) or StagnationState()
    state = current.advance(value, objective, _ended(record))
    return _with_spend_at_improvement(state, job, record, services, catalog)


def _with_spend_at_improvement(
    state: StagnationState | None,
    job: JobState | None,
    record: TrialRecord,
    services: EngineServices[TrialsStore],
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
    services: EngineServices[TrialsStore],
    catalog: PriceCatalog | None = None,
) -> JobState | None:
    """Record a finished trial once and advance the job's stagnation state in the same transaction:
    the best objective, trials / time since it last improved and, at an improvement, the job's spend
    then (finished + accrued at the trial's event, priced with ``catalog``, by default the policy's).

    Returns the job as this write left it (``job`` with the trial applied), for judging the job
    without reading it again; None for a duplicate. The state is on the job item (``job``, already read
    by the caller): no trial record is read, except for a trial that ended before one already recorded,
    whose state is replayed from the job's records in end-time order. When a concurrent trial of the
    same job wrote first, the item is read again and the trial re-applied.
    """
    for attempt in range(STALE_ATTEMPTS):
        state = _advanced(job, record, trial, services, catalog)
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


def missing_trials(trials: list[TrialSummary], records: list[TrialRecord]) -> list[TrialSummary]:
    """The trials SageMaker lists as finished that have no trial record, in order of their end."""
    recorded = {r.training_job_name.lower() for r in records}
    latest = datetime.max.replace(tzinfo=UTC)
    return sorted(
        (
            t
            for t in trials
            if t.training_job_status in TRAINING_TERMINAL and t.training_job_name.lower() not in recorded
        ),
        key=lambda t: (t.training_end_time or latest, t.training_job_name),
    )


def record_listed_trials(
    job: TuningJob,
    trials: list[TrialSummary],
    records: list[TrialRecord],
    state: JobState | None,
    *,
    region: str,
    services: EngineServices[TrialsStore],
    source: str = "finaliser",
) -> list[str]:
    """Record the trials SageMaker lists as finished that have no trial record (their event was lost or
    is still on its way): one DescribeTrainingJob each, through the same conditional write as a trial
    event, so a late real event of the same trial is a duplicate. In order of their end, as events would
    have come. ``state`` is the job as read (None: no item yet); each trial recorded carries it forward
    as written, so no trial reads it again. Returns the trials recorded; a trial Describe does not show
    finished yet is left out. ``source`` names the caller in each record's event id and in the metric."""
    missing = missing_trials(trials, records)
    if not missing:
        return []
    policy = services.policy()
    catalog = services.price_catalog(policy)
    added: list[str] = []
    for trial in missing:
        described = services.sagemaker_for(job.place).describe_training_job(trial.training_job_name)
        if described.status not in TRAINING_TERMINAL or described.tuning_job_key != job.key:
            continue
        team = (state.team if state is not None else None) or policy.team_of(job.tags, job.role_arns())
        if described.place is None:  # warm pools are kept (by name) for the home place's capacity only
            services.store.set_warm_pool(described, team=team)
        objective = trial_objective(state, described)
        record = build_trial_record(
            described,
            job_key=job.key,
            region=region,
            objective_name=objective.metric if objective else (state.objective_name if state is not None else None),
            catalog=catalog,
            event_id=f"{source}:{described.name}",
            event_time=described.training_end_time or services.clock(),
        )
        written = record_trial(record, described, state, team=team, services=services, catalog=catalog)
        if written is not None:
            state = written
            added.append(described.name)
            name = "TrialsRecoveredAtFinalise" if source == "finaliser" else "TrialsRecoveredWhileRunning"
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
    return added


def with_stagnation_spend(facts: JobFacts, services: EngineServices[TrialsStore]) -> JobFacts:
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
