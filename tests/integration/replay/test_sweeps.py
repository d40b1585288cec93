"""The replay runs the scheduled sweep on the event timeline, as the deployed governor would.

A job that arrives, starts its trials and then says nothing for hours is only judged by the sweep:
these histories are written by hand so that the silence is exact.
"""

from __future__ import annotations

import argparse
import copy
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from governor_client.__main__ import build_parser, main
from governor_client.replay import (
    DEFAULT_SWEEP_EVERY,
    DEFAULT_SWEEP_SCHEDULE,
    ReplayInputError,
    parse_sweep_every,
    replay_lines,
)
from governor_client.replay.model import ReplayResult
from tests.conftest import load_event
from tests.integration.replay.conftest import schema_validator, write_jsonl
from tests.template.cfn import load_template
from tuning_governor.domain.pricing import bundled_catalog
from tuning_governor.policy import parse_policy

JOB = "silent-p3-hpo"
P3_2X = "ml.p3.2xlarge"
INSTANCES = 8
PARALLEL = 4
BUDGET = Decimal(50)
CREATED = datetime(2026, 11, 30, 9, 0, 30, tzinfo=UTC)
TRAINING_STARTS = CREATED + timedelta(seconds=90)  # 09:02:00
TRIAL_HOURS = 3
FIVE_MINUTES = timedelta(minutes=5)


def ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def envelope(template: str, at: datetime, detail: dict[str, Any], resource: str) -> dict[str, Any]:
    event = copy.deepcopy(load_event(template))
    event["id"] = f"{resource.rsplit('/', 1)[-1]}-{ms(at)}-{detail.get('TrainingJobStatus') or ''}"
    event["time"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    event["resources"] = [resource]
    event["detail"] = detail
    return event


def tuning_event(status: str, at: datetime, *, budget: Decimal | None) -> dict[str, Any]:
    detail = copy.deepcopy(load_event("tuning-inprogress")["detail"])
    arn = f"arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/{JOB}"
    detail.update(
        HyperParameterTuningJobName=JOB,
        HyperParameterTuningJobArn=arn,
        HyperParameterTuningJobStatus=status,
        CreationTime=ms(CREATED),
        LastModifiedTime=ms(at),
        HyperParameterTuningEndTime=ms(at) if status in {"Completed", "Stopped"} else None,
        BestTrainingJob=None,
        TrainingJobStatusCounters={
            "Completed": PARALLEL if status == "Completed" else 0,
            "InProgress": 0 if status == "Completed" else PARALLEL,
            "RetryableError": 0,
            "NonRetryableError": 0,
            "Stopped": 0,
        },
        ObjectiveStatusCounters={"Succeeded": 0, "Pending": PARALLEL, "Failed": 0},
        Tags={
            "team": "vision",
            "owner": "ana@example.com",
            **({"governance:budget-usd": str(budget)} if budget else {}),
        },
    )
    config = detail["HyperParameterTuningJobConfig"]
    config["ResourceLimits"] = {"MaxNumberOfTrainingJobs": PARALLEL, "MaxParallelTrainingJobs": PARALLEL}
    detail["TrainingJobDefinition"]["ResourceConfig"] = {
        "InstanceType": P3_2X,
        "InstanceCount": INSTANCES,
        "VolumeSizeInGB": 30,
    }
    detail["TrainingJobDefinition"]["StoppingCondition"] = {"MaxRuntimeInSeconds": 5 * 3600}
    return envelope("tuning-inprogress", at, detail, arn)


def trial_event(index: int, status: str, at: datetime) -> dict[str, Any]:
    detail = copy.deepcopy(load_event("training-inprogress")["detail"])
    name = f"{JOB}-{index:03d}-0000abcd"
    arn = f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}"
    end = TRAINING_STARTS + timedelta(hours=TRIAL_HOURS)
    detail.update(
        TrainingJobName=name,
        TrainingJobArn=arn,
        TuningJobArn=f"arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/{JOB}",
        TrainingJobStatus=status,
        SecondaryStatus="Completed" if status == "Completed" else "Training",
        ResourceConfig={"InstanceType": P3_2X, "InstanceCount": INSTANCES, "VolumeSizeInGB": 30},
        CreationTime=ms(CREATED + timedelta(seconds=5)),
        TrainingStartTime=ms(TRAINING_STARTS),
        TrainingEndTime=ms(end) if status == "Completed" else None,
        LastModifiedTime=ms(at),
        SecondaryStatusTransitions=[
            {"Status": "Starting", "StartTime": ms(CREATED + timedelta(seconds=5)), "EndTime": ms(TRAINING_STARTS)},
            {"Status": "Training", "StartTime": ms(TRAINING_STARTS)},
        ],
        Tags={},
    )
    if status == "Completed":
        seconds = TRIAL_HOURS * 3600
        detail.update(
            TrainingTimeInSeconds=seconds,
            BillableTimeInSeconds=seconds,
            FinalMetricDataList=[{"MetricName": "validation:auc", "Value": 0.9 + index / 100, "Timestamp": ms(end)}],
        )
    return envelope("training-inprogress", at, detail, arn)


