"""Use case: a finished tuning job summarised, its missing trials recorded, its summary reported
(once per channel, held back while trials are missing, corrected once if its cost moves)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.adapters.store.keys import job_partition
from tuning_governor.app.stop_latencies import learn_stop_latency
from tuning_governor.breakdowns import account_spent, team_spent
from tuning_governor.domain.job import JobState, job_state
from tuning_governor.domain.reports import corrected_report, summary_report
from tuning_governor.domain.summary import summarise
from tuning_governor.errors import TransientError
from tuning_governor.governance.engine import judge_ended
from tuning_governor.governance.reporting import all_delivered, deliver
from tuning_governor.governance.trials import record_listed_trials
from tuning_governor.models.place import Place, name_in_key, place_in_key
from tuning_governor.models.records import JobSummary, TrialRecord
from tuning_governor.models.sagemaker import TUNING_TERMINAL
from tuning_governor.models.tuning_job import TrialSummary, TuningJob
from tuning_governor.observability import metrics
from tuning_governor.policy.routing import owner_handles

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import GoverningStore

#: How long after its tuning job ended a summary report waits for trials SageMaker lists as finished
#: but the governor could not record yet (judged by the sweep); then it goes out naming them.
REPORT_GRACE = timedelta(minutes=30)


#: A summary whose cost moves by more than this after its report went out is reported again, once.
CORRECTION_THRESHOLD = Decimal("0.01")


#: How long after its job ended the sweep keeps trying to record a summary's missing trials.
GAPS_GIVE_UP = timedelta(days=1)


def record_missing_trials(
    job: TuningJob,
    trials: list[TrialSummary],
    records: list[TrialRecord],
    state: JobState | None,
    *,
    region: str,
    services: AppServices[GoverningStore],
) -> list[str]:
    """Record the trials SageMaker lists as finished that have no trial record (their event was lost or
    is still on its way): see :func:`tuning_governor.governance.trials.record_listed_trials`."""
    return record_listed_trials(job, trials, records, state, region=region, services=services)


@dataclass(frozen=True)
class Finalised:
    """A finalisation: the summary stored, the job as described, the trials it recorded itself, and
    the job item and decision rows as read (after any trial it recorded and decision it made)."""

    summary: JobSummary
    job: TuningJob
    recovered: list[str]
    late_decisions: list[dict[str, Any]]
    state: JobState | None
    decisions: list[dict[str, Any]]


def read_job(
    job_key: str, services: AppServices[GoverningStore]
) -> tuple[JobState | None, list[TrialRecord], list[dict[str, Any]]]:
    """The job, its trial records and its decision rows, in one consistent read of its partition."""
    meta, trials, decisions = job_partition(services.store.items(job_key))
    return job_state(meta or None), [TrialRecord.model_validate(item) for item in trials], decisions


def finalise_job(
    job_name: str,
    *,
    region: str,
    event_tags: dict[str, str],
    services: AppServices[GoverningStore],
    judge: bool = False,
    place: Place | None = None,
) -> Finalised:
    """Summarise a finished job and store it: 1 Describe + ceil(trials / 100) List calls, plus one
    DescribeTrainingJob per trial listed as finished but not recorded (recorded now, see
    :func:`record_missing_trials`). Trials recorded here, or ``judge``, or a late decision left pending
    make the trial rules judge the ended job (:func:`judge_ended`). Idempotent. Asked in ``place``."""
    sagemaker = services.sagemaker_for(place)
    described = sagemaker.describe_tuning_job(job_name)
    if described.status not in TUNING_TERMINAL:
        raise TransientError(f"DescribeHyperParameterTuningJob still says {described.status}")
    state, records, decisions = read_job(described.key, services)
    tags = event_tags or (dict(state.tags) if state is not None else {})
    job = described.model_copy(update={"tags": tags})
    trials = sagemaker.list_trials(job.name)
    recovered = record_missing_trials(job, trials, records, state, region=region, services=services)
    if recovered:
        state, records, decisions = read_job(job.key, services)
    summary = summarise(
        job,
        trials,
        records,
        region=region,
        team=(state.team if state is not None else None) or services.policy().team_of(tags, job.role_arns()),
        owner_tag=services.settings.owner_tag,
        now=services.clock(),
        stop_requested_at=state.stop_requested_at if state is not None else None,
        stopping_at=state.stopping_at if state is not None else None,
    )
    services.store.write_summary(summary)
    learn_stop_latency(state, trials, services.store)
    leftover = [trial.trial for trial in state.running] if state is not None else []
    if leftover and state is not None:
        # Trials whose terminal event never came: the job has ended, so they accrue no more.
        team = state.team or services.policy().team_of(tags, job.role_arns())
        services.store.forget_running(job.key, leftover, team=team)
    late: list[dict[str, Any]] = []
    pending = recovered or judge or any(d.get("state") == "pending" for d in decisions)
    if pending:
        late = judge_ended(job.key, job.end_time or services.clock(), services)
        decisions = services.store.decisions(job.key)
    return Finalised(
        summary=summary, job=job, recovered=recovered, late_decisions=late, state=state, decisions=decisions
    )


def finalise(
    job_name: str,
    *,
    region: str,
    event_tags: dict[str, str],
    services: AppServices[GoverningStore],
    place: Place | None = None,
) -> JobSummary:
    """Summarise a finished job and store it (see :func:`finalise_job`); nothing is reported."""
    return finalise_job(job_name, region=region, event_tags=event_tags, services=services, place=place).summary


def decision_lines(decisions: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """A job's finished decisions as a summary report lists them: (rule, verdict, action)."""
    return sorted(
        (str(d.get("rule")), str(d.get("verdict")), str(d.get("action"))) for d in decisions if d.get("state") == "done"
    )


