"""The scheduled sweep: the backstop for events that never reached us.

Each run (rate set in template.yaml, default 5 minutes):
1. lists InProgress and Stopping tuning jobs in SageMaker (ceil(jobs / 100) calls each);
2. finalises jobs the table still thinks are running but SageMaker no longer lists (their terminal
   event was lost): one Describe + ceil(trials / 100) List calls per such job, plus one
   DescribeTrainingJob per trial listed as finished that has no record (its own event was lost);
   a job so finalised that ended Stopped, stopped by the governor to make room, is queued again
   (``app.queue.requeue``: one GetItem, plus one Describe + ListTags the first time);
   then does the same for finalised jobs whose summary still misses trials (``GAPS`` items, one
   Query), reporting them when complete or 30 minutes after the job ended, or correcting the report;
3. records jobs SageMaker lists that the table does not know (their InProgress event was lost or is
   still in flight): one Describe + one ListTags each; then judges every InProgress job that has no
   reservation and no admission decision like an arrival (``govern("arrival")``), in CreationTime
   order, so a job created before others is admitted before them (docs/reference/policy.md, "Order of
   admission"): one GetItem per unreserved job listed; under enforce, the jobs the ledger keeps over
   the limit (admitted so in monitor mode) are judged again the same way, and stopped once if still
   in breach;
3b. reconciles the trials of running jobs whose rules read them (job budget, team month, stagnation,
   failed trials) or whose running entries the ledger re-counts (``app.sweep.running_trials``): one
   DescribeHyperParameterTuningJob each; only where its TrainingJobStatusCounters disagree with the job
   item, ceil(trials / 100) ListTrainingJobsForHyperParameterTuningJob calls and one DescribeTrainingJob
   per trial whose terminal event was lost (recorded, its running entry cleared); a trial the listing
   shows running since its TrainingStartTime with no running entry (its progress events late) is
   tracked from the listing and its definition (one DescribeTrainingJob only where the definition offers
   several instance shapes); before the ledger's re-count and the rules, so both read SageMaker's truth;
3b'. after step 4, a job with trials listed Starting (no TrainingStartTime: not billed, not tracked)
   whose job budget or team month could cross before the next sweep were they billing now gets a
   one-time check then (no SageMaker call: ``app.starting_checks``; the check re-reads its trials);
3c. re-reads the tags of running jobs under a grace notice or with a one-time check pending (one
   ListTags each; app.events.tags: a tag event may be lost), so an exemption or raised budget counts;
4. evaluates the sweep rules (runtime, stagnation, the job and team budgets on finished + accrued
   spend) on every running job, from the table as step 3b left it: a running trial's accrued cost comes
   from its entry on the job item (TrainingStartTime, instances, spot), never from a SageMaker call; a job about to
   be stopped on a rule that reads trials is reconciled first (one Describe more: governance.trial_truth);
4b. the delivery step: finishes the decisions left pending (a stop a failed invocation did not make,
   or a report a channel could not take: a failing channel never fails the event, issue 18) for
   longer than a sweep interval: one Query on gsi1 (``STEP#pending``) and no SageMaker call beyond a
   stop still to be made (governance.actions.resume_stale); a report still undelivered here is
   counted as ``ReportsOverdue`` (alarmed); then the team decisions left pending as long whose team
   has no running job left to carry them on (one more gsi1 Query: governance.team_months);
5. refreshes warm pools (ceil(training jobs modified in the last 7 hours / 100) list calls: a pool is
   Available for at most the longest keep-alive after its job last changed; plus one Describe per new
   pool; a known pool no longer Available is described once, and a trial's retention its lost end event
   carried is billed to the trial, its job and its team's month: ``app.sweep.warm_pools``) and writes the
   capacity snapshot (usage per instance type, and the limits that apply).
SageMaker calls grow with ceil(jobs / 100) plus the jobs that changed, plus the trial step (3b), bounded
per sweep by J + sum over the jobs that disagree of (ceil(T_j / 100) + L_j + S_j) for J running jobs, T_j
trials, L_j lost terminal events and S_j untracked running trials of several-shape definitions of job j, plus the warm-pool listing (5), which grows with the
training jobs (trials included) modified in the last 7 hours, never with the account's older history
(benchmarks/sweep_calls.py measures both: at 50 running jobs x 200 trials, 111 warm-pool list calls; at
10 running jobs x 200 trials, 26 trial-step calls per sweep (median) with no event lost and 29 with 5 %
lost: a job is also listed while one of its trials is Starting, InProgress with no TrainingStartTime).

Steps 1-4 run in the home place, then in every governed member place (``app.sweep.places``: each
``accounts.<id>`` times its regions, stalest first, a few at once, within the invocation's time), with
that place's services (``Services.at``); the other steps are the table's and run once, at home.

Between sweeps, ``app.checks.budget.run_budget_check`` judges one job at the moment its running trials were projected
to bring it to its budget (a one-time schedule asked for by an earlier judgement; adapters.checks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError

from tuning_governor.app.starting_checks import schedule_starting_checks
from tuning_governor.app.sweep.running_trials import reconcile_running_trials
from tuning_governor.app.sweep.warm_pools import refresh_warm_pools
from tuning_governor.app.tag_rereads import reread_tags
from tuning_governor.domain.capacity import total
from tuning_governor.domain.job import JobState
from tuning_governor.errors import Disposition, GovernorError
from tuning_governor.governance.actions import resume_stale
from tuning_governor.governance.admission import reconcile_ledger
from tuning_governor.governance.admission_order import kept_over_limit, unjudged
from tuning_governor.governance.engine import govern
from tuning_governor.governance.team_months import resume_team_decisions
from tuning_governor.governance.trial_truth import Reconciled
from tuning_governor.models.place import Place, job_key, place_in_key
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy
from tuning_governor.policy.accounts import under_account_terms

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import SweepingStore

RUNNING = ("InProgress", "Stopping")


@dataclass
class Sweep:
    """One sweep's state: what SageMaker lists as running, what the table knows, and the report."""

    services: AppServices[SweepingStore]
    now: datetime
    policy: Policy
    live: dict[str, dict[str, Any]]
    known: dict[str, JobState]
    report: dict[str, Any] = field(
        default_factory=lambda: {"finalised": [], "discovered": [], "decisions": [], "errors": []}
    )
    ended_at: dict[str, datetime] = field(default_factory=dict)
    """When each job finalised by this sweep ended, as Describe says (its reservation is marked so)."""
    stopped: list[str] = field(default_factory=list)
    """The jobs finalised by this sweep that ended Stopped (their Stopped event was lost)."""
    place: Place | None = None
    """The account and region swept (None: the home place; ``app.sweep.places`` walks the others)."""

    @property
    def region(self) -> str:
        return self.place.region if self.place is not None else self.services.settings.region

    def key_of(self, name: str) -> str:
        """The key of a job named ``name`` in the place swept (``models.place.job_key``)."""
        return job_key(name, self.place, self.services.home)

    def attempt(self, key: str, step: str, fn: Callable[[], Any]) -> None:
        """One job's step failing, whatever the failure (a throttled read surfaces as botocore's own
        ClientError), is counted and logged; the sweep goes on with the others, and the next sweep
        tries this step again."""
        try:
            fn()
        except Exception as exc:  # the backstop must not stop at one job
            self.report["errors"].append({"job": key, "step": step, "error": type(exc).__name__})
            metrics.add_metric(name="SweepErrors", unit=MetricUnit.Count, value=1)
            extra = {"job": key, "step": step, "error": type(exc).__name__}
            if isinstance(exc, GovernorError) and exc.disposition is Disposition.DROP:
                logger.warning("sweep step failed", extra=extra)
            elif isinstance(exc, GovernorError | ClientError):
                logger.error("sweep step failed", extra=extra | {"reason": str(exc)[:300]})
            else:  # not a failure of AWS or of the input: show where it came from
                logger.exception("sweep step failed", extra=extra)

    def finalise_lost(self) -> None:
        """Jobs the table thinks are running that SageMaker no longer lists: their end event was lost."""
        for key, job in self.known.items():
            if key in self.live:
                continue

            def finish(name: str = job.name, tags: dict[str, str] = job.tags) -> None:
                from tuning_governor.app.finalise import finalise_reported  # noqa: PLC0415 - a lost end only

                done, _ = finalise_reported(
                    name, region=self.region, tags=tags, services=self.services, place=self.place
                )
                self.report["finalised"].append(done.summary.job_name)
                self.ended_at[done.job.key] = done.job.end_time or done.job.last_modified_time or self.now
                if done.job.status == "Stopped":
                    self.stopped.append(done.job.name)

            self.attempt(key, "finalise", finish)

    def requeue_stopped(self) -> None:
        """Jobs finalised here that ended Stopped: one the governor stopped to make room is queued
        again, as its Stopped event would have had it (``app.queue.requeue``: once, whatever comes later)."""
        self.report["requeued"] = []
        for name in self.stopped:

            def requeue(name: str = name) -> None:
                from tuning_governor.app.queue.requeue import requeue_stopped  # noqa: PLC0415 - a lost Stopped only

                outcome = requeue_stopped(name, self.services, self.services.stopped_jobs, self.services.queue_name_key)
                if outcome is not None:
                    self.report["requeued"].append(outcome)

            self.attempt(name.lower(), "requeue", requeue)

    def fill_gaps(self) -> None:
        """Finalised jobs whose summary still lacks trials SageMaker lists as finished (one Query on the
        GAPS index entries, never a scan): record what Describe now shows, then report (complete, or
        after the grace period naming the missing trials) or correct the report once."""
        self.report["gaps"] = []
        for job in map(JobState.from_item, self.services.store.jobs_with_gaps()):
            if job.key in self.report["finalised"] or job.key in self.known:
                continue

            def fill(
                name: str = job.name, region: str = job.region or self.services.settings.region, key: str = job.key
            ) -> None:
                from tuning_governor.app.finalise import finalise_and_report  # noqa: PLC0415 - a gap only

                summary, channels = finalise_and_report(
                    name, region=region, tags={}, services=self.services, place=place_in_key(key)
                )
                missing = summary.unaccounted_trials
                self.report["gaps"].append({"job": summary.job_name, "missing": missing, "reports": channels})

            self.attempt(job.key, "finalise-gaps", fill)

    def discover(self) -> None:
        """Jobs SageMaker lists that the table does not know: their InProgress event was lost."""
        services = self.services
        for key, summary in self.live.items():
            if key in self.known:
                continue

            def discover(name: str = summary["HyperParameterTuningJobName"]) -> None:
                job = services.sagemaker.describe_tuning_job(name)
                tags = services.sagemaker.list_tags(job.arn) if job.arn else {}
                job = job.model_copy(update={"tags": tags})
                services.store.upsert_job(
                    job,
                    region=self.region,
                    team=self.policy.team_of(tags, job.role_arns()),
                    owner=tags.get(services.settings.owner_tag),
                    event_time=self.now,
                )
                # Judged by the running rules from now on, not as an arrival.
                services.store.mark_arrival(job.key, self.now)
                self.report["discovered"].append(job.name)

            self.attempt(key, "discover", discover)

    def reconcile(self) -> None:
        """The capacity ledger follows what runs: releases, re-counts from running trials, Stopping jobs
        discovered adopted (they are not admitted, they hold until stopped); then every InProgress job
        never judged for admission is judged like an arrival, in CreationTime order."""
        names = (self.key_of(str(name)) for name in self.report["discovered"])
        adopt = {k for k in names if self.live.get(k, {}).get("HyperParameterTuningJobStatus") == "Stopping"}
        self.report["ledger"] = reconcile_ledger(
            self.services, live=set(self.live), listed_at=self.now, jobs=self.known, adopt=adopt, ended_at=self.ended_at
        )
        ledger = self.services.store.read_ledger()
        self.report["unjudged"] = unjudged(self.services, self.live, ledger)
        # Kept over the limit while the policy was monitor: judged again now that it enforces.
        self.report["over_limit"] = [k for k in kept_over_limit(ledger, self.policy) if k in self.live]
        for key in self.report["unjudged"] + self.report["over_limit"]:

            def judge(key: str = key) -> None:
                self.report["decisions"].extend(
                    d | {"job": key} for d in govern("arrival", key, self.now, self.services)
                )

            self.attempt(key, "admission", judge)

    def running_known(self) -> dict[str, JobState]:
        """Known jobs SageMaker lists as InProgress (those the sweep judges)."""
        listed = {k for k, s in self.live.items() if s.get("HyperParameterTuningJobStatus") == "InProgress"}
        return {key: job for key, job in self.known.items() if key in listed}

    def judge_running(self) -> None:
        for key, summary in self.live.items():
            if summary.get("HyperParameterTuningJobStatus") != "InProgress":
                continue

            def judge(key: str = key) -> None:
                self.report["decisions"].extend(d | {"job": key} for d in govern("sweep", key, self.now, self.services))

            self.attempt(key, "govern", judge)

    def snapshot(self) -> None:
        holders = self.services.store.holders()
        taken = {"taken_at": self.now, "usage": total(holders), "holders": len(holders)}
        self.services.store.put_capacity_snapshot(taken)
        self.report["capacity"] = taken["usage"]


