"""A replay of a file forgets each tuning job once nothing left can change it, and gives the same result.

``replay_file`` reads the file twice: first to find each job's last line, then to replay it. The
in-memory store drops a job's items, and the event-sourced SageMaker its state, once the job has
settled (``governor_client.replay.forget``). These tests hold the result to the one of a replay that
forgets nothing (``replay_lines`` without ``reread``), and check what keeps a job from being forgotten.
"""

from __future__ import annotations

import io
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from governor_client.memory import MemoryStore
from governor_client.replay import ReplayInputError, replay_file, replay_lines
from governor_client.replay.forget import settled
from governor_client.replay.lines import job_key_of, last_lines
from tests.integration.replay.conftest import busy_account_log
from tuning_governor.adapters.checks import PendingChecks
from tuning_governor.domain.capacity import Ledger
from tuning_governor.domain.spend import RunningTrial
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TuningJob
from tuning_governor.policy import parse_policy
from tuning_governor.ports import Store

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-forget")

POLICY = parse_policy(
    """
mode: enforce
defaults:
  job_budget_usd: 2
  max_runtime_hours: 0.75
  max_failed_trials: 2
  stagnation_trials: 6
""",
    "test_forget",
)


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return busy_account_log(tmp_path_factory.mktemp("forget") / "events.jsonl", 600)