def report_summary(done: Finalised, services: AppServices[GoverningStore]) -> dict[str, str]:
    """Report a finalised job's summary, once per channel, when it is complete; or, when trials listed
    as finished are still unrecorded, once :data:`REPORT_GRACE` after the job ended (the sweep judges
    that), naming them. A summary whose cost has moved by more than :data:`CORRECTION_THRESHOLD` since
    its report went out gets one ``summary-corrected`` report (once per channel).

    Returns the delivery result per channel (``waiting-for-trials`` while the report is held back).
    A job keeps a ``GAPS`` item, for the sweep, while trials are unrecorded or its first report is not
    yet out on every channel (a channel still ``in-flight``: another attempt's claim, taken again
    once stale); the item is written before the report is sent, so an invocation that fails for good
    in between still leaves the sweep something to finish. Both give up :data:`GAPS_GIVE_UP` after the
    job ended.
    """
    summary, store, now = done.summary, services.store, services.clock()
    ended = done.job.end_time or now
    gaps = summary.unaccounted_trials
    # As read by the finalisation: only set_summary_reported writes these, and only below.
    reported_at = done.state.summary_reported_at if done.state is not None else None
    followed = (bool(gaps) or reported_at is None) and now - ended < GAPS_GIVE_UP
    if followed:
        store.mark_gaps(summary.job_key, job_name=summary.job_name, region=summary.region, ended_at=ended, missing=gaps)
    else:
        store.clear_gaps(summary.job_key)
    if reported_at is None and gaps and now - ended < REPORT_GRACE:
        metrics.add_metric(name="SummariesWaitingForTrials", unit=MetricUnit.Count, value=1)
        return {notifier.channel: "waiting-for-trials" for notifier in services.notifiers}
    decisions = decision_lines(done.decisions)
    policy = services.policy()
    handles = owner_handles(policy, summary.owner)
    report = summary_report(summary, decisions, handles=handles)
    channels = deliver(report, store, services.notifiers_for(report, policy), services.clock)
    if reported_at is None:
        if all_delivered(channels):
            store.set_summary_reported(summary.job_key, summary.cost.priced_cost_usd, now)
            team_spent(summary.team, summary.cost.priced_cost_usd)  # once per job: the dashboard's spend by team
            _account_spent(summary.job_key, summary.region, summary.cost.priced_cost_usd, services)
            if followed and not gaps:
                store.clear_gaps(summary.job_key)  # written above for this report only
        return channels
    reported = done.state.summary_reported_usd if done.state is not None else Decimal(0)
    if abs(summary.cost.priced_cost_usd - reported) > CORRECTION_THRESHOLD:
        correction = corrected_report(summary, reported, decisions, handles=handles)
        corrected = deliver(correction, store, services.notifiers_for(correction, policy), services.clock)
        channels |= {f"{channel}-corrected": result for channel, result in corrected.items()}
        metrics.add_metric(name="SummariesCorrected", unit=MetricUnit.Count, value=1)
    return channels


def refinalise(
    job_key: str, job: JobState | None, *, region: str, services: AppServices[GoverningStore], judge: bool = False
) -> JobSummary:
    """Recompute a finalised job's summary after late trial data (``judge``: a trial was recorded, so
    the trial rules judge the ended job), then report it if it was waiting for this trial, or correct
    its report once if the cost moved."""
    done = finalise_job(
        job.name if job is not None else name_in_key(job_key),
        region=region,
        event_tags=dict(job.tags) if job is not None else {},
        services=services,
        judge=judge,
        place=place_in_key(job_key),
    )
    report_summary(done, services)
    return done.summary


def finalise_and_report(
    job_name: str,
    *,
    region: str,
    tags: dict[str, str],
    services: AppServices[GoverningStore],
    place: Place | None = None,
) -> tuple[JobSummary, dict[str, str]]:
    """Finalise, then report the summary once per channel (the tuning handler and the sweep share this);
    see :func:`report_summary` for when it is held back or corrected."""
    done, channels = finalise_reported(job_name, region=region, tags=tags, services=services, place=place)
    return done.summary, channels


def finalise_reported(
    job_name: str,
    *,
    region: str,
    tags: dict[str, str],
    services: AppServices[GoverningStore],
    place: Place | None = None,
) -> tuple[Finalised, dict[str, str]]:
    """:func:`finalise_and_report`, returning the finalisation itself (the job as described: its end)."""
    done = finalise_job(job_name, region=region, event_tags=tags, services=services, place=place)
    metrics.add_metric(name="JobsFinalised", unit=MetricUnit.Count, value=1)
    return done, report_summary(done, services)


def _account_spent(job_key: str, region: str, usd: Decimal, services: AppServices[GoverningStore]) -> None:
    """The job's cost on its account and region (its key's; a plain key: the home place's, when known)."""
    place = place_in_key(job_key) or services.home
    if place is not None:
        account_spent(place.account, region, usd)
