"""``tuning-governor replay`` as a user runs it: arguments, files, exit status, what is printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from governor_client.__main__ import main
from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import ROOT
from tests.integration.replay.conftest import Capture, capture, schema_validator, write_jsonl

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-cli")

P3_2X = "ml.p3.2xlarge"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two teams on ml.p3.2xlarge (4 then 6 instances), plus two lines that are not events."""
    captured: Capture = capture(
        [
            (
                0,
                seed_tuning_request(
                    "team-a-hpo", team="vision", instance_type=P3_2X, instance_count=1, max_parallel=4, max_jobs=4
                ),
            ),
            (
                60,
                seed_tuning_request(
                    "team-b-hpo", team="speech", instance_type=P3_2X, instance_count=2, max_parallel=3, max_jobs=3
                ),
            ),
        ]
    )
    lines: list[dict[str, object] | str] = [*captured.events]
    lines.insert(1, "not json at all")
    lines.append('{"source": "aws.sagemaker"}')
    return write_jsonl(tmp_path_factory.mktemp("cli") / "events.jsonl", lines)


@pytest.fixture
def enforce_policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(f"mode: enforce\nquotas:\n  {P3_2X}: 8\n")
    return path


def test_replay_writes_a_valid_result_and_prints_a_summary(
    history: Path, enforce_policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "result.json"
    status = main(["replay", str(history), "--policy", str(enforce_policy), "--out", str(out)])
    printed = capsys.readouterr()
    assert status == 0
    result = json.loads(out.read_text())
    schema_validator().validate(result)
    assert [(a["job"], a["rule"]) for a in result["actions"]] == [("team-b-hpo", "concurrency")]
    assert [p["line"] for p in result["rejected_events"]] == [2, result["events"]["lines"]]
    saved = result["savings"]["usd"]
    assert saved > 0
    # The human summary: jobs, events, stops by rule, dollars saved, where the result is
    text = printed.out
    assert "Tuning jobs: 2 (2 finished" in text
    assert f"Events: {result['events']['lines']} read, {result['events']['processed']} processed, 2 rejected" in text
    assert "Stops: 1 (concurrency 1)" in text
    assert f"Would have saved: ${saved:,.2f}" in text
    assert f"Result: {out}" in text
    # Quiet: no handler log lines or EMF metric lines (JSON objects) anywhere
    assert printed.err == ""
    assert not [line for line in text.splitlines() if line.lstrip().startswith("{")]


def test_mode_override_turns_a_monitor_policy_into_an_enforcing_replay(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "monitor.yaml"
    policy.write_text(f"mode: monitor\nquotas: {{{P3_2X}: 8}}\n")
    out = tmp_path / "r.json"
    assert main(["replay", str(history), "--policy", str(policy), "--out", str(out)]) == 0
    monitored = json.loads(out.read_text())
    assert monitored["actions"] == []
    assert "monitor mode stops nothing" in capsys.readouterr().out
    assert main(["replay", str(history), "--policy", str(policy), "--out", str(out), "--mode", "enforce"]) == 0
    enforced = json.loads(out.read_text())
    assert enforced["policy"]["mode"] == "enforce"
    assert [a["rule"] for a in enforced["actions"]] == ["concurrency"]


def test_out_dash_writes_the_json_to_stdout_and_the_summary_to_stderr(
    history: Path, enforce_policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(history), "--policy", str(enforce_policy), "--out", "-"]) == 0
    printed = capsys.readouterr()
    assert json.loads(printed.out)["actions"][0]["job"] == "team-b-hpo"
    assert "Stops: 1 (concurrency 1)" in printed.err


def one_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_a_missing_events_file_exits_2_with_one_line(
    enforce_policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.jsonl"
    status = main(["replay", str(missing), "--policy", str(enforce_policy), "--out", str(tmp_path / "r.json")])
    printed = capsys.readouterr()
    assert status == 2
    assert (
        one_line(printed.err)
        == f"tuning-governor replay: cannot read events file {missing}: No such file or directory;"
        " EVENTS is a JSONL file (- = stdin), a capture folder or s3://bucket/prefix (docs/reference/replay.md)"
    )
    assert printed.out == ""
    assert not (tmp_path / "r.json").exists()


def test_a_directory_without_capture_files_exits_2(
    enforce_policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A directory is read as a capture folder (test_capture.py); one with no file in it is unusable.
    empty = tmp_path / "empty"
    (empty / ".hidden").mkdir(parents=True)
    assert main(["replay", str(empty), "--policy", str(enforce_policy)]) == 2
    assert "no capture files in folder" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("policy_text", "needles"),
    [
        (
            "mode: enforse\nquotas: {ml.p3.2xlarge: -1}\n",
            ["is invalid", "mode: expected 'enforce' or 'monitor', got \"enforse\"", "(and 1 more)"],
        ),
        ("mode: enforce\n  quotas: 1\n", ["is not valid YAML", "line 2"]),
        ("", ["is empty"]),
    ],
)
def test_an_invalid_policy_exits_2_with_one_line(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], policy_text: str, needles: list[str]
) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text(policy_text)
    status = main(["replay", str(history), "--policy", str(policy)])
    line = one_line(capsys.readouterr().err)
    assert status == 2
    assert line.startswith(f"tuning-governor replay: policy {policy} ")
    for needle in needles:
        assert needle in line


def test_a_missing_policy_file_exits_2(history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(history), "--policy", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read policy file" in one_line(capsys.readouterr().err)


def test_the_policy_is_required(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # main returns argparse's usage status (2) like any other, with one line naming the missing option
    assert main(["replay", str(history)]) == 2
    line = one_line(capsys.readouterr().err)
    assert "--policy" in line and "--help" in line


def test_an_unwritable_result_path_exits_2_before_replaying(
    history: Path, enforce_policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no-such-dir" / "r.json"
    assert main(["replay", str(history), "--policy", str(enforce_policy), "--out", str(target)]) == 2
    assert "cannot write" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "governor_client"],
        [str(Path(sys.executable).parent / "tuning-governor")],
    ],
    ids=["python -m governor_client", "console script"],
)
def test_the_command_runs_as_a_program(history: Path, enforce_policy: Path, tmp_path: Path, command: list[str]) -> None:
    out = tmp_path / "result.json"
    done = subprocess.run(  # noqa: S603 - our own interpreter and entry point
        [*command, "replay", str(history), "--policy", str(enforce_policy), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "Stops: 1 (concurrency 1)" in done.stdout
    assert json.loads(out.read_text())["actions"][0]["job"] == "team-b-hpo"
    missing = subprocess.run(  # noqa: S603
        [*command, "replay", str(tmp_path / "missing.jsonl"), "--policy", str(enforce_policy)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert missing.returncode == 2
    assert len(missing.stderr.splitlines()) == 1