def sweep_place(
    services: AppServices[SweepingStore], now: datetime, policy: Policy, place: Place | None = None
) -> Sweep:
    """Steps 1-4 in one account and region (``services`` made for it: ``Services.at``; None: the home
    place, which also requeues and fills gaps). Listing SageMaker there raises ``PlaceUnreachable``
    when its member role cannot be assumed; a failure on one job is counted, the others still swept."""
    live = {
        job_key(summary["HyperParameterTuningJobName"], place, services.home): summary
        for status in RUNNING
        for summary in services.sagemaker.list_tuning_jobs(status)
    }
    # The place's own jobs (a job's key names its place: ``models.place.place_in_key``).
    known = {
        job.key: job
        for status in RUNNING
        for job in map(JobState.from_item, services.store.jobs_with_status(status))
        if place_in_key(job.key) == place
    }
    sweep = Sweep(services, now, policy, live, known, place=place)
    sweep.finalise_lost()
    if place is None:
        sweep.requeue_stopped()
        sweep.fill_gaps()
    sweep.discover()
    starting: list[Reconciled] = []
    sweep.report["trials"] = reconcile_running_trials(services, policy, live, known, sweep.attempt, starting)
    sweep.attempt("capacity-ledger", "reconcile", sweep.reconcile)
    sweep.report["tags_reread"] = reread_tags(services, now, sweep.running_known(), sweep.attempt)
    sweep.judge_running()
    # Trials listed Starting: a one-time check at the earliest their billing could cross a budget (in a
    # member place too: the check's input names the job's account and region).
    sweep.attempt("starting-trials", "check", lambda: schedule_starting_checks(services, now, starting))
    return sweep


