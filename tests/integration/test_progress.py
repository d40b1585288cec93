"""Progress bars on the commands that take more than a few seconds, drawn on a terminal only (issue 19)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from governor_client.__main__ import main
from governor_client.cli.progress import progress_bar
from tests.conftest import ROOT


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as a user's stderr is."""

    def isatty(self) -> bool:
        return True


def test_a_bar_is_drawn_on_a_terminal_to_its_end_and_not_elsewhere() -> None:
    terminal, log = Terminal(), io.StringIO()
    for stream in (terminal, log):
        with progress_bar("counting", total=40, stream=stream) as bar:
            for _ in range(40):
                bar.advance()
    assert re.search(r"counting.*40/40", terminal.getvalue())
    assert log.getvalue() == ""


@pytest.fixture
def events(tmp_path: Path) -> Path:
    path = tmp_path / "events.jsonl"
    lines = [json.dumps(json.loads((ROOT / "events" / n).read_text())) for n in ("tuning-inprogress.json",) * 3]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_shows_its_lines_on_a_terminal_and_keeps_logs_clean(
    events: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("mode: monitor\n")
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["replay", str(events), "--policy", str(policy)]) == 0
    assert re.search(r"replaying events\.jsonl.*3/3", terminal.getvalue())
    monkeypatch.undo()
    assert main(["replay", str(events), "--policy", str(policy)]) == 0
    printed = capsys.readouterr()
    assert "replaying" not in printed.err + printed.out
