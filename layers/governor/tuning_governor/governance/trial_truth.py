"""Running trials reconciled with SageMaker's truth, not the table's belief (issue 17, mechanisms 4-6).

A trial's terminal event that never arrives leaves a phantom on the job item: a running entry that
accrues cost until the trial's runtime limit and holds capacity in the ledger's re-count, and an outcome
(a best objective, a failure) missing from the stagnation state and the failed-trial count. Only the
trial's own event or the job's finalisation cleared it. :func:`reconcile_trials` compares the table with
SageMaker and repairs it:

1. DescribeHyperParameterTuningJob (1 call): its ``TrainingJobStatusCounters`` (Completed, InProgress,
   RetryableError, NonRetryableError, Stopped) against the job item: the finished trials SageMaker counts
   (all but InProgress) against ``trials_recorded``, its InProgress count against the running entries;
2. only where they differ, ListTrainingJobsForHyperParameterTuningJob (ceil(trials / 100) calls, 100 per
   page, the API's maximum) and one Query of the job's trial records, then one DescribeTrainingJob per
   trial listed as finished without a record (``governance.trials.record_listed_trials``: the same
   conditional write as its event, so the event arriving later is a duplicate; recording it removes its
   running entry), and running entries of trials listed as ended that are recorded are forgotten;
3. trials SageMaker lists as running (InProgress or Stopping, past their TrainingStartTime) that have no
   running entry (their progress events are late, maybe by hours) are tracked from the listing: their
   TrainingStartTime, and their definition's instances, spot flag and StoppingCondition, so the budgets
   accrue what SageMaker bills; a DescribeTrainingJob each only where the definition leaves the
   instances open (several InstanceConfigs). Their late event then finds the entry and writes nothing.

Who calls it: the sweep, for every running job whose rules read its trials (:func:`trial_rules`: those
whose spec says ``reads_trials``, e.g. the job budget and the team month, which accrue running trials;
stagnation; the failed-trial cap) or whose
running entries the capacity ledger re-counts; and a judgement about to stop a job on one of those rules
(:func:`before_stop`), which judges again on the truth before it stops. Pure governance: SageMaker and
the store through the engine's ports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tuning_governor.domain.job import JobState, job_state
from tuning_governor.domain.spend import RunningTrial
from tuning_governor.governance.facts import JobFacts, Trigger
from tuning_governor.governance.ports import EngineServices
from tuning_governor.governance.rules import registry
from tuning_governor.governance.trials import record_listed_trials
from tuning_governor.models.place import place_in_key
from tuning_governor.models.sagemaker import TRAINING_RUNNING, TRAINING_TERMINAL
from tuning_governor.models.tuning_job import TrialSummary, TuningJob
from tuning_governor.policy import Policy
from tuning_governor.policy import rules as rule_specs

if TYPE_CHECKING:
    from tuning_governor.ports.uses import TrialsStore

PAGE = 100
"""ListTrainingJobsForHyperParameterTuningJob's MaxResults ceiling (1-100, default 10)."""

TRIAL_RULES = rule_specs.trial_rules()
"""Rules that read a job's trials (their spec's ``reads_trials``): its running trials' accrual, its best
objective, its failures."""

FINISHED = ("Completed", "RetryableError", "NonRetryableError", "Stopped")
"""TrainingJobStatusCounters of trials that have ended (the fifth, InProgress, counts those running)."""


@dataclass
class Reconciled:
    """What one job's reconciliation did, and the SageMaker calls it made."""

    job_key: str
    listed: bool = False
    recorded: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    tracked: list[str] = field(default_factory=list)
    """Trials SageMaker runs that had no running entry (their progress events late), tracked now."""
    calls: int = 0
    starting: list[TrialSummary] = field(default_factory=list)
    """Trials SageMaker lists running without a TrainingStartTime (Starting: not billed yet, so not
    tracked), with ``described``, the job as that reconciliation described it."""
    described: TuningJob | None = None

    @property
    def changed(self) -> bool:
        return bool(self.recorded or self.cleared or self.tracked)

    def as_report(self) -> dict[str, object]:
        return {
            "job": self.job_key,
            "listed": self.listed,
            "recorded": self.recorded,
            "cleared": self.cleared,
            "tracked": self.tracked,
            "calls": self.calls,
        }


def trial_rules(policy: Policy, job: JobState) -> list[str]:
    """The rules judging ``job`` that read its trials (in :data:`TRIAL_RULES`' order), each as switched on
    for it (``Rule.switched_on``); [] when none is."""
    return [rule.name for rule in registry if rule.spec.reads_trials and rule.switched_on(policy, job)]


def counts_differ(job: JobState, described: TuningJob) -> bool:
    """Whether the job item disagrees with SageMaker's counters: trials ended that are not recorded (or
    recorded that SageMaker does not count yet), or another number of trials running than SageMaker runs
    (more: an end event lost; fewer: progress events late, or trials still Starting, which the listing
    shows without a TrainingStartTime)."""
    counters = described.training_job_status_counters
    finished = sum(int(counters.get(name, 0)) for name in FINISHED)
    return finished != job.trials_recorded or len(job.running) != int(counters.get("InProgress", 0))