def run_sweep(services: AppServices[SweepingStore], remaining: Callable[[], float] | None = None) -> dict[str, Any]:
    """One sweep: the home place, its table-wide steps, then every governed member place
    (``app.sweep.places``; ``remaining``: the seconds the invocation has left, None: unbounded).
    A failure on one job, or one place, is logged and counted; the others are still swept."""
    now = services.clock()
    policy = services.policy()
    home = services.home
    # The home place's jobs under the home account's own terms (a listed home in monitor never stops).
    sweep = sweep_place(services, now, under_account_terms(policy, home.account) if home is not None else policy)
    # Decisions whose steps (stop, a report on some channel) a failed, never-retried attempt left
    # pending for longer than a sweep interval: finished from their stored rows (one gsi1 Query).
    sweep.report["resumed"] = []
    sweep.attempt("pending-steps", "resume", lambda: sweep.report["resumed"].extend(resume_stale(services, now)))
    # Team decisions left pending whose team has no running job left to carry them on (one gsi1 Query).
    sweep.attempt(
        "team-decisions", "resume", lambda: sweep.report["resumed"].extend(resume_team_decisions(services, now))
    )
    sweep.attempt(
        "warm-pools", "refresh", lambda: sweep.report.update(refresh_warm_pools(services, policy.team_of, now))
    )
    sweep.attempt("capacity-snapshot", "write", sweep.snapshot)
    metrics.add_metric(name="SweepJobsSeen", unit=MetricUnit.Count, value=len(sweep.live))
    if policy.accounts:  # member places: a stack that governs no member account never loads their walk
        from tuning_governor.app.sweep.places import sweep_members  # noqa: PLC0415 - member accounts only

        members = sweep_members(
            services, now, policy, remaining, lambda at, place: sweep_place(at, now, at.policy(), place).report
        )
        sweep.report.update(members)
    return sweep.report
