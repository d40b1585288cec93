"""The demo's three acts: the policies, the tuning jobs each act launches, and what an act produced."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from governor_client.simulator.scenarios import seed_tuning_request
from governor_client.simulator.simulation import CreateTuningJob, Scenario, SimulationResult, SubmitTuningJob
from tuning_governor.models.queue import QueuedRequest
from tuning_governor.models.records import JobSummary

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SEED_JOB = "xgb-churn-hb"
P3_2X, P3_8X = "ml.p3.2xlarge", "ml.p3.8xlarge"

ENFORCE = """
mode: enforce
team_tag: team
defaults:
  max_runtime_hours: 48
"""
MONITOR = ENFORCE.replace("mode: enforce", "mode: monitor")
SPEECH_SUBMITTER = "arn:aws:iam::123456789012:role/speech-submit"
SPEECH_ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-speech"
QUEUE = (
    ENFORCE
    + f"""teams:
  speech:
    submitters: ['{SPEECH_SUBMITTER}']
    execution_roles: ['{SPEECH_ROLE}']
"""
)
"""Act 3's policy: Act 1's, plus who may submit for team speech and the execution role it may pass."""

ACT_ONE = Scenario(
    actions=[
        CreateTuningJob(0, seed_tuning_request(SEED_JOB)),
        CreateTuningJob(
            120,
            seed_tuning_request(
                "vision-resnet-hpo", team="vision", owner="li@example.com",
                instance_type=P3_2X, instance_count=1, max_parallel=4, max_jobs=12,
            ),
        ),
        CreateTuningJob(
            600,
            seed_tuning_request(
                "speech-asr-hpo", team="speech", owner="sam@example.com",
                instance_type=P3_2X, instance_count=2, max_parallel=3, max_jobs=12,
            ),
        ),
        CreateTuningJob(
            900,
            seed_tuning_request(
                "nlp-bert-hpo", team="nlp", owner="kim@example.com", instance_type=P3_8X,
                instance_count=8, max_parallel=2, max_jobs=50, extra_tags={"governance:budget-usd": "50"},
            ),
        ),
    ]
)  # fmt: skip
ACT_TWO = Scenario(
    actions=[
        CreateTuningJob(
            0,
            seed_tuning_request(
                "nlp-bert-pilot", team="nlp", owner="kim@example.com", instance_type=P3_8X,
                instance_count=8, max_parallel=2, max_jobs=50, extra_tags={"governance:budget-usd": "50"},
            ),
        )
    ]
)  # fmt: skip


QUEUED_JOB = "speech-asr-hpo"
"""The job Act 1 stops on arrival for concurrency and Act 3 submits to the queue instead."""
_VISION, _SPEECH = ACT_ONE.actions[1], ACT_ONE.actions[2]
assert isinstance(_VISION, CreateTuningJob) and isinstance(_SPEECH, CreateTuningJob)
ACT_THREE = Scenario(
    actions=[
        CreateTuningJob(_VISION.at_s, {**_VISION.request, "HyperParameterTuningJobName": "vision-resnet-hpo2"}),
        SubmitTuningJob(
            _SPEECH.at_s,
            {
                **_SPEECH.request,
                "TrainingJobDefinition": {**_SPEECH.request["TrainingJobDefinition"], "RoleArn": SPEECH_ROLE},
            },
            submitter=SPEECH_SUBMITTER,
            client_token=QUEUED_JOB,
        ),
    ]
)
"""Act 1's two p3.2xlarge teams on the same quota of 8; speech's job is submitted (with speech's own
execution role, the one its policy lists), not created."""


@dataclass
class ActResult:
    title: str
    mode: str
    result: SimulationResult
    summaries: dict[str, JobSummary]
    decisions: dict[str, list[dict[str, Any]]]
    sns: list[dict[str, Any]]
    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    report: Path | None = None
    """The act's HTML report (``tuning-governor report`` of the act's account), when one was asked for."""
    queue: list[QueuedRequest] = field(default_factory=list)
    """The requests the act submitted to the queue, as the queue holds them at the act's end."""