def reconcile_trials(
    job: JobState, services: EngineServices[TrialsStore], *, source: str, described: TuningJob | None = None
) -> Reconciled:
    """Make the job item agree with SageMaker on its trials (see the module docstring): 1 Describe (none
    when the caller passes the job as it just ``described`` it), and where the counts differ
    ceil(trials / 100) List calls and one DescribeTrainingJob per lost trial."""
    done = Reconciled(job.key, calls=0 if described is not None else 1)
    sagemaker = services.sagemaker_for(place_in_key(job.key))
    described = described or sagemaker.describe_tuning_job(job.name)
    if not counts_differ(job, described):
        return done
    trials = sagemaker.list_trials(job.name)
    done.listed = True
    done.calls += max(1, -(-len(trials) // PAGE))
    records = services.store.trial_records(job.key)
    known = described.model_copy(update={"tags": dict(job.tags)})
    region = job.region or services.settings.region
    before = {r.training_job_name.lower() for r in records}
    done.recorded = record_listed_trials(known, trials, records, job, region=region, services=services, source=source)
    done.calls += len(
        [t for t in trials if t.training_job_status in TRAINING_TERMINAL and t.training_job_name.lower() not in before]
    )
    ended = {t.training_job_name.lower() for t in trials if t.training_job_status in TRAINING_TERMINAL}
    recorded = before | {name.lower() for name in done.recorded}
    fresh = job_state(services.store.get_job(job.key)) if done.recorded else job
    stale = sorted(n for n in (fresh.running_names if fresh is not None else ()) if n in ended and n in recorded)
    if stale and fresh is not None:
        services.store.forget_running(job.key, stale, team=fresh.team)
        done.cleared = stale
    untracked = [
        t
        for t in trials
        if t.training_job_status in TRAINING_RUNNING
        and t.training_start_time is not None
        and t.training_job_name.lower() not in recorded
        and t.training_job_name.lower() not in (fresh.running_names if fresh is not None else ())
    ]
    done.described, done.starting = described, starting(trials, recorded)
    team = job.team or services.policy().team_of(job.tags, job.roles)
    for summary in untracked:
        trial, asked = running_from_listing(described, summary, region, services)
        done.calls += asked
        if trial is not None and services.store.track_running(trial, team=team):
            done.tracked.append(trial.trial)
    return done


def starting(trials: list[TrialSummary], recorded: set[str]) -> list[TrialSummary]:
    """Trials listed InProgress without a TrainingStartTime (Starting: not billed yet), not recorded."""
    return [
        t
        for t in trials
        if t.training_job_status == "InProgress"
        and t.training_start_time is None
        and t.training_job_name.lower() not in recorded
    ]


def running_from_listing(
    described: TuningJob, summary: TrialSummary, region: str, services: EngineServices[TrialsStore]
) -> tuple[RunningTrial | None, int]:
    """The running entry of a trial as SageMaker lists it (its TrainingStartTime), with the instances,
    spot flag and StoppingCondition of its definition; one DescribeTrainingJob only when the definition
    offers several cluster shapes. Returns (the entry or None, SageMaker calls made)."""
    definitions = described.definitions()
    definition = next(
        (d for d in definitions if d.definition_name and d.definition_name == summary.training_job_definition_name),
        definitions[0] if len(definitions) == 1 else None,
    )
    shapes = definition.alternatives() if definition is not None else []
    start, spot = summary.training_start_time, definition.enable_managed_spot_training if definition else False
    stop = definition.stopping_condition if definition is not None else None
    instances, calls = (shapes[0], 0) if len(shapes) == 1 else ({}, 0)
    if not instances:
        trial = services.sagemaker_for(described.place).describe_training_job(summary.training_job_name)
        if trial.tuning_job_key != described.key or trial.status not in TRAINING_RUNNING:
            return None, 1
        instances, calls = trial.instances(), 1
        start, spot = trial.training_start_time or start, bool(trial.enable_managed_spot_training)
        stop = trial.stopping_condition or stop
    if start is None or not instances:
        return None, calls
    limits = [stop.max_runtime_in_seconds, stop.max_wait_time_in_seconds if spot else None] if stop else []
    entry = RunningTrial(
        job_key=described.key,
        trial=summary.training_job_name.lower(),
        start=start,
        instances=instances,
        spot=spot,
        region=region,
        max_seconds=max((s for s in limits if s), default=None),
    )
    return entry, calls


def before_stop(
    trigger: Trigger,
    job: JobState,
    facts: JobFacts,
    policy: Policy,
    services: EngineServices[TrialsStore],
    reload: Callable[[JobState], JobFacts],
) -> tuple[JobState, JobFacts]:
    """A judgement about to stop ``job`` on a rule that reads its trials first reconciles them with
    SageMaker (:func:`reconcile_trials`) and judges on the truth: the job and facts to judge, re-read
    (``reload``) only when the reconciliation changed the item. Nothing is asked when no such rule would
    stop the job (monitor mode, exempt, a stop already requested, or no breach)."""
    if not policy.enforcing or policy.is_exempt(job.tags) or job.stop_requested_at is not None:
        return job, facts
    rules = [rule for rule in registry.for_trigger(trigger) if rule.spec.reads_trials and not rule.admission_judged]
    if not any((d := rule.evaluate(policy, facts, None)) is not None and d.wants_stop for rule in rules):
        return job, facts
    if not reconcile_trials(job, services, source="judgement").changed:
        return job, facts
    fresh = job_state(services.store.get_job(job.key))
    if fresh is None or fresh.ended:
        return job, facts
    return fresh, reload(fresh)
