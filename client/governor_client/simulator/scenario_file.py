"""A scenario as a file (YAML or JSON): what ``tuning-governor simulate`` reads (docs/reference/cli.md, examples/).

    seed: 7                           # the trials' random draws (same file + seed = same event log)
    start: "2026-11-30T09:00:00Z"     # the virtual clock's start (UTC)
    trials:                           # how trials behave (the AMT stand-in's knobs)
      timing: default                 # default, or seed: the seed job's measured timings (~1-3 min trials)
      failure_rate: 0.05              # share of trials that fail
      spot_interruption_rate: 0.0     # share of spot trials interrupted
    delivery:                         # EventBridge's delivery faults (default: each event once, in order)
      same_id_duplicate_rate: 0.01
      max_delay_s: 30
    jobs:                             # CreateHyperParameterTuningJob calls, as data scientists make them
      - name: xgb-churn-hb
        at: 0                         # when: seconds after start, or 90s / 15m / 2h
        team: churn                   # the team tag (and owner, project)
        instance_type: ml.m5.xlarge
        instance_count: 3
        max_parallel: 4               # MaxParallelTrainingJobs
        max_jobs: 30                  # MaxNumberOfTrainingJobs
        spot: false
        tags: {governance:budget-usd: "50"}

Every job is the seed's XGBoost Hyperband job (``governor_client.simulator.scenarios.seed_tuning_request``) with
these fields changed. Unknown keys are errors (a typo never silently does nothing).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from governor_client.amt import DefaultTrialBehaviour
from governor_client.cli.errors import CommandError
from governor_client.simulator.delivery import DeliveryFaults
from governor_client.simulator.scenarios import SeedWorkload, seed_tuning_request
from governor_client.simulator.simulation import DEFAULT_START, CreateTuningJob, Scenario

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _seconds(value: Any) -> Any:
    """``90``, ``"90s"``, ``"15m"``, ``"2h"`` or ``"1h30m"`` as seconds; anything else is left to pydantic."""
    if isinstance(value, str) and (parts := re.fullmatch(r"\s*((?:\d+(?:\.\d+)?[smhd]\s*)+)", value)):
        return sum(float(n) * _UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([smhd])", parts.group(1)))
    return value


Seconds = Annotated[float, BeforeValidator(_seconds), Field(ge=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JobSpec(_Strict):
    name: str = Field(pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,31}$")
    at: Seconds = 0.0
    team: str = "churn"
    owner: str = "ana@example.com"
    instance_type: str = Field(default="ml.m5.xlarge", pattern=r"^ml\.[a-z0-9]+\.[a-z0-9]+$")
    instance_count: int = Field(default=1, ge=1)
    max_parallel: int = Field(default=2, ge=1)
    max_jobs: int = Field(default=10, ge=1)
    spot: bool = False
    tags: dict[str, str] = Field(default_factory=dict)
    account: str | None = Field(default=None, pattern=r"^[0-9]{12}$")
    """The account it runs in (default: the simulation's own): its events carry it."""
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
    """The region it runs in (default: the simulation's, us-east-1)."""


class TrialSpec(_Strict):
    timing: Literal["default", "seed"] = "default"
    failure_rate: float = Field(default=0.0, ge=0, le=1)
    spot_interruption_rate: float = Field(default=0.0, ge=0, le=1)
    launch_delay_s: Seconds = 0.0
    finish_delay_s: Seconds = 0.0


class DeliverySpec(_Strict):
    same_id_duplicate_rate: float = Field(default=0.0, ge=0, le=1)
    new_id_duplicate_rate: float = Field(default=0.0, ge=0, le=1)
    max_delay_s: Seconds = 0.0
    reorder_window: int = Field(default=0, ge=0)
    drop_rate: float = Field(default=0.0, ge=0, le=1)
    seed: int = 0


class ScenarioFile(_Strict):
    seed: int = 7
    start: datetime = DEFAULT_START
    trials: TrialSpec = TrialSpec()
    delivery: DeliverySpec = DeliverySpec()
    jobs: list[JobSpec] = Field(min_length=1)


@dataclass(frozen=True)
class LoadedScenario:
    """What a scenario file gives the simulator."""

    scenario: Scenario
    seed: int
    start: datetime
    faults: DeliveryFaults


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    more = exc.error_count() - 1
    return f"{where}: {first['msg']}" + (f" (and {more} more)" if more else "")


def _build(spec: ScenarioFile) -> LoadedScenario:
    names = [(job.account, job.region, job.name) for job in spec.jobs]
    if len(set(names)) != len(names):
        raise CommandError(
            "jobs: two jobs have the same name in one account and region; tuning job names are unique there"
        )
    actions = [
        CreateTuningJob(
            job.at,
            seed_tuning_request(
                job.name,
                team=job.team,
                owner=job.owner,
                instance_type=job.instance_type,
                instance_count=job.instance_count,
                max_jobs=job.max_jobs,
                max_parallel=job.max_parallel,
                spot=job.spot,
                extra_tags=job.tags,
            ),
            account=job.account,
            region=job.region,
        )
        for job in spec.jobs
    ]
    trials = spec.trials
    behaviour = (
        SeedWorkload(DefaultTrialBehaviour(seed=spec.seed, failure_rate=trials.failure_rate))
        if trials.timing == "seed"
        else None
    )
    scenario = Scenario(
        actions=actions,
        failure_rate=trials.failure_rate,
        spot_interruption_rate=trials.spot_interruption_rate,
        launch_delay_s=trials.launch_delay_s,
        finish_delay_s=trials.finish_delay_s,
        behaviour=behaviour,
    )
    start = spec.start if spec.start.tzinfo else spec.start.replace(tzinfo=UTC)
    return LoadedScenario(scenario, spec.seed, start, DeliveryFaults(**spec.delivery.model_dump()))


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read and check a scenario file; ``CommandError`` (exit 2) with one line naming the first problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise CommandError(f"cannot read scenario file {path}: {reason}") from None
    try:
        data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise CommandError(f"scenario file {path} is not valid YAML/JSON: {' '.join(str(exc).split())[:200]}") from None
    try:
        spec = ScenarioFile.model_validate(data)
    except ValidationError as exc:
        raise CommandError(f"scenario file {path} is invalid: {_problem(exc)} (see docs/reference/cli.md)") from None
    return _build(spec)
