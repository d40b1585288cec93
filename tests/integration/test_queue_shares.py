"""The queue's admission loop on the shares core (docs/explanation/queue.md, "Integration: the queue on the
shares core"): on moto and the AMT stand-in, through ``submit`` as the consumer runs it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from governor_client.simulator.scenarios import ROLE_ARN
from tests.conftest import REGION
from tests.integration.conftest import World
from tests.integration.test_queue_submission import (
    CV_EXEC,
    P3,
    _role,
    created_jobs,
    record,
    request,
    slack_texts,
    submit_at_once,
)
from tuning_governor.adapters.submissions import IamPrincipals, SageMakerLauncher
from tuning_governor.app.queue.admission import QueueServices, admit_waiting, submit
from tuning_governor.app.queue.requests import read_record
from tuning_governor.domain.resume import resume_name
from tuning_governor.models.queue import job_name_for
from tuning_governor.policy import parse_policy


def _teams_world(world: World, nlp_share: str, cv_share: str | None) -> tuple[World, QueueServices, dict[str, str]]:
    """A quota of 8 ml.p3.2xlarge; nlp and cv each with a submitter role and an execution role, and the
    ``share`` mappings given (cv's None: no share)."""
    world.amt.set_applied_quota(P3, 8)
    iam = boto3.client("iam", region_name=REGION)
    nlp_arn, nlp_id = _role(iam, "nlp-submit")
    cv_arn, cv_id = _role(iam, "cv-submit")
    cv_line = f"\n    share: {cv_share}" if cv_share else ""
    policy = parse_policy(
        f"""
mode: enforce
quotas: {{{P3}: 8}}
teams:
  nlp:
    submitters: ["{nlp_arn}"]
    execution_roles: ["{ROLE_ARN}"]
    share: {nlp_share}
  cv:
    submitters: ["{cv_arn}"]
    execution_roles: ["{CV_EXEC}"]{cv_line}
""",
        "test",
    )
    world.env.services.policy = lambda: policy
    queue = QueueServices(launcher=SageMakerLauncher(world.env.sagemaker), principals=IamPrincipals(iam))
    return world, queue, {"nlp": nlp_id, "cv": cv_id}


@pytest.fixture
def shares_world(world: World) -> tuple[World, QueueServices, dict[str, str]]:
    """A quota of 8 ml.p3.2xlarge: nlp's RESERVE share 4, cv no share (the pool: the other 4)."""
    return _teams_world(world, f"{{capacity_limits: {{{P3}: 4}}, resource_sharing: RESERVE}}", None)


def test_a_reserved_share_stays_for_its_team_while_another_team_waits(shares_world: Any) -> None:
    world, queue, ids = shares_world
    services = world.env.services
    # Given cv (no share) holds the pool's 4 instances
    submit(
        read_record(record(f"{ids['cv']}:bo", request(parallel=4, team="cv", role=CV_EXEC), "cv-1")), services, queue
    )
    # When cv asks for 2 more while nlp's reserved share of 4 is idle
    out = submit(
        read_record(record(f"{ids['cv']}:bo", request(parallel=2, team="cv", role=CV_EXEC), "cv-2")), services, queue
    )
    # Then cv's second request waits: nlp's RESERVE share is kept for nlp
    assert out["admitted"] == []
    assert created_jobs(world) == [job_name_for("cv", "cv-1")]
    # And nlp's request is created on its share at once
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "nlp-1")), services, queue)
    assert created_jobs(world) == sorted([job_name_for("cv", "cv-1"), job_name_for("nlp", "nlp-1")])
    assert any("admitted on its share" in t for t in slack_texts(world))


def test_a_request_above_what_its_team_can_ever_hold_is_refused_with_the_reason(shares_world: Any) -> None:
    world, queue, ids = shares_world
    out = submit(
        read_record(record(f"{ids['cv']}:bo", request(parallel=6, team="cv", role=CV_EXEC), "cv-big")),
        world.env.services,
        queue,
    )
    assert out["outcome"] == "queued" and out["admitted"][0]["outcome"] == "refused"
    assert "above the 4 team cv can ever hold" in out["admitted"][0]["reason"]
    assert created_jobs(world) == []


@pytest.fixture
def lending_world(world: World) -> tuple[World, QueueServices, dict[str, str]]:
    """A quota of 8 ml.p3.2xlarge: nlp lends a share of 4; cv may borrow beyond its share of 2, and
    its borrowing jobs may be preempted; the pool is the other 2."""
    return _teams_world(
        world,
        f"{{capacity_limits: {{{P3}: 4}}, resource_sharing: LEND}}",
        f"{{capacity_limits: {{{P3}: 2}}, resource_sharing: LEND_AND_BORROW, preemption: allowed}}",
    )


def _status(world: World, name: str) -> str:
    job = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    return str(job["HyperParameterTuningJobStatus"])


