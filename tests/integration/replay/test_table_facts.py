"""``--facts-from-table``: a job item the deployed governor wrote, read back by the replay, completes a thin
event into what the governor judged (moto DynamoDB, the governor's own adapter writing the item)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from governor_client.offline.environment import create_table
from governor_client.replay.engine import Clock
from governor_client.replay.facts import read_table_facts
from governor_client.replay.lines import ReplayInputError
from governor_client.replay.sagemaker import EventSourcedSageMaker
from tests.conftest import load_event
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.adapters.store.jobs import job_attributes
from tuning_governor.models.events import TuningJobStateChange
from tuning_governor.models.tuning_job import TuningJob

TABLE = "deployed-governor"
AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
# What admission and the rules read from a job item (everything upsert_job derives from Describe + ListTags
# that the item keeps); the plan labels of several definitions are not kept (see facts_from_item).
JUDGED = ("max_parallel", "demand", "max_trials", "tags", "roles", "spot_training", "objectives", "strategy")
SAMPLES = [
    "tuning-inprogress",
    "tuning-instance-configs-inprogress",
    "tuning-multi-definition-inprogress",
    "tuning-tags-list-inprogress",
]


DOCUMENTED = {"HyperParameterTuningJobConfig", "Tags"}
# Thinner still: no training definition either (the instances then come from the table's plans alone).
BARE = DOCUMENTED | {"TrainingJobDefinition", "TrainingJobDefinitions"}


def thin(event: dict[str, Any], without: set[str] = DOCUMENTED) -> TuningJobStateChange:
    detail = {k: v for k, v in event["detail"].items() if k not in without}
    return TuningJobStateChange.model_validate({**event, "detail": detail})


@pytest.mark.parametrize("without", [DOCUMENTED, BARE], ids=["documented", "bare"])
@pytest.mark.parametrize("sample", SAMPLES)
def test_a_thin_event_completed_from_the_table_is_judged_on_what_the_governor_stored(
    mocked_aws: None, sample: str, without: set[str]
) -> None:
    # Given the deployed governor's item for the job, written from the full event
    event = load_event(sample)
    full = TuningJob.model_validate(event["detail"])
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_table(dynamodb, TABLE)
    GovernorStore(dynamodb, TABLE).upsert_job(full, region="us-east-1", team=None, owner=None, event_time=AT)
    # When the replay answers Describe + ListTags for the thin event with the table's facts
    facts = read_table_facts(TABLE, [full.key, "never-seen"], dynamodb)
    sagemaker = EventSourcedSageMaker(Clock(AT), facts.jobs)
    parsed = thin(event, without)
    sagemaker.observe(parsed, parsed.detail.model_dump(by_alias=True))
    described = sagemaker.describe_tuning_job(full.name)
    completed = parsed.detail.model_copy(
        update={
            "config": described.config,
            "training_job_definition": described.training_job_definition,
            "training_job_definitions": described.training_job_definitions,
            "tags": sagemaker.list_tags(described.arn or ""),
        }
    )
    # Then the item the replay's governor writes judges as the deployed one did, and nothing is missing
    want = job_attributes(full, region="us-east-1", team=None, owner=None, event_time=AT)
    got = job_attributes(completed, region="us-east-1", team=None, owner=None, event_time=AT)
    assert {k: got.get(k) for k in JUDGED} == {k: want.get(k) for k in JUDGED}
    assert [(p["on_demand"], p["spot"]) for p in got["admission"]] == [
        (p["on_demand"], p["spot"]) for p in want["admission"]
    ]
    assert sagemaker.gaps.jobs == {}
    assert set(facts.jobs) == {full.key}


def test_without_the_table_the_same_thin_event_is_a_gap(mocked_aws: None) -> None:
    event = load_event("tuning-inprogress")
    sagemaker = EventSourcedSageMaker(Clock(AT))
    parsed = thin(event)
    sagemaker.observe(parsed, parsed.detail.model_dump(by_alias=True))
    described = sagemaker.describe_tuning_job(parsed.detail.name)
    assert described.max_parallel == 1
    assert sagemaker.list_tags(described.arn or "") == {}
    [gap] = sagemaker.gaps.jobs.values()
    assert (gap.missing, gap.first_at, gap.completed_at) == ({"configuration", "tags"}, AT, None)


def test_an_unreadable_table_is_one_line(mocked_aws: None) -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    with pytest.raises(ReplayInputError, match=r"^cannot read facts from table gone: ResourceNotFoundException$"):
        read_table_facts("gone", ["a"], dynamodb)


def test_more_than_a_hundred_jobs_are_read_in_batches(mocked_aws: None) -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_table(dynamodb, TABLE)
    store = GovernorStore(dynamodb, TABLE)
    detail = load_event("tuning-inprogress")["detail"]
    for i in range(130):
        job = TuningJob.model_validate({**detail, "HyperParameterTuningJobName": f"job-{i:03d}"})
        store.upsert_job(job, region="us-east-1", team=None, owner=None, event_time=AT)
    facts = read_table_facts(TABLE, [f"job-{i:03d}" for i in range(150)], dynamodb)
    assert len(facts.jobs) == 130
