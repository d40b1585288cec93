"""Stop latency learned per instance family from the account's own stops, and the budget check's lead."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from governor_client.memory import MemoryStore
from tests.builders import facts_builder
from tuning_governor.app.stop_latencies import learn_stop_latency
from tuning_governor.domain import stop_latency
from tuning_governor.domain.job import JobState
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.job import stop_lead_update
from tuning_governor.governance.rules import BudgetRule
from tuning_governor.models.tuning_job import TrialSummary
from tuning_governor.policy import Policy, parse_policy

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
P3_8X = "ml.p3.8xlarge"
BUDGET = parse_policy("defaults: {job_budget_usd: 50}", "test")


def with_stop_lead(facts: JobFacts, policy: Policy, store: MemoryStore) -> JobFacts:
    """``facts`` with the stop lead learned for its families, as the engine's ``load_facts`` adds it."""
    return facts.model_copy(update=stop_lead_update(facts.demand, facts.budget, policy, store))


def test_an_instance_type_s_family() -> None:
    assert stop_latency.instance_family("ml.p3.2xlarge") == "p3"
    assert stop_latency.instance_family("ml.trn1n.32xlarge") == "trn1n"
    assert stop_latency.instance_family("local") == "local"


def test_a_stop_s_latency_is_the_last_trial_s_end_after_it() -> None:
    ends = [T0 - timedelta(minutes=5), T0 + timedelta(seconds=95), T0 + timedelta(seconds=140), None]
    assert stop_latency.observed_latency(T0, ends) == 140.0
    # no trial ended after the stop, or one implausibly late: nothing observed
    assert stop_latency.observed_latency(T0, [T0 - timedelta(seconds=1)]) is None
    assert stop_latency.observed_latency(T0, [T0 + timedelta(hours=2)]) is None


def test_the_fixed_lead_is_the_prior_until_enough_stops_then_a_high_quantile() -> None:
    assert stop_latency.learned_lead([], 120) == 120
    assert stop_latency.learned_lead([300.0, 300.0], 120) == 120
    assert stop_latency.learned_lead([300.0, 300.0, 299.2], 120) == 300
    # one slow stop among ten does not move the 0.9 quantile; a slower trend does
    assert stop_latency.learned_lead([200.0] * 9 + [3000.0], 120) == 200
    assert stop_latency.learned_lead([200.0] * 8 + [400.0, 400.0], 120) == 400
    # only the KEEP latest count
    assert stop_latency.learned_lead([900.0] * 5 + [60.0] * stop_latency.KEEP, 120) == 60
    # a job on several families waits for the slowest
    learned = {"p3": [300.0] * 3, "m5": [60.0] * 3}
    assert stop_latency.job_lead({"ml.p3.2xlarge": 1, "ml.m5.xlarge": 2}, learned, 120) == 300


def _stopped_job(key: str, demand: dict[str, int]) -> JobState:
    return JobState.from_item(
        {"pk": f"JOB#{key}", "status": "Stopped", "demand": demand, "stop_requested_at": T0.isoformat()}
    )


def _trial(name: str, status: str, end: datetime) -> TrialSummary:
    return TrialSummary.model_validate(
        {"TrainingJobName": name, "TrainingJobStatus": status, "TrainingEndTime": end, "CreationTime": T0}
    )


#: A running p3 job of team ``nlp``: four trials burning $60/h, $20 spent, on the default budget.
_running = facts_builder(
    job_key="next",
    job_name="next",
    team="nlp",
    tags={"team": "nlp"},
    max_parallel=4,
    max_trials=4,
    demand={P3_8X: 32},
    spent_usd=Decimal(20),
    spent_finished_usd=Decimal(0),
    spent_accrued_usd=Decimal(20),
    running_trials=4,
    burn_usd_per_hour=Decimal(60),
    budget=BUDGET.budget_for({}, []),
)


def test_after_observed_stops_of_a_family_the_next_check_comes_that_much_earlier() -> None:
    store = MemoryStore()
    # $20 spent at $60/h against $50: the budget itself is reached 30 minutes on
    at_budget = T0 + timedelta(minutes=30)
    prior = BudgetRule().check_at(BUDGET, with_stop_lead(_running(), BUDGET, store))
    assert prior == at_budget - timedelta(seconds=120)  # the fixed lead while nothing is known
    # Given three stops of p3 jobs, each trial Stopped 300 s after the governor's stop
    latency = 300.0
    for i in range(stop_latency.MIN_OBSERVATIONS):
        trials = [
            _trial("a", "Stopped", T0 + timedelta(seconds=latency - 40)),
            _trial("b", "Stopped", T0 + timedelta(seconds=latency)),
            _trial("c", "Completed", T0 - timedelta(minutes=10)),
        ]
        assert learn_stop_latency(_stopped_job(f"old-{i}", {"ml.p3.2xlarge": 2}), trials, store) == latency
    # a finalisation run again observes nothing more; a job the governor did not stop teaches nothing
    learn_stop_latency(_stopped_job("old-0", {"ml.p3.2xlarge": 2}), [_trial("z", "Stopped", T0)], store)
    assert store.stop_latencies("p3") == [latency] * stop_latency.MIN_OBSERVATIONS
    unstopped = JobState.from_item({"pk": "JOB#mine", "status": "Stopped", "demand": {"ml.p3.2xlarge": 1}})
    assert learn_stop_latency(unstopped, [_trial("y", "Stopped", T0)], store) is None
    # Then the next p3 job's check is scheduled L before the budget's crossing, and it breaches then
    facts = with_stop_lead(_running(), BUDGET, store)
    assert facts.stop_lead_seconds == 300
    assert BudgetRule().check_at(BUDGET, facts) == at_budget - timedelta(seconds=latency)
    decision = BudgetRule().evaluate(BUDGET, _running(spent_usd=Decimal(45), stop_lead_seconds=300))
    assert decision is not None and decision.numbers["stop_lead_seconds"] == 300
    # another family's job keeps the fixed lead
    m5 = with_stop_lead(_running(demand={"ml.m5.xlarge": 4}), BUDGET, store)
    assert BudgetRule().check_at(BUDGET, m5) == at_budget - timedelta(seconds=120)
