"""Hostile input at the model boundary: numbers DynamoDB cannot hold are rejected, bad tags dropped.

Issue 8, point 7: an integer too large for DynamoDB's number type, or an empty tag key, must be a
clean rejection or a sanitized value, never a serializer crash that EventBridge retries.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.conftest import load_event
from tuning_governor.app.envelope import parse_event
from tuning_governor.errors import RejectedEvent
from tuning_governor.models import limits
from tuning_governor.models.events import TrainingJobStateChange, TuningJobStateChange
from tuning_governor.models.limits import clean_tags, dynamodb_number_problem, tag_problem
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.policy import Policy

Mutation = Callable[[dict[str, Any]], None]
HUGE = 10**40  # 41 digits: boto3's serializer raises decimal.Rounded


def _set(*path: str | int, value: Any) -> Mutation:
    def mutate(detail: dict[str, Any]) -> None:
        node: Any = detail
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value

    return mutate


def _tuning(mutate: Mutation) -> dict[str, Any]:
    event = copy.deepcopy(load_event("tuning-inprogress"))
    mutate(event["detail"])
    return event


def _training(mutate: Mutation) -> dict[str, Any]:
    event = copy.deepcopy(load_event("training-completed"))
    mutate(event["detail"])
    return event


LIMITS = ("HyperParameterTuningJobConfig", "ResourceLimits")
RESOURCES = ("TrainingJobDefinition", "ResourceConfig")

HOSTILE_TUNING: dict[str, Mutation] = {
    "InstanceCount 1e40": _set(*RESOURCES, "InstanceCount", value=HUGE),
    "InstanceCount negative": _set(*RESOURCES, "InstanceCount", value=-3),
    "MaxParallelTrainingJobs 1e40": _set(*LIMITS, "MaxParallelTrainingJobs", value=HUGE),
    "MaxNumberOfTrainingJobs 1e40": _set(*LIMITS, "MaxNumberOfTrainingJobs", value=HUGE),
    "MaxNumberOfTrainingJobs as float 1e300": _set(*LIMITS, "MaxNumberOfTrainingJobs", value=1e300),
    "counter 1e40": _set("TrainingJobStatusCounters", "Completed", value=HUGE),
    "CreationTime 1e30 ms": _set("CreationTime", value=10**30),
    "CreationTime NaN": _set("CreationTime", value=float("nan")),
    "LastModifiedTime inf": _set("LastModifiedTime", value=float("inf")),
    "name of 3000 characters": _set("HyperParameterTuningJobName", value="a" * 3000),
    "name with a slash": _set("HyperParameterTuningJobName", value="a/b"),
    "status of 3000 characters": _set("HyperParameterTuningJobStatus", value="S" * 3000),
    "empty instance type": _set(*RESOURCES, "InstanceType", value=""),
    "instance type with a NUL": _set(*RESOURCES, "InstanceType", value="ml.m5\x00.xlarge"),
}

HOSTILE_TRAINING: dict[str, Mutation] = {
    "BillableTimeInSeconds 1e40": _set("BillableTimeInSeconds", value=HUGE),
    "BillableTimeInSeconds negative": _set("BillableTimeInSeconds", value=-60),
    "TrainingTimeInSeconds 1e40": _set("TrainingTimeInSeconds", value=HUGE),
    "InstanceCount 1e40": _set("ResourceConfig", "InstanceCount", value=HUGE),
    "metric 1e308": _set("FinalMetricDataList", 0, "Value", value=1e308),
    "metric inf": _set("FinalMetricDataList", 0, "Value", value=float("inf")),
    "metric NaN": _set("FinalMetricDataList", 0, "Value", value=float("nan")),
    "metric 1e-200": _set("FinalMetricDataList", 0, "Value", value=1e-200),
    "metric 'Infinity' string": _set("FinalMetricDataList", 0, "Value", value="Infinity"),
    "training job name of 3000 characters": _set("TrainingJobName", value="t" * 3000),
    "TuningJobArn ending in a huge name": _set("TuningJobArn", value="arn:aws:sagemaker:x/" + "j" * 3000),
    "TuningJobArn without a name": _set("TuningJobArn", value="arn:aws:sagemaker:us-east-1:1:tuning/"),
    "secondary status of 3000 characters": _set("SecondaryStatus", value="S" * 3000),
}


@pytest.mark.parametrize("mutation", HOSTILE_TUNING.values(), ids=HOSTILE_TUNING.keys())
def test_hostile_tuning_numbers_and_keys_are_rejected_with_a_reason(mutation: Mutation) -> None:
    with pytest.raises(RejectedEvent) as rejected:
        parse_event(_tuning(mutation), TuningJobStateChange)
    assert rejected.value.reason


@pytest.mark.parametrize("mutation", HOSTILE_TRAINING.values(), ids=HOSTILE_TRAINING.keys())
def test_hostile_training_numbers_and_keys_are_rejected_with_a_reason(mutation: Mutation) -> None:
    with pytest.raises(RejectedEvent) as rejected:
        parse_event(_training(mutation), TrainingJobStateChange)
    assert rejected.value.reason


@pytest.mark.parametrize("mutation", HOSTILE_TRAINING.values(), ids=HOSTILE_TRAINING.keys())
def test_a_describe_response_with_the_same_values_fails_validation_not_something_else(mutation: Mutation) -> None:
    # The adapter turns ValidationError into RejectedEvent; nothing else (OverflowError...) may escape.
    with pytest.raises(ValidationError):
        TrainingJob.model_validate(_training(mutation)["detail"])


def test_the_reason_names_the_field() -> None:
    with pytest.raises(RejectedEvent, match="BillableTimeInSeconds"):
        parse_event(_training(_set("BillableTimeInSeconds", value=HUGE)), TrainingJobStateChange)


_ser = TypeSerializer()


def _numbers(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list | tuple):
        return [n for v in value for n in _numbers(v)]
    return []


NUMERIC_TRAINING_FIELDS = [
    ("BillableTimeInSeconds",),
    ("TrainingTimeInSeconds",),
    ("ResourceConfig", "InstanceCount"),
    ("FinalMetricDataList", 0, "Value"),
]
ANY_NUMBER = st.one_of(
    st.integers(min_value=-(10**45), max_value=10**45),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([10**38, 10**38 - 1, 1e-130, 1e-131, 9.9e125, 1e126]),
)


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(NUMERIC_TRAINING_FIELDS), number=ANY_NUMBER)
def test_any_number_is_either_rejected_or_storable_in_dynamodb(field: tuple[Any, ...], number: Any) -> None:
    try:
        job = TrainingJob.model_validate(_training(_set(*field, value=number))["detail"])
    except ValidationError:
        return
    for value in _numbers(job.model_dump(mode="python")):
        # The store writes floats as Decimal(str(value)); both must survive boto3's serializer.
        _ser.serialize(Decimal(str(value)) if isinstance(value, float) else value)


@pytest.mark.parametrize(
    ("value", "storable"),
    [
        (0, True),
        (10**38 - 1, True),
        (10**38, False),  # 39 digits: Rounded
        (Decimal("9.9999999999999999999999999999999999999E+125"), True),
        (Decimal("1E+126"), False),
        (1e-130, True),
        (1e-131, False),
        (float("nan"), False),
        (float("inf"), False),
        (-(10**37), True),
    ],
)
def test_dynamodb_number_range(value: Any, storable: bool) -> None:
    assert (dynamodb_number_problem(value) is None) is storable


# -- tags ----------------------------------------------------------------------------------------------
def test_an_empty_tag_key_is_dropped_and_the_event_kept() -> None:
    event = _tuning(_set("Tags", value={"": "junk", "team": "vision"}))
    parsed = parse_event(event, TuningJobStateChange)
    assert parsed.detail.tags == {"team": "vision"}


@pytest.mark.parametrize(
    ("key", "value", "valid"),
    [
        ("team", "vision", True),
        ("cost-center", "", True),  # values may be empty
        ("Équipe", "Vision lab 2", True),  # Unicode letters and spaces
        ("a:b/c=d+e-f@g_h.i", "x", True),
        ("aws:cloudformation:stack-name", "gov", True),  # set by AWS: kept (see models/limits.py)
        ("", "x", False),
        ("k" * 129, "x", False),
        ("k", "v" * 257, False),
        ("team", "vision;drop table", False),
        ("team\n", "vision", False),
        ("team", "vi\x00sion", False),
        ("emoji", "\N{ROCKET}", False),
    ],
)
def test_tags_follow_aws_tagging_rules(key: str, value: str, valid: bool) -> None:
    assert (tag_problem(key, value) is None) is valid
    assert (clean_tags({key: value}) == {key: value}) is valid


@pytest.mark.parametrize(
    "tags",
    [
        [{"Key": "team", "Value": "vision"}, "junk", {"Value": "no key"}],
        {"team": "vision", "n": 5, "nested": {"a": "b"}},
        [{"Key": "team", "Value": "vision"}, {"Key": 7, "Value": "x"}],
    ],
)
def test_malformed_tag_entries_are_dropped_and_the_valid_ones_kept(tags: Any) -> None:
    assert TuningJob.model_validate(_tuning(_set("Tags", value=tags))["detail"]).tags == {"team": "vision"}


@pytest.mark.parametrize("tags", ["team=vision", 42, True])
def test_tags_of_the_wrong_shape_mean_no_tags(tags: Any) -> None:
    assert TuningJob.model_validate(_tuning(_set("Tags", value=tags))["detail"]).tags == {}


def test_an_invalid_tag_never_names_a_team_a_budget_or_an_exemption() -> None:
    policy = Policy.model_validate({"mode": "enforce", "teams": {"vision": {"budget_usd": 5}}})
    tags = {
        "team": "vision\u0000",
        "governance:exempt": "true\n",
        "governance:budget-usd": "1" * 300,
    }
    parsed = TuningJob.model_validate(_tuning(_set("Tags", value=tags))["detail"])
    assert parsed.tags == {}
    assert policy.team_of(parsed.tags) is None
    assert not policy.is_exempt(parsed.tags)
    assert policy.budget_for(parsed.tags).source != "tag"


# -- hyperparameters and free text ------------------------------------------------------------------------
def test_hyperparameters_aws_could_not_send_are_dropped_and_the_trial_kept() -> None:
    hyper = {"": "nameless", "eta": "0.1", "n": 5, "k" * 300: "x", "big": "v" * 3000}
    job = TrainingJob.model_validate(_training(_set("HyperParameters", value=hyper))["detail"])
    assert job.hyper_parameters == {"eta": "0.1"}


def test_at_most_100_hyperparameters_are_kept() -> None:
    hyper = {f"p{i}": str(i) for i in range(150)}
    job = TrainingJob.model_validate(_training(_set("HyperParameters", value=hyper))["detail"])
    assert len(job.hyper_parameters) == 100


def test_a_long_failure_reason_is_cut_to_aws_limit() -> None:
    job = TrainingJob.model_validate(_training(_set("FailureReason", value="x" * 100_000))["detail"])
    assert job.failure_reason is not None
    assert len(job.failure_reason) == 1024


def test_every_sample_event_still_parses_unchanged() -> None:
    for name in ("tuning-inprogress", "tuning-tags-list-inprogress", "training-completed", "training-spot-completed"):
        event = load_event(name)
        parsed: TuningJobStateChange | TrainingJobStateChange
        if event["detail-type"].startswith("SageMaker Hyper"):
            parsed = parse_event(event, TuningJobStateChange)
        else:
            parsed = parse_event(event, TrainingJobStateChange)
        raw_tags = event["detail"].get("Tags") or {}
        expected = {t["Key"]: t["Value"] for t in raw_tags} if isinstance(raw_tags, list) else raw_tags
        assert parsed.detail.tags == expected


@pytest.mark.parametrize("amount", ["0." + "0" * 199 + "1", "1" * 200])
def test_a_valid_tag_whose_budget_dynamodb_cannot_hold_is_ignored(amount: str) -> None:
    # A tag value of digits is a valid AWS tag; as a budget it would end up in the decision's numbers.
    policy = Policy()
    assert tag_problem(policy.budget_tag, amount) is None
    budget = policy.budget_for({policy.budget_tag: amount})
    assert budget.source != "tag"
    assert budget.warning


def test_at_most_50_user_tags_are_kept_besides_aws_ones() -> None:
    tags = {f"tag{i:03d}": "v" for i in range(80)} | {"aws:cloudformation:stack-name": "gov"}
    kept = clean_tags(tags)
    assert len(kept) == 51
    assert "aws:cloudformation:stack-name" in kept
    assert "tag049" in kept
    assert "tag050" not in kept


@pytest.mark.parametrize(
    ("field", "value"),
    [("region", "r" * 5000), ("region", "us east 1"), ("id", "i" * 5000), ("id", "")],
)
def test_envelope_values_stored_with_records_are_bounded(field: str, value: str) -> None:
    event = _training(lambda detail: None)
    event[field] = value
    with pytest.raises(RejectedEvent):
        parse_event(event, TrainingJobStateChange)


def test_a_huge_objective_metric_name_is_rejected() -> None:
    def mutate(detail: dict[str, Any]) -> None:
        detail["FinalMetricDataList"][0]["MetricName"] = "m" * 100_000

    with pytest.raises(RejectedEvent):
        parse_event(_training(mutate), TrainingJobStateChange)


def test_text_dynamodb_cannot_store_is_rejected_or_dropped() -> None:
    # A lone surrogate parses from JSON ("\ud800") but is not UTF-8, which DynamoDB strings are.
    with pytest.raises(RejectedEvent):
        parse_event(_training(_set("SecondaryStatus", value="Training\ud800")), TrainingJobStateChange)
    hyper = {"eta": "0.1", "bad\ud800": "x", "worse": "\udfff"}
    assert TrainingJob.model_validate(_training(_set("HyperParameters", value=hyper))["detail"]).hyper_parameters == {
        "eta": "0.1"
    }
    assert clean_tags({"team": "vi\ud800sion"}) == {}


# Text with lone surrogates (what json.loads makes of "\ud800"), tag punctuation and long strings: the
# whole-map check of a valid map and the entry-by-entry check must keep the same entries.
_TEXT = st.text(max_size=4) | st.sampled_from(["k" * 129, "v" * 2501, "", "\ud800", "a\udfff", "team:a/b"])
_MAPS = st.dictionaries(_TEXT | st.integers(), _TEXT | st.integers() | st.none(), max_size=6) | st.builds(
    lambda n, aws: {f"{'aws:' if i < aws else ''}p{i}": "v" for i in range(n)}, st.integers(45, 105), st.integers(0, 8)
)


@settings(max_examples=300)
@given(value=_MAPS)
def test_a_map_kept_whole_is_what_the_entry_by_entry_check_keeps(value: dict[Any, Any]) -> None:
    whole = (limits.clean_hyperparameters(dict(value)), limits.clean_tags(dict(value)))
    with pytest.MonkeyPatch.context() as patch:  # the loop alone, for every map
        patch.setattr(limits, "_valid_hyperparameter_map", lambda _value: False)
        patch.setattr(limits, "_valid_tag_map", lambda _value: False)
        entry_by_entry = (limits.clean_hyperparameters(dict(value)), limits.clean_tags(dict(value)))
    assert whole == entry_by_entry
