"""The simulator runs the submission queue (issue 20, item 6): the same job that is stopped on arrival
when created directly over a full quota is, when submitted, queued and created once the quota frees."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from governor_client.amt.plans import TrialPlan
from governor_client.simulator.requests import tuning_request
from governor_client.simulator.scenarios import ROLE_ARN
from governor_client.simulator.simulation import CreateTuningJob, Scenario, Simulation, SubmitTuningJob
from tuning_governor.models.queue import job_name_for
from tuning_governor.policy import parse_policy

START = datetime(2026, 11, 30, 9, 0, 40, tzinfo=UTC)
P3 = "ml.p3.2xlarge"
SUBMITTER = "arn:aws:iam::123456789012:role/nlp-submit"


class HalfHourTrial:
    def plan(
        self, config: Mapping[str, Any] | None, definition: Mapping[str, Any], hp: Mapping[str, str], rng: random.Random
    ) -> TrialPlan:
        return TrialPlan(duration_s=1800.0, objective_value=0.8, startup_s=60.0, download_s=10.0, upload_s=10.0)


def _request(name: str) -> dict[str, Any]:
    return tuning_request(
        name, strategy="Random", team="nlp", instance_type=P3, instance_count=2, max_jobs=2, max_parallel=2,
        max_runtime_s=3 * 3600,
    )  # fmt: skip


def _run(second: CreateTuningJob | SubmitTuningJob) -> tuple[dict[str, str], list[str]]:
    """The first job takes the whole quota (4); the second arrives 5 minutes later. Each job's final
    status, and the jobs stopped for concurrency."""
    policy = parse_policy(
        f"mode: enforce\nquotas: {{{P3}: 4}}\n"
        f"teams: {{nlp: {{submitters: ['{SUBMITTER}'], execution_roles: ['{ROLE_ARN}']}}}}\n",
        "test",
    )
    scenario = Scenario([CreateTuningJob(0, _request("first")), second], behaviour=HalfHourTrial())
    with Simulation(scenario, start=START, environment={"policy": policy}, quiet_handlers=True) as sim:
        sim.amt.set_applied_quota(P3, 4)
        sim.run()
        jobs = sim.env.sagemaker.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]
        statuses = {j["HyperParameterTuningJobName"]: j["HyperParameterTuningJobStatus"] for j in jobs}
        stopped = [
            name for name in statuses
            for d in sim.env.services.store.decisions(name.lower())
            if d.get("rule") == "concurrency" and d.get("action") == "stopped"
        ]  # fmt: skip
    return statuses, stopped


def test_over_a_full_quota_a_job_created_directly_is_stopped_on_arrival(mocked_aws: None) -> None:
    statuses, stopped = _run(CreateTuningJob(300, _request("second")))
    assert statuses == {"first": "Completed", "second": "Stopped"} and stopped == ["second"]


def test_the_same_job_submitted_is_queued_and_runs_when_the_quota_frees(mocked_aws: None) -> None:
    # When the request the test above creates directly is submitted to the queue instead
    queued = SubmitTuningJob(300, _request("second"), submitter=SUBMITTER, client_token="second")
    statuses, stopped = _run(queued)
    # Then nothing is stopped, and it is created after the first job ends and runs to completion
    name = job_name_for("nlp", "second")
    assert stopped == []
    assert statuses == {"first": "Completed", name: "Completed"}
