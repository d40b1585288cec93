"""The FIFO stand-in scheduler: priority then FIFO, shares as hard limits, no starvation of large
requests by small ones behind them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tuning_governor.domain.capacity import Holder
from tuning_governor.domain.queue_schedule import fifo_schedule
from tuning_governor.models.queue import QueuedRequest

P3 = "ml.p3.2xlarge"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def req(name: str, team: str, count: int, minutes: int = 0, priority: int = 0) -> QueuedRequest:
    return QueuedRequest(
        client_token=name,
        team=team,
        submitter="arn:aws:iam::123456789012:role/x",
        job_name=name,
        request={},
        demand={P3: count},
        priority=priority,
        enqueued_at=T0 + timedelta(minutes=minutes),
    )


def verdicts(entries: list[QueuedRequest], **kwargs: object) -> dict[str, str]:
    holdings = kwargs.get("holdings", [])
    shares = kwargs.get("shares", {})
    capacity = kwargs.get("capacity", {P3: 8})
    decided = fifo_schedule(entries, holdings, shares, capacity)  # type: ignore[arg-type]
    return {d.job_name: d.verdict for d in decided}


def test_requests_are_admitted_in_order_while_they_fit_and_a_large_one_is_not_overtaken() -> None:
    entries = [req("a", "nlp", 4), req("big", "cv", 6, 1), req("small", "nlp", 2, 2)]
    # 4 admitted; big (6) does not fit next to it (8); small would fit but waits behind big
    assert verdicts(entries) == {"a": "admit", "big": "wait", "small": "wait"}


def test_a_team_over_its_share_waits_without_holding_back_other_teams() -> None:
    held = [Holder("running", "tuning-job", "nlp", {P3: 3})]
    entries = [req("nlp-1", "nlp", 2), req("nlp-2", "nlp", 1, 1), req("cv-1", "cv", 2, 2)]
    out = verdicts(entries, holdings=held, shares={"nlp": {P3: 4}})
    assert out == {"nlp-1": "wait", "nlp-2": "wait", "cv-1": "admit"}


def test_a_request_that_can_never_fit_is_refused_and_holds_nothing_back() -> None:
    entries = [req("huge", "nlp", 9), req("ok", "cv", 8, 1)]
    decided = fifo_schedule(entries, [], {}, {P3: 8})
    assert [(d.job_name, d.verdict) for d in decided] == [("huge", "refuse"), ("ok", "admit")]
    assert "can never run" in decided[0].reason