def silent_history(budget: Decimal | None = None) -> list[dict[str, Any]]:
    """Arrival, four 8 x ml.p3.2xlarge trials going InProgress, three hours of silence, then the end."""
    end = TRAINING_STARTS + timedelta(hours=TRIAL_HOURS)
    events = [tuning_event("InProgress", CREATED, budget=budget)]
    events += [trial_event(i, "InProgress", TRAINING_STARTS) for i in range(1, PARALLEL + 1)]
    events += [trial_event(i, "Completed", end + timedelta(seconds=i)) for i in range(1, PARALLEL + 1)]
    events.append(tuning_event("Completed", end + timedelta(minutes=1), budget=budget))
    return events


def replay(events: list[dict[str, Any]], policy: str, sweep_every: timedelta | None) -> ReplayResult:
    return replay_lines((json.dumps(e) for e in events), parse_policy(policy, "test"), sweep_every=sweep_every)


def first_boundary_after(at: datetime, every: timedelta) -> datetime:
    """The first sweep time (a multiple of ``every`` since the epoch, UTC) strictly after ``at``."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    periods = (at - epoch) // every
    return epoch + (periods + 1) * every


def test_the_default_interval_is_the_templates_sweep_schedule() -> None:
    default = load_template()["Parameters"]["SweepSchedule"]["Default"]
    assert default == DEFAULT_SWEEP_SCHEDULE
    assert parse_sweep_every(default) == DEFAULT_SWEEP_EVERY == FIVE_MINUTES


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", None),
        ("off", None),
        ("5", timedelta(minutes=5)),
        ("15m", timedelta(minutes=15)),
        ("90s", timedelta(seconds=90)),
        ("1h", timedelta(hours=1)),
        ("rate(1 minute)", timedelta(minutes=1)),
        ("rate(15 minutes)", timedelta(minutes=15)),
        ("rate(2 hours)", timedelta(hours=2)),
    ],
)
def test_sweep_intervals_are_read_as_a_person_or_the_template_writes_them(
    text: str, expected: timedelta | None
) -> None:
    assert parse_sweep_every(text) == expected


@pytest.mark.parametrize("text", ["-5", "five", "cron(0/5 * * * ? *)", "0.5s", "rate(0 minutes)", ""])
def test_an_unusable_sweep_interval_is_refused_with_a_reason(text: str) -> None:
    with pytest.raises(ReplayInputError, match="sweep"):
        parse_sweep_every(text)


def test_a_runtime_cap_is_enforced_at_the_first_sweep_past_it_not_at_the_next_event() -> None:
    # Given a 1-hour runtime cap and a job that says nothing between 09:02 and 12:02
    policy = "mode: enforce\ndefaults:\n  max_runtime_hours: 1\n"
    history = silent_history()
    # When the history is replayed with the template's sweep, and without any sweep
    swept = replay(history, policy, DEFAULT_SWEEP_EVERY)
    unswept = replay(history, policy, None)
    # Then the sweep stops the job at the first sweep at least an hour after its creation
    expected = first_boundary_after(CREATED + timedelta(hours=1), FIVE_MINUTES)
    assert expected == datetime(2026, 11, 30, 10, 5, tzinfo=UTC)
    runtime = [d for d in swept.jobs[JOB].decisions if d.rule == "runtime"]
    assert [(d.action, d.at) for d in runtime] == [("stopped", expected)]
    assert [(a.rule, a.at) for a in swept.actions] == [("runtime", expected)]
    # and without sweeps nothing judges it until a trial's event, three hours in
    late = [d.at for d in unswept.jobs[JOB].decisions if d.rule == "runtime"]
    assert all(at >= TRAINING_STARTS + timedelta(hours=TRIAL_HOURS) for at in late)
    assert swept.savings.usd > unswept.savings.usd


def second_ceiling(at: datetime) -> datetime:
    floor = at.replace(microsecond=0)
    return floor if floor == at else floor + timedelta(seconds=1)


def test_a_budget_stops_at_the_check_scheduled_for_its_crossing_before_any_sweep_would() -> None:
    # Given a $50 budget on four 8 x ml.p3.2xlarge trials, all training from 09:02, then silent for 3 h
    price = bundled_catalog().price("us-east-1", P3_2X)
    assert price is not None
    burn_per_second = price.usd_per_hour * INSTANCES * PARALLEL / 3600
    crossed = TRAINING_STARTS + timedelta(seconds=float(BUDGET / burn_per_second))
    first_sweep_after = first_boundary_after(crossed, FIVE_MINUTES)
    # the moment to ask for the stop: 120 s of burn (what a stop still bills) before the crossing,
    # to the second (rounded up) of the one-time check
    check = second_ceiling(
        TRAINING_STARTS + timedelta(seconds=float((BUDGET - burn_per_second * 120) / burn_per_second))
    )
    assert check < crossed < first_sweep_after
    history = silent_history(budget=BUDGET)
    # When it is replayed with the template's sweep, and with --sweep-every 0
    swept = replay(history, "mode: enforce\n", DEFAULT_SWEEP_EVERY)
    unswept = replay(history, "mode: enforce\n", None)
    # Then the budget stop is made by the one-time check, with or without sweeps
    for result in (swept, unswept):
        budget = [d for d in result.jobs[JOB].decisions if d.rule == "budget" and d.verdict == "breach"]
        assert [(d.action, d.at) for d in budget] == [("stopped", check)]
        assert [(a.rule, a.at) for a in result.actions] == [("budget", check)]
        assert result.sweeps.budget_checks >= 1
    assert swept.savings.usd > 0


def test_with_no_stop_lead_the_check_falls_on_the_crossings_second() -> None:
    # Given the same job and a policy that asks for the stop at the budget itself (lead 0)
    price = bundled_catalog().price("us-east-1", P3_2X)
    assert price is not None
    burn_per_second = price.usd_per_hour * INSTANCES * PARALLEL / 3600
    crossed = TRAINING_STARTS + timedelta(seconds=float(BUDGET / burn_per_second))
    history = silent_history(budget=BUDGET)
    at_budget = "mode: enforce\ndefaults: {budget_stop_lead_seconds: 0}\n"
    # the check falls on the crossing's second, before the sweep after it
    result = replay(history, at_budget, DEFAULT_SWEEP_EVERY)
    [decision] = [d for d in result.jobs[JOB].decisions if d.rule == "budget" and d.verdict == "breach"]
    assert decision.at == second_ceiling(crossed)
    assert decision.at <= first_boundary_after(crossed, FIVE_MINUTES)


def test_no_sweep_runs_outside_the_history_and_none_with_sweep_every_zero() -> None:
    history = silent_history()
    swept = replay(history, "mode: monitor\n", DEFAULT_SWEEP_EVERY)
    unswept = replay(history, "mode: monitor\n", None)
    first, last = CREATED, TRAINING_STARTS + timedelta(hours=TRIAL_HOURS, minutes=1)
    boundaries = (last - first_boundary_after(first, FIVE_MINUTES)) // FIVE_MINUTES + 1
    assert swept.sweeps.every_seconds == 300
    assert swept.sweeps.runs == boundaries
    assert unswept.sweeps.every_seconds is None
    assert unswept.sweeps.runs == 0


def test_the_cli_takes_sweep_every_and_reports_the_sweeps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = write_jsonl(tmp_path / "events.jsonl", silent_history())
    policy = tmp_path / "policy.yaml"
    policy.write_text("mode: enforce\ndefaults:\n  max_runtime_hours: 1\n")
    out = tmp_path / "result.json"
    status = main(["replay", str(events), "--policy", str(policy), "--out", str(out), "--sweep-every", "15m"])
    printed = capsys.readouterr().out
    assert status == 0
    result = json.loads(out.read_text())
    schema_validator().validate(result)
    assert result["sweeps"]["every_seconds"] == 900
    assert [a["at"] for a in result["actions"]] == ["2026-11-30T10:15:00Z"]
    assert "Sweeps:" in printed and "every 15 min" in printed


def test_the_cli_defaults_to_the_template_schedule_and_refuses_a_bad_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args: argparse.Namespace = build_parser().parse_args(["replay", "e.jsonl", "--policy", "p.yaml"])
    assert args.sweep_every == DEFAULT_SWEEP_EVERY
    events = write_jsonl(tmp_path / "events.jsonl", silent_history())
    policy = tmp_path / "policy.yaml"
    policy.write_text("mode: monitor\n")
    # main returns the usage status (2) with one line naming the option
    assert main(["replay", str(events), "--policy", str(policy), "--sweep-every", "every so often"]) == 2
    assert "--sweep-every" in capsys.readouterr().err
