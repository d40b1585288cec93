"""The queue's stored order is its order: the index sort key sorts as (priority desc, enqueued, token),
for every priority the policy allows and any times; the job name is a function of team and token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from tuning_governor.adapters.store.queue import request_item, request_of, waiting_sk
from tuning_governor.models.queue import QueuedRequest, job_name_for

T0 = datetime(2026, 12, 1, tzinfo=UTC)

entries = st.builds(
    lambda token, priority, ms, team: QueuedRequest(
        client_token=token,
        team=team,
        submitter="arn:aws:iam::123456789012:role/s",
        job_name=job_name_for(team, token),
        request={"x": 1.5},
        demand={"ml.p3.2xlarge": 2},
        priority=priority,
        enqueued_at=T0 + timedelta(milliseconds=ms),
    ),
    st.text(alphabet="abcdef0123456789-", min_size=1, max_size=12),
    st.integers(-1000, 1000),
    st.integers(0, 10**10),
    st.sampled_from(["nlp", "cv"]),
)


@given(st.lists(entries, min_size=2, max_size=20))
def test_the_index_sort_key_orders_requests_as_the_queue_does(batch: list[QueuedRequest]) -> None:
    by_key = sorted(batch, key=waiting_sk)
    by_order = sorted(batch, key=QueuedRequest.order)
    assert [e.order() for e in by_key] == [e.order() for e in by_order]


@given(entries)
def test_an_item_reads_back_as_the_request_it_stores(entry: QueuedRequest) -> None:
    assert request_of(request_item(entry)) == entry


@given(st.text(min_size=1, max_size=128), st.text(min_size=1, max_size=128), st.sampled_from(["nlp", "cv"]))
def test_job_names_are_valid_sagemaker_names_and_differ_per_token(a: str, b: str, team: str) -> None:
    name = job_name_for(team, a)
    assert name == job_name_for(team, a) and len(name) <= 32 and name.replace("-", "").isalnum()
    assert (name == job_name_for(team, b)) == (a == b)
