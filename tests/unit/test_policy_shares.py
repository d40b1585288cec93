"""``teams.<team>.share`` (issue 20 item 3): the policy's quota shares, their errors, and what
``tuning-governor validate`` says of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from governor_client.__main__ import main
from tuning_governor.domain.shares import ShareTerms
from tuning_governor.policy import PolicyError
from tuning_governor.policy.document import parse_policy

SHARED = """\
mode: enforce
quotas: {ml.g5.xlarge: 8}
teams:
  vision:
    share:
      capacity_limits: {ml.g5.xlarge: 6}
      resource_sharing: LEND_AND_BORROW
      borrow_limit: 50
      priority: 10
      preemption: allowed
  nlp:
    share: {capacity_limits: {ml.g5.xlarge: 4}, resource_sharing: LEND}
  adhoc: {}
"""


def test_shares_reach_the_scheduling_core_as_written() -> None:
    policy = parse_policy(SHARED, "policy.yaml")
    assert policy.shares() == {
        "nlp": ShareTerms({"ml.g5.xlarge": 4}, "LEND", -1, False, 0),
        "vision": ShareTerms({"ml.g5.xlarge": 6}, "LEND_AND_BORROW", 50, True, 10),
    }


@pytest.mark.parametrize(
    ("share", "path", "words"),
    [
        ("{capacity_limits: {}}", "teams.t.share.capacity_limits", "at least 1"),
        (
            "{capacity_limits: {ml.a.x: 1, ml.b.x: 1, ml.c.x: 1, ml.d.x: 1, ml.e.x: 1, ml.f.x: 1}}",
            "teams.t.share.capacity_limits",
            "at most 5",
        ),
        ("{capacity_limits: {ml.g5.xlarge: 1}, resource_sharing: BORROW}", "teams.t.share.resource_sharing", "LEND"),
        ("{capacity_limits: {ml.g5.xlarge: 1}, borrow_limit: 100}", "teams.t.share", "only to resource_sharing"),
        (
            "{capacity_limits: {ml.g5.xlarge: 1}, resource_sharing: LEND_AND_BORROW, borrow_limit: -2}",
            "teams.t.share.borrow_limit",
            "-1",
        ),
        ("{capacity_limits: {ml.g5.xlarge: 1}, preemption: sometimes}", "teams.t.share.preemption", "allowed"),
        ("{capacity_limit: {ml.g5.xlarge: 1}}", "teams.t.share.capacity_limit", "capacity_limits"),
    ],
    ids=[
        "no-limit",
        "six-limits",
        "strategy",
        "borrow-limit-without-borrowing",
        "borrow-limit-range",
        "preemption",
        "typo",
    ],
)
def test_a_bad_share_is_refused_with_its_path_and_why(share: str, path: str, words: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(f"teams:\n  t:\n    share: {share}\n", "policy.yaml")
    problems = [p for p in caught.value.problems if p.startswith(path + ":")]
    assert problems and words in problems[0], caught.value.problems


def test_validate_warns_when_shares_promise_more_than_the_quota(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(SHARED)
    assert main(["validate", str(policy), "--format", "json"]) == 1
    findings = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    over = findings["shares-above-quota"]
    assert over["path"] == 'quotas["ml.g5.xlarge"]'
    assert "shares of 10 ml.g5.xlarge (nlp 4, vision 6)" in over["message"]