def test_a_borrower_is_recorded_and_stopped_when_the_lender_wants_its_share_back(lending_world: Any) -> None:
    world, queue, ids = lending_world
    services = world.env.services
    cv_job = job_name_for("cv", "cv-1")
    # Given cv runs 6 instances: its share of 2, and 4 borrowed from the pool and nlp's idle share
    submit(
        read_record(record(f"{ids['cv']}:bo", request(parallel=6, team="cv", role=CV_EXEC), "cv-1")), services, queue
    )
    assert created_jobs(world) == [cv_job]
    stored = services.store.get_request(cv_job)
    assert stored is not None and stored.borrowed == {P3: 4}
    world.pump(60)  # the governor handles its creation event (a job it has not registered is preempted later)
    # When nlp asks for its share of 4 (2 are free)
    out = submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "nlp-1")), services, queue)
    # Then cv's borrowing job is stopped on the stand-in and its owner told; nlp's request waits for it
    assert [o["outcome"] for o in out["admitted"]] == ["preempted"]
    assert _status(world, cv_job) in {"Stopping", "Stopped"}
    assert any("preempted" in t and cv_job in t for t in slack_texts(world))
    assert created_jobs(world) == [cv_job]
    # And a later pass while it is still stopping tells its owner nothing more
    told = len([t for t in slack_texts(world) if "preempted" in t])
    admit_waiting(services, queue)
    assert len([t for t in slack_texts(world) if "preempted" in t]) == told