@pytest.fixture
def forgotten(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the jobs the in-memory store is told to forget, in order."""
    keys: list[str] = []
    forget_job = MemoryStore.forget_job

    def spy(self: MemoryStore, job_key: str) -> None:
        keys.append(job_key)
        forget_job(self, job_key)

    monkeypatch.setattr(MemoryStore, "forget_job", spy)
    return keys


def test_a_replay_that_forgets_gives_the_result_of_one_that_does_not(
    log: Path, aws_credentials: None, forgotten: list[str]
) -> None:
    # When the same log is replayed from its file (two readings) and from a one-pass iterator
    with log.open("rb") as once:
        kept = replay_lines(once, POLICY)
    assert forgotten == []
    forgetting = replay_file(log, POLICY)
    # Then the replay of the file forgot most jobs before its end, each once
    assert len(forgotten) == len(set(forgotten))
    assert len(forgotten) > len(forgetting.jobs) / 2, (len(forgotten), len(forgetting.jobs))
    # And both results are the same, byte for byte
    assert forgetting.model_dump_json() == kept.model_dump_json()
    assert len(forgetting.actions) >= 3
    assert forgetting.events.failed == 0


def test_standard_input_is_copied_and_forgotten_alike(
    log: Path, aws_credentials: None, forgotten: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with log.open("rb") as once:
        kept = replay_lines(once, POLICY)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log.read_bytes())))
    from_stdin = replay_file("-", POLICY)
    assert forgotten, "no job was forgotten"
    assert from_stdin.model_dump_json() == kept.model_dump_json()


def test_without_sweeps_a_replay_forgets_too_and_gives_the_same_result(
    log: Path, aws_credentials: None, forgotten: list[str]
) -> None:
    with log.open("rb") as once:
        kept = replay_lines(once, POLICY, sweep_every=None)
    forgetting = replay_file(log, POLICY, sweep_every=None)
    assert forgotten, "no job was forgotten"
    assert forgetting.model_dump_json() == kept.model_dump_json()


def test_a_job_named_after_its_last_line_of_the_first_reading_is_an_input_error(
    log: Path, aws_credentials: None
) -> None:
    lines = log.read_bytes().splitlines()
    first_job = job_key_of(json.loads(lines[0]))
    assert first_job is not None
    # Given a line of the first job (long ended and forgotten) written to the file after its first reading
    grown = [*lines, lines[0]]
    with pytest.raises(
        ReplayInputError, match="appears after what the first reading found to be its last line"
    ) as caught:
        replay_lines(grown, POLICY, reread=lambda: lines)
    assert f"line {len(grown)}: tuning job {first_job} " in str(caught.value)


def test_last_lines_names_each_tuning_job_by_its_own_events_and_its_trials() -> None:
    tuning = {
        "source": "aws.sagemaker",
        "detail-type": "SageMaker HyperParameter Tuning Job State Change",
        "detail": {"HyperParameterTuningJobName": "Job-A"},
    }
    trial = {
        "source": "aws.sagemaker",
        "detail-type": "SageMaker Training Job State Change",
        "detail": {
            "TrainingJobName": "job-a-001-x",
            "TuningJobArn": "arn:aws:sagemaker:us-east-1:111122223333:hyper-parameter-tuning-job/job-a",
        },
    }
    alone = {
        "source": "aws.sagemaker",
        "detail-type": "SageMaker Training Job State Change",
        "detail": {"TrainingJobName": "standalone"},
    }
    wrapped = {
        "seq": 9,
        "delivered_at": "2026-11-30T09:00:00+00:00",
        "event": tuning | {"detail": {"HyperParameterTuningJobName": "job-b"}},
    }
    lines: list[Any] = [
        json.dumps(tuning),
        b"{not json",
        "",
        json.dumps(trial).encode(),
        json.dumps(alone),
        json.dumps(wrapped),
        b"\xff\xfe",
        "[1, 2]",
    ]
    assert last_lines(lines) == {"job-a": 4, "job-b": 6}


# -- what keeps a job from settling ---------------------------------------------------------------------------
class _History:
    def __init__(self, job: TuningJob | None, trials: list[TrainingJob]) -> None:
        self.job, self.trials = job, trials

    def tuning_job(self, key: str) -> TuningJob | None:
        return self.job

    def trials_of(self, key: str) -> list[TrainingJob]:
        return self.trials


class _Store:
    """The reads ``settled`` makes, answered from fields a test changes."""

    def __init__(self) -> None:
        self.partition: list[dict[str, Any]] = [
            {"pk": "JOB#j", "sk": "META", "status": "Completed", "team": "vision"},
            {"pk": "JOB#j", "sk": "SUMMARY", "type": "summary"},
        ]
        self.running: list[RunningTrial] = []
        self.ledger = Ledger(version=1, reservations={})
        self.pools: set[str] = set()

    def items(self, job_key: str) -> list[dict[str, Any]]:
        return self.partition

    def team_running(self, team: str) -> list[RunningTrial]:
        return self.running

    def read_ledger(self) -> Ledger:
        return self.ledger

    def warm_pool_names(self) -> set[str]:
        return self.pools


def _job(status: str = "Completed") -> TuningJob:
    return TuningJob.model_validate({"HyperParameterTuningJobName": "J", "HyperParameterTuningJobStatus": status})


def _trial(status: str = "Completed", pool: str | None = None) -> TrainingJob:
    detail: dict[str, Any] = {"TrainingJobName": "J-001-abc", "TrainingJobStatus": status}
    if pool:
        detail["WarmPoolStatus"] = {"Status": pool}
    return TrainingJob.model_validate(detail)


def _settled(history: _History, store: _Store, checks: PendingChecks | None = None) -> bool:
    return settled("j", history, cast(Store, store), checks or PendingChecks())


def test_an_ended_job_with_nothing_left_to_finish_is_settled() -> None:
    assert _settled(_History(_job(), [_trial(), _trial("Stopped", "Terminated")]), _Store())


@pytest.mark.parametrize(
    ("history", "why"),
    [
        (_History(None, []), "only its trials were seen"),
        (_History(_job("InProgress"), []), "the job runs"),
        (_History(_job(), [_trial("InProgress")]), "a trial runs"),
        (_History(_job(), [_trial("Completed", "Available")]), "a trial keeps its warm pool"),
    ],
)
def test_a_job_sagemaker_has_not_finished_with_is_not_settled(history: _History, why: str) -> None:
    assert not _settled(history, _Store()), why


def _no_summary(store: _Store) -> None:
    store.partition = [item for item in store.partition if item["sk"] != "SUMMARY"]


def _running_meta(store: _Store) -> None:
    store.partition[0]["status"] = "InProgress"


def _gaps(store: _Store) -> None:
    store.partition.append({"pk": "JOB#j", "sk": "GAPS"})


def _sending(store: _Store) -> None:
    store.partition.append({"pk": "JOB#j", "sk": "DELIVERY#summary-completed#sns", "state": "sending"})


def _pending_decision(store: _Store) -> None:
    store.partition.append({"pk": "JOB#j", "sk": "DECISION#budget#breach", "state": "pending"})


def _running_trial(store: _Store) -> None:
    start = datetime(2026, 11, 30, 9, tzinfo=UTC)
    store.running = [RunningTrial(job_key="j", trial="j-001-abc", start=start, instances={"ml.m5.xlarge": 1})]


def _reserved(store: _Store) -> None:
    store.ledger = Ledger(version=2, reservations={"j": cast(Any, object())})


def _pool(store: _Store) -> None:
    store.pools = {"J-001-ABC"}


@pytest.mark.parametrize(
    "change", [_no_summary, _running_meta, _gaps, _sending, _pending_decision, _running_trial, _reserved, _pool]
)
def test_a_job_the_table_still_has_work_for_is_not_settled(change: Any) -> None:
    store = _Store()
    change(store)
    assert not _settled(_History(_job(), [_trial()]), store), change.__name__


def test_a_job_with_a_budget_check_to_come_is_not_settled() -> None:
    checks = PendingChecks()
    checks.schedule("j", "J", datetime(2026, 11, 30, 10, tzinfo=UTC))
    assert not _settled(_History(_job(), [_trial()]), _Store(), checks)
