"""Replays that know what they do not know (issue 17, mechanism 9).

AWS's documented tuning-job event carries no ``HyperParameterTuningJobConfig`` (so no MaxParallel) and
may carry no ``Tags``. The deployed governor completes such an event with DescribeHyperParameterTuningJob
and ListTags; a replay of a capture can only answer those from the events, or from the facts the deployed
governor stored in its table (``--facts-from-table``).
"""

from __future__ import annotations

import copy
import io
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from governor_client.offline.environment import create_table
from governor_client.replay import render_summary, replay_events, replay_lines
from governor_client.replay.cli import add_arguments, run_command
from governor_client.replay.model import ReplayResult
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.replay.conftest import (
    REGION,
    TUNING,
    Capture,
    capture,
    event_time,
    schema_validator,
    write_jsonl,
)
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.policy import parse_policy

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-thin_arrivals")

P3_2X, P3_8X = "ml.p3.2xlarge", "ml.p3.8xlarge"
POLICY = f"mode: enforce\nquotas: {{{P3_2X}: 8}}\n"
DEPLOYED = "tuning-governor-deployed"


@pytest.fixture(scope="module")
def month() -> Capture:
    """Team A (4 x 1 p3.2xlarge) then team B a minute later (3 x 2: 4 + 6 > 8 breaches the quota), and an
    nlp job whose own tag sets a $20 budget (it spends about $48)."""
    return capture(
        [
            (
                0,
                seed_tuning_request("team-a-hpo", team="vision", instance_type=P3_2X, instance_count=1, max_parallel=4),
            ),
            (
                60,
                seed_tuning_request("team-b-hpo", team="speech", instance_type=P3_2X, instance_count=2, max_parallel=3),
            ),
            (
                120,
                seed_tuning_request(
                    "p3-budget",
                    team="nlp",
                    instance_type=P3_8X,
                    instance_count=8,
                    max_parallel=2,
                    max_jobs=20,
                    extra_tags={"governance:budget-usd": "20"},
                ),
            ),
        ]
    )


def thin(event: dict[str, Any]) -> dict[str, Any]:
    """A tuning event as AWS documents it: no HyperParameterTuningJobConfig and no Tags (the training
    definition, with its ResourceConfig, stays)."""
    if event["detail-type"] != TUNING:
        return event
    out = copy.deepcopy(event)
    out["detail"].pop("HyperParameterTuningJobConfig", None)
    out["detail"].pop("Tags", None)
    return out


def thin_lines(month: Capture) -> list[str]:
    return [json.dumps(thin(e)) for e in month.events]


def first_in_progress(month: Capture, job: str) -> dict[str, Any]:
    return next(
        e
        for e in month.events
        if e["detail-type"] == TUNING
        and e["detail"]["HyperParameterTuningJobName"] == job
        and e["detail"]["HyperParameterTuningJobStatus"] == "InProgress"
    )


