"""``validate --account`` compares the policy's quotas and team limits with the account's Service Quotas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from governor_client.__main__ import main
from tests.integration.conftest import World

POLICY = """\
mode: enforce
quotas: {ml.g5.xlarge: 16, ml.p3.2xlarge: 2}
teams:
  vision:
    instances: {ml.g5.xlarge: 6}
"""


def test_quotas_above_the_accounts_are_warned_with_account(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an account whose applied quota for ml.g5.xlarge training is 4 (and ml.p3.2xlarge is 8)
    world.amt.set_applied_quota("ml.g5.xlarge", 4)
    world.amt.set_applied_quota("ml.p3.2xlarge", 8)
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    # When the policy is validated against the account
    code = main(["validate", str(path), "--account", "--region", "us-east-1", "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    # Then the policy quota and the team limit above 4 are warned; ml.p3.2xlarge (2 <= 8) is not
    assert code == 1 and result["account_checked"] is True
    assert [(f["code"], f["path"]) for f in result["findings"]] == [
        ("quota-above-account", 'quotas["ml.g5.xlarge"]'),
        ("quota-above-account", 'teams.vision.instances["ml.g5.xlarge"]'),
    ]
    assert "above the account's Service Quota of 4" in result["findings"][0]["message"]


def test_offline_the_account_check_is_skipped_with_a_note(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world.amt.set_applied_quota("ml.g5.xlarge", 4)
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "[quotas-not-checked]" in out and "quota-above-account" not in out
