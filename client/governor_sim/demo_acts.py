"""The demo's two acts: the policies, the tuning jobs each act launches, and what an act produced."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from governor_sim.scenarios import seed_tuning_request
from governor_sim.simulation import CreateTuningJob, Scenario, SimulationResult
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