@pytest.fixture
def deployed_table(mocked_aws: None, month: Capture) -> Any:
    """The deployed governor's table after it handled the jobs' arrivals: each job item written by the
    governor's own DynamoDB adapter from the job as DescribeHyperParameterTuningJob + ListTags gave it."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    create_table(dynamodb, DEPLOYED)
    store = GovernorStore(dynamodb, DEPLOYED)
    policy = parse_policy(POLICY, "policy")
    for name in ("team-a-hpo", "team-b-hpo", "p3-budget"):
        event = first_in_progress(month, name)
        job = TuningJob.model_validate(event["detail"])
        team = policy.team_of(job.tags, job.role_arns())
        store.upsert_job(job, region=REGION, team=team, owner=None, event_time=event_time(event))
    return dynamodb


def incomplete(result: ReplayResult) -> dict[str, list[str]]:
    return {gap.job: list(gap.missing) for gap in result.facts.incomplete}


def test_a_thin_capture_names_every_job_judged_on_incomplete_facts(month: Capture) -> None:
    # Given the documented (thin) arrival events, replayed with nothing else to go on
    result = replay_lines(thin_lines(month), parse_policy(POLICY, "policy"))
    # Then the concurrency breach is missed (MaxParallel unknown: judged as 1), and the result says why
    assert [a.job for a in result.actions if a.rule == "concurrency"] == []
    assert incomplete(result) == {
        "team-a-hpo": ["configuration", "tags"],
        "team-b-hpo": ["configuration", "tags"],
        "p3-budget": ["configuration", "tags"],
    }
    gap = next(g for g in result.facts.incomplete if g.job == "team-b-hpo")
    assert gap.first_at == event_time(first_in_progress(month, "team-b-hpo"))
    assert gap.completed_at is None
    assert result.facts.table is None
    schema_validator().validate(json.loads(result.model_dump_json()))
    # And the printed summary says so too, never silently
    summary = render_summary(result, events_source="thin.jsonl")
    assert "Judged on incomplete facts: 3 jobs (configuration 3, tags 3)" in summary
    assert "--facts-from-table" in summary


def test_the_full_capture_is_judged_on_complete_facts(month: Capture) -> None:
    result = replay_lines((json.dumps(e) for e in month.events), parse_policy(POLICY, "policy"))
    assert result.facts.incomplete == []
    assert "incomplete facts" not in render_summary(result, events_source="full.jsonl")


def test_facts_from_the_deployed_table_judge_as_aws_did(month: Capture, deployed_table: Any, tmp_path: Path) -> None:
    # Given the thin capture and the deployed governor's table
    events = write_jsonl(tmp_path / "thin.jsonl", (thin(e) for e in month.events))
    # When replayed with the table's facts
    result = replay_events(events, parse_policy(POLICY, "policy"), facts_table=DEPLOYED, dynamodb=deployed_table)
    # Then team B is stopped at its arrival: 4 + 6 > 8, as the deployed governor judged it
    concurrency = [a for a in result.actions if a.rule == "concurrency"]
    assert [(a.job, a.at) for a in concurrency] == [("team-b-hpo", event_time(first_in_progress(month, "team-b-hpo")))]
    [decision] = [d for d in result.jobs["team-b-hpo"].decisions if d.rule == "concurrency"]
    assert "usage 4 + demand 6 > limit 8 (policy quotas)" in decision.message
    # And the nlp job's own budget tag (from the table) stops it, which the thin replay never sees
    assert [a.job for a in result.actions if a.rule == "budget"] == ["p3-budget"]
    assert result.facts.incomplete == []
    assert (result.facts.table, result.facts.jobs_from_table) == (DEPLOYED, 3)
    # And the what-if is the full capture's: the same stops at the same times, the same savings
    full = replay_lines((json.dumps(e) for e in month.events), parse_policy(POLICY, "policy"))
    assert (result.actions, result.savings, result.jobs) == (full.actions, full.savings, full.jobs)


def test_the_thin_replay_misses_the_tag_budget(month: Capture) -> None:
    result = replay_lines(thin_lines(month), parse_policy(POLICY, "policy"))
    assert [a.job for a in result.actions if a.rule == "budget"] == []


def test_the_command_reads_the_table_and_says_what_it_read(month: Capture, deployed_table: Any, tmp_path: Path) -> None:
    events = write_jsonl(tmp_path / "thin.jsonl", (thin(e) for e in month.events))
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    out, err = io.StringIO(), io.StringIO()
    code = run_command(_args([str(events), "--policy", str(policy), "--facts-from-table", DEPLOYED]), out, err)
    assert (code, err.getvalue()) == (0, "")
    assert f"Facts from table {DEPLOYED}: 3 of 3 jobs" in out.getvalue()
    assert "stop team-b-hpo (concurrency)" in out.getvalue()


def test_a_missing_table_exits_3_with_one_line(mocked_aws: None, month: Capture, tmp_path: Path) -> None:
    events = write_jsonl(tmp_path / "thin.jsonl", (thin(e) for e in month.events))
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    out, err = io.StringIO(), io.StringIO()
    code = run_command(_args([str(events), "--policy", str(policy), "--facts-from-table", "no-such-table"]), out, err)
    assert code == 3  # docs/reference/cli.md: a table that does not exist is "AWS cannot be used from here"
    assert err.getvalue().count("\n") == 1
    assert "no-such-table" in err.getvalue()


def test_a_job_missing_from_the_table_stays_incomplete(month: Capture, deployed_table: Any, tmp_path: Path) -> None:
    # Given a table that lost team A's item (e.g. a governor deployed after it arrived)
    deployed_table.delete_item(TableName=DEPLOYED, Key={"pk": {"S": "JOB#team-a-hpo"}, "sk": {"S": "META"}})
    events = write_jsonl(tmp_path / "thin.jsonl", (thin(e) for e in month.events))
    result = replay_events(events, parse_policy(POLICY, "policy"), facts_table=DEPLOYED, dynamodb=deployed_table)
    assert incomplete(result) == {"team-a-hpo": ["configuration", "tags"]}
    assert result.facts.jobs_from_table == 2


def test_a_later_fuller_event_re_judges_a_job_first_judged_without_its_configuration(month: Capture) -> None:
    """The admission side (governance/admission.py): a reservation made on incomplete facts is judged
    again when fuller facts arrive. The replay feeds the fuller event normally."""
    # Given team B's thin arrival (judged as 1 x 2 instances: it fits), then its full event a minute later
    full = first_in_progress(month, "team-b-hpo")
    fuller_at = event_time(full) + timedelta(minutes=1)
    later = copy.deepcopy(full)
    later["time"] = fuller_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    later["detail"]["LastModifiedTime"] = int(fuller_at.timestamp() * 1000)
    lines: list[str] = []
    for event in month.events:
        # Only team B's events are thin: team A's full arrival holds its 4 instances.
        lines.append(json.dumps(thin(event) if event is full else event))
        if event is full:
            lines.append(json.dumps(later))
    lines.sort(key=lambda line: json.loads(line)["time"])  # stable: file order within a second
    result = replay_lines(lines, parse_policy(POLICY, "policy"))
    # Then the replay notes when the missing facts came, and the job is re-judged then: 4 + 6 > 8
    gap = next(g for g in result.facts.incomplete if g.job == "team-b-hpo")
    assert gap.completed_at == fuller_at
    assert [(a.job, a.at) for a in result.actions if a.rule == "concurrency"] == [("team-b-hpo", fuller_at)]


def _args(argv: list[str]) -> Any:
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_the_html_page_lists_the_jobs_judged_on_incomplete_facts(month: Capture, tmp_path: Path) -> None:
    from governor_client.replay.page import ReplayInputs, write_replay_page
    from governor_client.replay.timeline import Timeline

    policy = parse_policy(POLICY, "policy")
    timeline = Timeline(jobs_drawn=0)
    result = replay_lines(thin_lines(month), policy, probe=timeline)
    page = write_replay_page(
        result, timeline, policy, ReplayInputs("thin.jsonl", "policy.yaml", "every 5 min"), tmp_path
    )
    text = page.read_text()
    rows = re.findall(r"<tr class='incomplete' data-job=\"([^\"]+)\" data-missing=\"([^\"]+)\">", text)
    assert rows == [
        ("team-a-hpo", "configuration tags"),
        ("team-b-hpo", "configuration tags"),
        ("p3-budget", "configuration tags"),
    ]
    assert "--facts-from-table TABLE" in text
