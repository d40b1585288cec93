"""A replay of an organisation's events: a job is the job of its event's account and region.

The same captured job is replayed as if it ran in two member accounts (its events' envelopes and ARNs
rewritten to each account): two jobs, each judged under its own account's terms, the stop only in the
enforcing account. Before jobs were keyed by place, the two histories merged into one job.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from governor_client.replay import replay_lines
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.replay.conftest import Capture, capture
from tuning_governor.policy import parse_policy

pytestmark = pytest.mark.xdist_group("replay-accounts")

ENFORCED, MONITORED = "111111111111", "222222222222"
NAME = "p3-budget"


@pytest.fixture(scope="module")
def budget_run() -> Capture:
    """One job on 8 x p3.8xlarge whose own tag sets a $20 budget (about $48 if nothing stops it)."""
    request = seed_tuning_request(
        NAME,
        team="nlp",
        instance_type="ml.p3.8xlarge",
        instance_count=8,
        max_parallel=2,
        max_jobs=20,
        extra_tags={"governance:budget-usd": "20"},
    )
    return capture([(0, request)])


def in_account(events: list[dict[str, Any]], account: str) -> list[dict[str, Any]]:
    """The events as SageMaker in ``account`` would have sent them: the envelope's account and every ARN."""
    moved = []
    for event in events:
        home = event["account"]
        text = json.dumps(event).replace(f":{home}:", f":{account}:")
        moved.append(json.loads(text) | {"account": account})
    return moved


def test_one_job_name_in_two_accounts_is_two_jobs_each_judged_in_its_own(budget_run: Capture) -> None:
    events = sorted(
        in_account(budget_run.events, ENFORCED) + in_account(budget_run.events, MONITORED),
        key=lambda e: (e["time"], e["account"]),
    )
    policy = parse_policy(
        f'mode: enforce\naccounts:\n  "{ENFORCED}": {{mode: enforce}}\n  "{MONITORED}": {{mode: monitor}}\n',
        "org-policy",
    )

    result = replay_lines((json.dumps(e) for e in events), policy)

    # Then each account's job is its own: keyed by account and region, stopped only where enforced
    enforced, monitored = f"{ENFORCED}/us-east-1/{NAME}", f"{MONITORED}/us-east-1/{NAME}"
    assert set(result.jobs) == {enforced, monitored}
    assert [(a.job, a.rule) for a in result.actions] == [(enforced, "budget")]
    assert result.jobs[enforced].stop_requested_at is not None
    assert result.jobs[monitored].stop_requested_at is None
    verdicts = {key: {(d.rule, d.mode, d.action) for d in job.decisions} for key, job in result.jobs.items()}
    assert ("budget", "enforce", "stopped") in verdicts[enforced]
    assert ("budget", "monitor", "would-stop") in verdicts[monitored]
    assert all(mode == "monitor" for _, mode, _ in verdicts[monitored])  # never judged under enforce
    # And the savings count the enforced account's stop only (the history is the same in both accounts)
    assert list(result.savings.by_job) == [enforced]
    assert result.savings.by_job[enforced] > 0
    assert result.events.rejected == 0
    assert result.events.failed == 0


def test_an_event_of_an_account_the_policy_does_not_list_is_rejected_in_the_replay(budget_run: Capture) -> None:
    events = in_account(budget_run.events, ENFORCED) + in_account(budget_run.events[:1], "333333333333")
    policy = parse_policy(f'mode: enforce\naccounts:\n  "{ENFORCED}": {{mode: enforce}}\n', "org-policy")

    result = replay_lines((json.dumps(e) for e in events), policy)

    assert set(result.jobs) >= {f"{ENFORCED}/us-east-1/{NAME}"}
    assert not any(key.startswith("333333333333") and job.decisions for key, job in result.jobs.items())
    assert all(not a.job.startswith("333333333333") for a in result.actions)
