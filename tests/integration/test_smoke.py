"""The deploy guide's post-deploy smoke test, on moto: what `sam remote invoke` of the sweep and of the tuning
handler with events/tuning-docs-shape-inprogress.json answers in an account that has none of the sample's jobs."""

from __future__ import annotations

import re
from pathlib import Path

import sweep
import tuning_events
from governor_client.simulator.runner import FakeLambdaContext
from tests.conftest import load_event
from tests.integration.conftest import World

README = (Path(__file__).resolve().parents[2] / "docs/how-to/deploy.md").read_text()


def test_the_smoke_commands_in_the_readme_are_these() -> None:
    commands = re.findall(r"^sam remote invoke .*$", README, flags=re.MULTILINE)
    assert commands == [
        "sam remote invoke SweepFunction --stack-name tuning-governor",
        "sam remote invoke TuningEventsFunction --stack-name tuning-governor --event-file events/tuning-docs-shape-inprogress.json",
    ]


def test_the_sweep_answers_with_what_it_found_and_no_error(world: World) -> None:
    report = sweep.handler({"source": "aws.events"}, FakeLambdaContext("sweep"), services=world.env.services)
    assert report["errors"] == []
    assert {"finalised", "discovered", "decisions", "capacity"} <= set(report)
    # it wrote the capacity snapshot: its table grant works
    table = world.env.services.settings.table_name
    item = world.env.dynamodb.get_item(TableName=table, Key={"pk": {"S": "CAPACITY"}, "sk": {"S": "SNAPSHOT"}})
    assert "Item" in item


def test_the_sample_tuning_event_is_dropped_as_a_job_this_account_does_not_have(world: World) -> None:
    outcome = tuning_events.handler(
        load_event("tuning-docs-shape-inprogress"), FakeLambdaContext("tuning-events"), services=world.env.services
    )
    assert outcome["outcome"] == "dropped"
    # and nothing was written for it: a smoke test leaves no job behind in the table
    job = load_event("tuning-docs-shape-inprogress")["detail"]["HyperParameterTuningJobName"]
    assert world.env.services.store.get_job(job.lower()) is None
