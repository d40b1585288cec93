"""Histories for replay tests, captured from the AMT stand-in, and what the tests compute from them by hand."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import jsonschema  # type: ignore[import-untyped,unused-ignore]
from moto import mock_aws

from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import build_environment
from governor_client.simulator.delivery import DeliveryFaults
from governor_client.simulator.runner import deliver_all
from governor_client.simulator.simulation import Simulation
from governor_client.simulator.workload import many_jobs
from tests.conftest import ROOT
from tuning_governor.models.records import JobSummary

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
REGION = "us-east-1"
TERMINAL = {"Completed", "Stopped", "Failed"}
TRAINING = "SageMaker Training Job State Change"
TUNING = "SageMaker HyperParameter Tuning Job State Change"
SCHEMA_PATH = ROOT / "docs" / "replay-result.schema.json"


def busy_account_log(path: Path, trial_events: int) -> Path:
    """The simulator's event log of a busy account (``many_jobs``, five teams; 1 % same-id and 2 % new-id
    duplicates, delays up to 5 s), written to ``path`` without the handlers."""
    faults = DeliveryFaults(same_id_duplicate_rate=0.01, new_id_duplicate_rate=0.02, max_delay_s=5.0, seed=11)
    with mock_aws(), Simulation(many_jobs(trial_events), seed=7, faults=faults, handlers=False, event_log=path) as sim:
        sim.run()
    return path


@dataclass
class Capture:
    """Every event the stand-in emitted, oldest first; with ``live``, the summaries the handlers wrote."""

    events: list[dict[str, Any]]
    live: dict[str, JobSummary] = field(default_factory=dict)


def capture(
    launches: list[tuple[float, dict[str, Any]]],
    *,
    user_stops: Iterable[tuple[float, str]] = (),
    live: bool = False,
    seed: int = 7,
) -> Capture:
    """Run tuning jobs on the stand-in (launch ``request`` at virtual second ``t``), minute by minute.

    With ``live``, every event is delivered to the real handlers as it is emitted (the default policy,
    the stand-in's Service Quotas), as in a deployed governor.
    """
    pending = sorted(launches, key=lambda item: item[0])
    stops = sorted(user_stops)
    events: list[dict[str, Any]] = []
    summaries: dict[str, JobSummary] = {}
    with mock_aws():
        clock = VirtualClock(T0)
        with AmtStandIn(clock=clock, seed=seed) as amt:
            env = build_environment(clock=clock.now, region=REGION) if live else None
            sagemaker = boto3.client("sagemaker", region_name=REGION)
            elapsed = 0.0
            for _ in range(48 * 60):
                while pending and pending[0][0] <= elapsed:
                    sagemaker.create_hyper_parameter_tuning_job(**pending.pop(0)[1])
                while stops and stops[0][0] <= elapsed:
                    sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=stops.pop(0)[1])
                amt.advance(60)
                elapsed += 60
                batch = amt.drain_events()
                events.extend(batch)
                if env is not None:
                    deliver_all(batch, env.services)
                if not pending and not stops and amt.idle():
                    break
            else:
                raise AssertionError("the stand-in did not go idle")
            if env is not None:
                names = {e["detail"]["HyperParameterTuningJobName"] for e in events if e["detail-type"] == TUNING}
                for name in names:
                    summary = env.services.store.get_summary(name.lower())
                    assert summary is not None, f"the live run wrote no summary for {name}"
                    summaries[name] = summary
    return Capture(events=events, live=summaries)


def write_jsonl(path: Path, events: Iterable[dict[str, Any] | str]) -> Path:
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events))
    return path


def event_time(event: dict[str, Any]) -> datetime:
    return datetime.strptime(event["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def millis(value: Any) -> datetime:
    return datetime.fromtimestamp(float(value) / 1000, tz=UTC)


def finished_trials(events: Iterable[dict[str, Any]], job: str) -> dict[str, dict[str, Any]]:
    """The terminal detail of every trial of ``job`` (by TuningJobArn), by trial name."""
    out: dict[str, dict[str, Any]] = {}
    for event in events:
        detail = event["detail"]
        arn = detail.get("TuningJobArn") or ""
        if event["detail-type"] == TRAINING and arn.endswith(f"/{job}") and detail["TrainingJobStatus"] in TERMINAL:
            out[detail["TrainingJobName"]] = detail
    return out


def billable_seconds(detail: dict[str, Any]) -> int:
    if detail.get("BillableTimeInSeconds") is not None:
        return int(detail["BillableTimeInSeconds"])
    if detail.get("TrainingStartTime") and detail.get("TrainingEndTime"):
        return round((millis(detail["TrainingEndTime"]) - millis(detail["TrainingStartTime"])).total_seconds())
    return 0


def trial_cost(detail: dict[str, Any], usd_per_hour: Decimal) -> Decimal:
    count = int(detail["ResourceConfig"]["InstanceCount"])
    return (Decimal(billable_seconds(detail)) * count * usd_per_hour / 3600).quantize(Decimal("0.000001"))


def savings_by_hand(events: list[dict[str, Any]], job: str, stop_at: datetime, usd_per_hour: Decimal) -> float:
    """docs/reference/replay.md's formula, from the raw events: the trials' billed cost after the stop."""
    total = 0.0
    for detail in finished_trials(events, job).values():
        cost = float(trial_cost(detail, usd_per_hour))
        end = millis(detail["TrainingEndTime"])
        start = millis(detail["TrainingStartTime"])
        if end <= stop_at:
            continue
        total += cost if start >= stop_at else cost * (end - stop_at) / (end - start)
    return total


def schema_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
