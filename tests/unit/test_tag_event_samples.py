"""The tag-change samples in events/tags/ parse with the tag model and name the seed job; the tag values
in them are never what the governor stores (it re-reads ListTags: tests/integration/test_tags_as_they_are_now.py)."""

from __future__ import annotations

import pytest

from tests.conftest import load_event
from tuning_governor.app.envelope import parse_event
from tuning_governor.app.events.tags import is_tag_event
from tuning_governor.models.tag_changes import TagApiCall, TagChangeEvent, TagChangeOnResource, tagged_resource


@pytest.mark.parametrize(
    ("name", "kind"),
    [("tags/sagemaker-addtags-via-cloudtrail", TagApiCall), ("tags/tag-change-on-resource", TagChangeOnResource)],
)
def test_each_tag_sample_parses_and_names_the_tuning_job(name: str, kind: type) -> None:
    event = load_event(name)
    assert is_tag_event(event)
    parsed = parse_event(event, TagChangeEvent).root
    assert isinstance(parsed, kind)
    resource = tagged_resource(parsed.resource_arn())
    assert resource is not None and resource.is_tuning_job
    assert resource.name == "xgb-churn-hb-20261130"


def test_state_change_samples_are_not_tag_events() -> None:
    assert not is_tag_event(load_event("tuning-inprogress"))
    assert not is_tag_event(load_event("training-completed"))


@pytest.mark.parametrize(
    "arn",
    [
        None,
        "",
        "not-an-arn",
        "arn:aws:s3:::bucket/key",
        "arn:aws:sagemaker:us-east-1:123:hyper-parameter-tuning-job/x",
        "arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/a/b",
    ],
)
def test_only_sagemaker_resource_arns_name_a_resource(arn: str | None) -> None:
    assert tagged_resource(arn) is None
