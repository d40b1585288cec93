"""``tuning-governor replay --store memory`` and ``--store moto`` give the same result, byte for byte.

A ~1,000-event log of a busy account (many small tuning jobs of five teams, duplicates and delays on) is
written by the simulator, then replayed through the command under an enforcing policy with every guard
on, once per store. The two result files are compared as canonical JSON (keys and lists sorted). The
moto replay is the slow one (moto deep-copies the table on every transaction): about two minutes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from governor_client.__main__ import main
from tests.integration.replay.conftest import busy_account_log

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-store_equivalence")

POLICY = """
mode: enforce
quotas:
  ml.g4dn.xlarge: 12
teams:
  vision:
    instances:
      ml.m5.2xlarge: 6
    job_budget_usd: 0.4
  fraud:
    monthly_budget_usd: 40
defaults:
  job_budget_usd: 2
  max_runtime_hours: 0.75
  max_failed_trials: 2
  stagnation_trials: 6
  grace_minutes:
    runtime: 5
"""


def canonical(value: Any) -> Any:
    """JSON with every list sorted by its items' canonical text (the order of equal-time entries is free)."""
    if isinstance(value, dict):
        return {key: canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted((canonical(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    return value


def canonical_bytes(path: Path) -> bytes:
    return json.dumps(canonical(json.loads(path.read_bytes())), sort_keys=True, indent=1).encode()


@pytest.fixture(scope="module")
def busy_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return busy_account_log(tmp_path_factory.mktemp("store-equivalence") / "events.jsonl", 1000)


def test_memory_and_moto_stores_replay_to_the_same_result(
    busy_log: Path, tmp_path: Path, aws_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    lines = busy_log.read_text().splitlines()
    assert 950 <= len(lines) <= 1200
    # When the same log is replayed with each store
    results = {}
    for store in ("memory", "moto"):
        out = tmp_path / f"result-{store}.json"
        status = main(["replay", str(busy_log), "--policy", str(policy), "--store", store, "--out", str(out)])
        assert status == 0, capsys.readouterr().err
        results[store] = out
    # Then the results are the same, byte for byte once sorted
    assert canonical_bytes(results["memory"]) == canonical_bytes(results["moto"])
    # And the replay did govern: stops by several rules, decisions, reports, no failed line
    result = json.loads(results["memory"].read_text())
    assert result["events"]["failed"] == 0
    assert result["events"]["processed"] == len(lines)
    assert len({action["rule"] for action in result["actions"]}) >= 3, result["actions"]
    assert sum(len(job["decisions"]) for job in result["jobs"].values()) >= 15
    assert len(result["notifications"]) >= 15
    assert sum(1 for job in result["jobs"].values() if job["summary"] == "final") >= 15
