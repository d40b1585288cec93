"""`make demo`'s Act 3 (issue 20, item 6): the speech job Act 1 stops on arrival for concurrency is,
submitted to the queue instead, queued (reported with its position), created once vision's job frees
the quota, and runs to completion; nothing is stopped."""

from __future__ import annotations

import io
from typing import Any

import pytest

from governor_client.demo import run as demo
from governor_client.demo.acts import QUEUED_JOB

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("demo_queue_act")


@pytest.fixture(scope="module")
def printed_and_data() -> tuple[str, dict[str, Any]]:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            mp.setenv(key, "testing")
        data = demo.run(out=out)
    return out.getvalue(), data


def test_the_job_act_one_stops_is_queued_then_admitted_then_completed(
    printed_and_data: tuple[str, dict[str, Any]],
) -> None:
    text, data = printed_and_data
    # Act 1: created directly, it is stopped on arrival for concurrency
    assert data["summaries"][QUEUED_JOB].status == "Stopped"
    # Act 3: submitted, it is queued at position 1, then admitted, and its job completes all its trials
    [request] = data["queue"]
    name = request["job_name"]
    assert (request["client_token"], request["team"], request["state"]) == (QUEUED_JOB, "speech", "admitted")
    subjects = [str(m["Subject"]) for m in data["sns"] if name in str(m["Subject"])]
    assert subjects == [
        f"[tuning-governor] {name} (speech): queued, position 1",
        f"[tuning-governor] {name} (speech): admitted: the tuning job was created",
        f"[tuning-governor] {name} completed: $2.61",
    ]
    summary = data["summaries"][name.lower()]
    assert (summary.status, summary.trials_total, summary.team) == ("Completed", 12, "speech")
    # Nothing in Act 3 is stopped, and the act's closing lines say what happened
    assert not [d for d in data["decisions"][name] if d.get("action") == "stopped"]
    assert f"The queue: {QUEUED_JOB} (speech) submitted at + 10.0 min, queued at position 1; admitted" in text
    assert "submitted to the queue it waited and ran instead: no launch thrown away" in text
    assert data["errors"] == 0
