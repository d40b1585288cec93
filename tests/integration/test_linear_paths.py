"""Work per event does not grow with a job's history, nor with the account's (issue 9, "Lean and linear").

Every DynamoDB and SageMaker call the handlers make is counted through botocore's hooks on the clients
the adapters use (governor_client.simulator.metering): calls per operation, DynamoDB items read (``ScannedCount``
for a Query or Scan, one per key for a get) and written (one per PutItem/UpdateItem/DeleteItem, one
per transaction entry). The same kind of event is measured on a job with 10 trials already recorded
and on one with 200, and the arrival and the sweep with 5 and 50 finished jobs in the account.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from moto import mock_aws

from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import build_environment
from governor_client.simulator.metering import (
    Counts,
    Meter,
    deliver_measured,
    run_holding,
    run_to_end,
    small_job_request,
    sweep_measured,
)
from governor_client.simulator.runner import deliver_event
from tests.conftest import REGION
from tuning_governor.models.events import TUNING_DETAIL_TYPE
from tuning_governor.policy import parse_policy

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SMALL, LARGE = 10, 200
FEW, MANY = 5, 50
#: Issue 9's target for one trial event, whatever the job's history.
MAX_ITEMS_PER_TRIAL_EVENT = 3
POLICIES = {
    "stagnation on": "mode: enforce\ndefaults: {stagnation_trials: 5, stagnation_minutes: 600, stagnation_usd: 50}\n",
    "stagnation off": "mode: enforce\ndefaults: {stagnation_trials: 0}\n",
    # The job's team (churn) has a monthly budget: its spend is read at every judgement too.
    "team budget": "mode: enforce\nteams: {churn: {monthly_budget_usd: 100000}}\n"
    "defaults: {stagnation_trials: 5, stagnation_minutes: 600, stagnation_usd: 50}\n",
}
#: Items a finishing trial's event reads: its job's item once, and its team's item when the team has a
#: monthly budget (issue 9: "1 read, 1 transaction").
ITEMS_READ_WHEN_FINISHING = {"stagnation on": 1, "stagnation off": 1, "team budget": 2}
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
TRIAL_EVENTS = ("started", "finished")

pytestmark = pytest.mark.xdist_group("linear_paths")


@pytest.fixture(scope="module")
def aws_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SECURITY_TOKEN", "AWS_SESSION_TOKEN"):
            patch.setenv(key, "testing")
        patch.setenv("AWS_DEFAULT_REGION", REGION)
        patch.setenv("AWS_REGION", REGION)
        patch.delenv("AWS_PROFILE", raising=False)
        yield


@pytest.fixture(scope="module")
def trial_counts(aws_env: None) -> dict[tuple[str, str, int], Counts]:
    """(policy, event, N) -> what one trial event of a job with N recorded trials asked of AWS."""
    measured: dict[tuple[str, str, int], Counts] = {}
    with mock_aws(), AmtStandIn(clock=VirtualClock(T0), seed=7) as amt:
        env = build_environment(clock=amt.clock.now)
        meter = Meter(env.dynamodb, env.sagemaker)
        for n in (SMALL, LARGE):
            job = run_holding(
                amt,
                env.sagemaker,
                env.services,
                small_job_request(f"linear-{n}", max_jobs=n + 4),
                recorded=n,
                progress=False,
            )
            assert len(env.services.store.trial_records(job.name)) == n
            for index, (label, policy) in enumerate(POLICIES.items()):
                env.services.policy = lambda policy=policy: parse_policy(policy, "test")  # type: ignore[misc]
                for event, status in zip(TRIAL_EVENTS, ("InProgress", "Completed"), strict=True):
                    counts, outcome = deliver_measured(meter, job.trial_event(index, status), env.services)
                    assert outcome["outcome"] == ("progress" if status == "InProgress" else "recorded"), outcome
                    assert outcome.get("running", "tracked") == "tracked"
                    assert not outcome.get("decisions"), outcome  # an improving job: nothing to act on
                    measured[(label, event, n)] = counts
        # The meter is able to see a per-trial read: the job's trials read in one Query.
        with meter.measuring() as query:
            env.services.store.trial_records(f"linear-{LARGE}")
        measured[("query", "trial records", LARGE)] = query
    return measured


@pytest.fixture(scope="module")
def account_counts(aws_env: None) -> dict[tuple[str, int], Counts]:
    """(arrival | sweep, finished jobs in the account) -> what it asked of AWS with one job running."""
    measured: dict[tuple[str, int], Counts] = {}
    for history in (FEW, MANY):
        with mock_aws(), AmtStandIn(clock=VirtualClock(T0), seed=7) as amt:
            env = build_environment(clock=amt.clock.now)
            meter = Meter(env.dynamodb, env.sagemaker)
            for i in range(history):
                run_to_end(
                    amt, env.sagemaker, env.services, small_job_request(f"done-{i:03d}", max_jobs=3), progress=False
                )
            env.sagemaker.create_hyper_parameter_tuning_job(**small_job_request("arriving", max_jobs=3))
            amt.advance(60)
            events = amt.drain_events()
            [arrival] = [e for e in events if e["detail-type"] == TUNING_DETAIL_TYPE]
            counts, outcome = deliver_measured(meter, arrival, env.services)
            assert outcome["outcome"] == "recorded", outcome
            measured[("arrival", history)] = counts
            for event in events:
                if event is not arrival:
                    deliver_event(event, env.services)
            counts, report = sweep_measured(meter, env.services)
            assert not report.get("errors"), report
            measured[("sweep", history)] = counts
    return measured


def _reads(counts: Counts) -> dict[str, int]:
    return {op: n for op, n in counts.items_read.items() if n}


def _read_calls(counts: Counts) -> dict[str, int]:
    return {op: counts.calls[op] for op in ("GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems")}


@pytest.mark.parametrize("event", TRIAL_EVENTS)
@pytest.mark.parametrize("policy", list(POLICIES))
def test_a_trial_event_reads_the_same_items_at_10_and_200_recorded_trials(
    trial_counts: dict[tuple[str, str, int], Counts], policy: str, event: str
) -> None:
    # Given a job with 10 trials recorded and one with 200, and a trial of each starting or finishing
    small, large = trial_counts[(policy, event, SMALL)], trial_counts[(policy, event, LARGE)]
    # Then both read the same items with the same calls: no Query or Scan over the job's trials
    described = f"N={SMALL}: {small.describe()}; N={LARGE}: {large.describe()}"
    assert small.read > 0, "nothing was metered: the store no longer uses the metered DynamoDB client"
    assert _reads(large) == _reads(small), described
    assert _read_calls(large) == _read_calls(small), described
    assert not {"Query", "Scan"} & set(large.calls), described


@pytest.mark.parametrize("event", TRIAL_EVENTS)
@pytest.mark.parametrize("policy", list(POLICIES))
def test_a_trial_event_reads_at_most_3_items(
    trial_counts: dict[tuple[str, str, int], Counts], policy: str, event: str
) -> None:
    counts = trial_counts[(policy, event, LARGE)]
    assert counts.read <= MAX_ITEMS_PER_TRIAL_EVENT, counts.describe()


@pytest.mark.parametrize("policy", list(POLICIES))
def test_a_trial_starting_writes_at_most_3_items(trial_counts: dict[tuple[str, str, int], Counts], policy: str) -> None:
    counts = trial_counts[(policy, "started", LARGE)]
    assert counts.written <= MAX_ITEMS_PER_TRIAL_EVENT, counts.describe()


@pytest.mark.parametrize("policy", list(POLICIES))
def test_a_trial_finishing_writes_at_most_3_items_in_one_transaction(
    trial_counts: dict[tuple[str, str, int], Counts], policy: str
) -> None:
    # Given a trial of a job with 200 recorded trials finishing, an improvement (its spend is kept)
    counts = trial_counts[(policy, "finished", LARGE)]
    # Then its record, its job's totals and its team's (month totals, running trials) are one transaction
    writes = {op: n for op, n in counts.calls.items() if op in WRITE_OPERATIONS}
    assert writes == {"TransactWriteItems": 1}, counts.describe()
    assert counts.written <= MAX_ITEMS_PER_TRIAL_EVENT, counts.describe()


@pytest.mark.parametrize("policy", list(POLICIES))
def test_a_trial_finishing_reads_its_job_item_once(
    trial_counts: dict[tuple[str, str, int], Counts], policy: str
) -> None:
    counts = trial_counts[(policy, "finished", LARGE)]
    expected = ITEMS_READ_WHEN_FINISHING[policy]
    assert (_read_calls(counts)["GetItem"], counts.read) == (expected, expected), counts.describe()


def test_the_meter_sees_a_read_that_grows_with_the_trials(trial_counts: dict[tuple[str, str, int], Counts]) -> None:
    # The instrument the tests above rely on: one Query over a job's 200+ trials reads them all.
    query = trial_counts[("query", "trial records", LARGE)]
    assert query.calls["Query"] >= 1
    assert query.read > LARGE


def test_an_arrival_reads_the_same_with_5_or_50_finished_jobs(account_counts: dict[tuple[str, int], Counts]) -> None:
    few, many = account_counts[("arrival", FEW)], account_counts[("arrival", MANY)]
    assert (_reads(many), many.calls, many.written) == (_reads(few), few.calls, few.written), (
        f"{FEW} jobs: {few.describe()}; {MANY} jobs: {many.describe()}"
    )


def test_the_sweep_reads_the_same_items_with_5_or_50_finished_jobs(
    account_counts: dict[tuple[str, int], Counts],
) -> None:
    few, many = account_counts[("sweep", FEW)], account_counts[("sweep", MANY)]
    assert _reads(many) == _reads(few), f"{FEW} jobs: {few.describe()}; {MANY} jobs: {many.describe()}"


def _sagemaker_calls(counts: Counts) -> dict[str, int]:
    return {op: n for op, n in counts.calls.items() if op not in DYNAMODB_OPERATIONS}


DYNAMODB_OPERATIONS = frozenset(
    {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "TransactWriteItems", "TransactGetItems"}
    | {"BatchGetItem", "BatchWriteItem"}
)


def test_the_sweep_calls_sagemaker_the_same_with_5_or_50_finished_jobs(
    account_counts: dict[tuple[str, int], Counts],
) -> None:
    few, many = account_counts[("sweep", FEW)], account_counts[("sweep", MANY)]
    assert _sagemaker_calls(many) == _sagemaker_calls(few), (
        f"{FEW} jobs: {few.describe()}; {MANY} jobs: {many.describe()}"
    )