def test_with_consent_a_request_is_created_now_with_the_parallelism_that_fits(lending_world: Any) -> None:
    world, queue, ids = lending_world
    services = world.env.services
    # Given nlp holds its whole share (4 of 8)
    submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "nlp-1")), services, queue)
    # When cv asks for 6 and consents to fit
    body = {"fit_to_share": True}
    submit(
        read_record(record(f"{ids['cv']}:bo", request(parallel=6, team="cv", role=CV_EXEC), "cv-1", body)),
        services,
        queue,
    )
    # Then its job is created now with MaxParallel 4 (its share of 2 and the pool's 2), and it is told so
    cv_job = job_name_for("cv", "cv-1")
    job = world.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=cv_job)
    assert job["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] == 4
    assert any("MaxParallel 6 -&gt; 4 to fit" in t for t in slack_texts(world))  # ">" escaped for Slack


def test_a_share_priority_still_orders_the_teams_requests_and_validation_says_to_rename_it(world: World) -> None:
    world.amt.set_applied_quota(P3, 8)
    iam = boto3.client("iam", region_name=REGION)
    nlp_arn, nlp_id = _role(iam, "nlp-submit")
    policy = parse_policy(
        f"""
mode: enforce
quotas: {{{P3}: 8}}
teams:
  nlp:
    submitters: ["{nlp_arn}"]
    execution_roles: ["{ROLE_ARN}"]
    share: {{capacity_limits: {{{P3}: 4}}, priority: 7}}
""",
        "test",
    )
    world.env.services.policy = lambda: policy
    queue = QueueServices(launcher=SageMakerLauncher(world.env.sagemaker), principals=IamPrincipals(iam))
    name = submit(read_record(record(f"{nlp_id}:ana", request(parallel=4), "nlp-1")), world.env.services, queue)[
        "job_name"
    ]
    stored = world.env.services.store.get_request(name)
    assert stored is not None and stored.priority == 7
    assert any("teams.nlp.share.priority is deprecated" in w and "queue_priority" in w for w in policy.warnings())


def test_a_preempted_borrower_is_queued_again_as_a_warm_start_and_no_finished_trial_is_lost(
    lending_world: Any,
) -> None:
    from tests.integration.test_queue_requeue import _run  # the loop that also feeds the queue consumer

    world, queue, ids = lending_world
    services, sm = world.env.services, world.env.sagemaker
    queue = QueueServices(launcher=queue.launcher, principals=queue.principals, stopped_jobs=SageMakerLauncher(sm))
    cv_job = job_name_for("cv", "cv-1")
    # Given cv borrows (6 of 8, MaxParallel 6, 12 trials) and has finished a wave of trials
    req = request(parallel=6, team="cv", role=CV_EXEC)
    req["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] = 12
    submit(read_record(record(f"{ids['cv']}:bo", req, "cv-1")), services, queue)
    while not any(t["TrainingJobStatus"] == "Completed" for t in _trials(world, cv_job)):
        world.pump(60)
    # When nlp asks for its lent share of 4 back, and cv's job stops
    out = submit(read_record(record(f"{ids['nlp']}:ana", request(parallel=4), "nlp-1")), services, queue)
    assert [o["outcome"] for o in out["admitted"]] == ["preempted"]
    _run(world, queue)
    # Then cv's job is Stopped by a recorded queue-preempt decision, and resumed under a traceable name
    assert _status(world, cv_job) == "Stopped"
    assert [(d["rule"], d["action"]) for d in services.store.decisions(cv_job.lower())] == [
        ("queue-preempt", "stopped")
    ]
    resumed = resume_name(cv_job, 1)
    entry = services.store.get_request(resumed)
    assert entry is not None and entry.team == "cv" and entry.state == "admitted"
    job = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=resumed)
    # warm-started from the stopped job, for the trials it had not launched (AWS counts the parent's)
    assert job["WarmStartConfig"]["ParentHyperParameterTuningJobs"] == [{"HyperParameterTuningJobName": cv_job}]
    assert job["WarmStartConfig"]["WarmStartType"] == "IdenticalDataAndAlgorithm"
    launched = len(_trials(world, cv_job))
    assert job["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] == 12 - launched
    assert job["HyperParameterTuningJobStatus"] == "Completed"
    # And nlp's request ran, and cv's owner was told it was preempted and queued again
    assert _status(world, job_name_for("nlp", "nlp-1")) == "Completed"
    assert any(f"preempted and queued as {resumed}" in t for t in slack_texts(world))


def _trials(world: World, name: str) -> list[dict[str, Any]]:
    sm = world.env.sagemaker
    out = sm.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName=name, MaxResults=100)
    return list(out["TrainingJobSummaries"])


@pytest.mark.usefixtures("atomic_moto_requests")
@pytest.mark.parametrize("seed", [1, 2])
def test_concurrent_submissions_never_take_a_reserved_share_whatever_the_passes_saw(
    shares_world: Any, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Passes that ran on a stale view (every request proposed) must still leave nlp's RESERVE share to
    nlp: the ledger's serialized commit re-checks the shares, as it checks the quota."""
    from tuning_governor.app.queue import admission as queue_admission
    from tuning_governor.domain.queue_schedule import QueueDecision

    world, queue, ids = shares_world
    services = world.env.services

    def stale(policy: Any, live: Any, *args: Any, **kw: Any) -> list[QueueDecision]:
        return [QueueDecision(e.job_name, "admit", "stale view") for e in live]

    monkeypatch.setattr(queue_admission, "plan_decisions", stale)
    # Given 10 submissions at once, mostly cv's (no share: the pool of 4), 1 to 3 instances each
    sizes = [(seed * 5 + i * 2) % 3 + 1 for i in range(10)]
    subs = [
        read_record(
            record(
                f"{ids['nlp' if i % 4 == 3 else 'cv']}:u{i}",
                request(parallel=n, **({} if i % 4 == 3 else {"team": "cv", "role": CV_EXEC})),
                f"s{seed}-{i}",
            )
        )
        for i, n in enumerate(sizes)
    ]
    submit_at_once(subs, services, queue)
    # Then cv holds at most the pool, nlp at most its share, the account at most its quota
    held = services.store.read_ledger().reservations.values()
    by_team = {team: sum(sum(r.on_demand.values()) for r in held if r.team == team) for team in ("cv", "nlp")}
    assert by_team["cv"] <= 4, f"cv took nlp's reserved share: {by_team}"
    assert by_team["nlp"] <= 4 and sum(by_team.values()) <= 8
    assert by_team["cv"] > 0


def test_preemption_stops_the_borrower_with_the_fewest_completed_trials_as_the_governor_recorded_them(
    lending_world: Any,
) -> None:
    world, queue, ids = lending_world
    services = world.env.services
    # Tokens whose job names sort the busier borrower first: key order alone would stop the wrong one
    tokens = sorted((f"t{i}" for i in range(40)), key=lambda t: job_name_for("cv", t))
    busy, fresh = tokens[0], tokens[1]

    def send(token: str, parallel: int = 2, team: str = "cv") -> None:
        who, kw = (ids["cv"], {"team": "cv", "role": CV_EXEC}) if team == "cv" else (ids["nlp"], {})
        req = request(parallel=parallel, **kw)
        req["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] = 12
        submit(read_record(record(f"{who}:bo", req, token)), services, queue)

    # Given cv runs its share (2) and a borrower (2) that has finished trials, then a second borrower
    send("own")
    send(busy)
    while not services.store.get_job(job_name_for("cv", busy).lower()) or not (
        services.store.get_job(job_name_for("cv", busy).lower()) or {}
    ).get("trials_recorded"):
        world.pump(60)
    send(fresh)
    world.pump(60)
    # When nlp wants 4 of its lent share (2 are free)
    send("nlp-1", parallel=4, team="nlp")
    # Then the borrower with no completed trial is the one stopped, not the busier one
    decisions = {name: services.store.decisions(job_name_for("cv", name).lower()) for name in (busy, fresh)}
    assert [d["rule"] for d in decisions[fresh]] == ["queue-preempt"]
    assert decisions[busy] == []
