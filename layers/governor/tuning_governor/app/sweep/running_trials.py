"""The sweep's step that reconciles running jobs' trials with SageMaker (issue 17, mechanisms 4-6).

For each job SageMaker lists as running that the table knows, and whose trials matter to it (a rule that
reads them, ``governance.trial_truth.trial_rules``, or running entries the capacity ledger re-counts),
``governance.trial_truth.reconcile_trials``: one DescribeHyperParameterTuningJob, and only where its
status counters disagree with the job item, ceil(trials / 100) ListTrainingJobsForHyperParameterTuningJob
calls plus one DescribeTrainingJob per trial whose terminal event was lost; running trials the listing
shows that have no running entry (progress events late) are tracked from it. Run before the capacity
ledger's re-count and before the rules are judged, so both read the truth. Each job on its own: one
failing is counted by the sweep and the others are still reconciled.

Calls per sweep: at most J + sum over the J' jobs that disagree of (ceil(T_j / 100) + L_j + S_j), for J
running jobs with such rules, T_j trials of job j, L_j trials of it whose terminal events were lost
since the last sweep and S_j of its running trials tracked from the listing whose definition offers
several instance shapes (one DescribeTrainingJob each, once: then it has its entry); with no event lost
or late, J (one Describe per job), whatever the number of trials, except where a trial is still Starting
(InProgress without a TrainingStartTime): its job is listed, ceil(T_j / 100) calls, until it starts.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from tuning_governor.domain.job import JobState, job_state
from tuning_governor.governance.trial_truth import Reconciled, reconcile_trials, trial_rules
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import TrialsStore

Attempt = Callable[[str, str, Callable[[], Any]], None]


def reconcile_running_trials(
    services: AppServices[TrialsStore],
    policy: Policy,
    live: MutableMapping[str, dict[str, Any]],
    known: MutableMapping[str, JobState],
    attempt: Attempt,
    starting: list[Reconciled] | None = None,
) -> list[dict[str, Any]]:
    """Reconcile every running job's trials whose rules or reservation read them; ``known`` is updated
    with the job as reconciled (the ledger's re-count reads it next). Returns one entry per job asked
    about: what was recorded and cleared, the rules that needed it and the SageMaker calls made. Jobs with
    trials listed Starting (no TrainingStartTime yet) are appended to ``starting`` (``app.starting_checks``)."""
    out: list[dict[str, Any]] = []
    for key, job in sorted(known.items()):
        if key not in live or job.ended:
            continue
        rules = trial_rules(policy, job)
        if not rules and not job.running:
            continue

        def reconcile(job: JobState = job, rules: list[str] = rules) -> None:
            done = reconcile_trials(job, services, source="sweep")
            if done.changed:
                fresh = job_state(services.store.get_job(job.key))
                if fresh is not None:
                    known[job.key] = fresh
            out.append(done.as_report() | {"rules": rules or ["capacity"]})
            if done.starting and starting is not None:
                starting.append(done)

        attempt(key, "reconcile-trials", reconcile)
    return out
