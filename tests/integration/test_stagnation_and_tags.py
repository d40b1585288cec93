"""Stagnation judged per definition (trials, minutes, dollars) and governance tags as people write them,
through the real handlers on the AMT stand-in."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from governor_client.amt import TrialPlan
from governor_client.simulator.runner import deliver_all, deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tests.integration.test_governance import decisions, record_stop_calls, use_policy
from tests.integration.test_sweep_and_stop import run_sweep
from tuning_governor.domain.job import job_state
from tuning_governor.domain.stagnation import StagnationState
from tuning_governor.domain.trial_record import build_trial_record
from tuning_governor.governance.trials import record_trial

RMSE = "validation:rmse"


@dataclass
class Scripted:
    """Trials report the scripted objective values in the order they are created (one at a time)."""

    values: list[float]
    duration_s: float = 600.0
    planned: list[float] = field(default_factory=list)

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> TrialPlan:
        value = self.values[min(len(self.planned), len(self.values) - 1)]
        self.planned.append(value)
        return TrialPlan(duration_s=self.duration_s, objective_value=value)


def per_definition_request(
    name: str,
    *,
    max_jobs: int,
    direction: str = "Minimize",
    metric: str = RMSE,
    objective_hyperparameter: bool = True,
    tags: dict[str, str] | None = None,
    instance_count: int = 1,
) -> dict[str, Any]:
    """A tuning job whose objective is given only per definition (TrainingJobDefinitions[].TuningObjective)."""
    request = seed_tuning_request(
        name, max_jobs=max_jobs, max_parallel=1, instance_count=instance_count, extra_tags=tags
    )
    config = request["HyperParameterTuningJobConfig"]
    del config["HyperParameterTuningJobObjective"]
    del config["StrategyConfig"]
    config["Strategy"] = "Random"
    definition = request.pop("TrainingJobDefinition")
    definition["DefinitionName"] = "xgb-regression"
    definition["TuningObjective"] = {"Type": direction, "MetricName": metric}
    definition["HyperParameterRanges"] = config.pop("ParameterRanges")
    static = {"objective": "reg:squarederror", "eval_metric": "rmse", "num_round": "30"}
    if objective_hyperparameter:
        static["_tuning_objective_metric"] = metric  # as the SageMaker SDK sets it for built-in algorithms
    definition["StaticHyperParameters"] = static
    request["TrainingJobDefinitions"] = [definition]
    return request


def stagnation_decisions(world: World, job: str) -> list[dict[str, Any]]:
    return [d for d in decisions(world, job) if d["rule"] == "stagnation"]


def launch(world: World, request: dict[str, Any], values: list[float], duration_s: float = 600.0) -> Scripted:
    script = Scripted(values=values, duration_s=duration_s)
    world.amt.engine.behaviour = script
    world.env.sagemaker.create_hyper_parameter_tuning_job(**request)
    return script


def test_an_improving_minimize_job_with_its_objective_per_definition_is_not_stopped(world: World) -> None:
    # Given a per-definition Minimize objective whose loss falls by 10 % every trial
    use_policy(world, "mode: enforce\ndefaults: {stagnation_trials: 2}\n")
    stops = record_stop_calls(world)
    launch(world, per_definition_request("falling-loss", max_jobs=6), [1.0, 0.9, 0.81, 0.729, 0.6561, 0.59049])
    # When every trial is governed
    world.run_until_idle()
    # Then nothing stagnates: lower is better for this definition
    assert stagnation_decisions(world, "falling-loss") == []
    assert stops == []
    meta = world.env.services.store.get_job("falling-loss") or {}
    assert meta["stagnation"]["direction"] == "Minimize"
    assert float(meta["stagnation"]["best_objective"]) == pytest.approx(0.59049)


def test_a_stagnating_minimize_job_with_its_objective_per_definition_is_stopped(world: World) -> None:
    # Given a per-definition Minimize objective (no _tuning_objective_metric in the trials) that stops
    # improving after its second trial
    use_policy(world, "mode: enforce\ndefaults: {stagnation_trials: 3}\n")
    stops = record_stop_calls(world)
    launch(
        world,
        per_definition_request("flat-loss", max_jobs=10, objective_hyperparameter=False),
        [1.0, 0.8, 0.81, 0.9, 0.795, 0.5, 0.4],
    )
    world.run_until_idle()
    # Then it is stopped at the third trial that failed to improve on 0.8 by 1 % (0.795 is only 0.6 %)
    [decision] = stagnation_decisions(world, "flat-loss")
    numbers = decision["numbers"]
    assert (numbers["measure"], numbers["trials_without_improvement"], numbers["limit"]) == ("trials", 3, 3)
    assert (numbers["direction"], numbers["objective_metric"]) == ("Minimize", RMSE)
    assert float(numbers["best_objective"]) == pytest.approx(0.8)
    assert stops == ["flat-loss"]
    assert decision["action"] == "stopped"


def test_an_improvement_of_exactly_one_percent_counts(world: World) -> None:
    # Given a loss that falls by exactly 1 % per trial, and a limit of one trial without improvement
    use_policy(world, "mode: enforce\ndefaults: {stagnation_trials: 1}\n")
    stops = record_stop_calls(world)
    launch(world, per_definition_request("one-percent", max_jobs=5), [100.0, 99.0, 98.01, 97.0299, 96.059601])
    world.run_until_idle()
    # Then every trial improved, as AMT's BestObjectiveNotImproving counts it
    assert stagnation_decisions(world, "one-percent") == []
    assert stops == []


def _deliver_until(world: World, done: Any, step: float = 60.0, limit: int = 600) -> None:
    for _ in range(limit):
        world.amt.advance(step)
        world.deliveries.extend(deliver_all(world.amt.drain_events(), world.env.services))
        if done():
            return
    raise AssertionError("the condition was never met")


def test_minutes_since_the_last_improvement_stop_the_job_on_the_sweep_not_a_second_early(world: World) -> None:
    # Given 25 minutes without improvement as the limit, and 20-minute trials that never beat the first
    use_policy(world, "mode: enforce\ndefaults: {stagnation_minutes: 25}\n")
    stops = record_stop_calls(world)
    launch(world, per_definition_request("slow-plateau", max_jobs=6), [0.5, 0.6, 0.6, 0.6, 0.6, 0.6], 1200.0)
    store = world.env.services.store
    _deliver_until(world, lambda: "stagnation" in (store.get_job("slow-plateau") or {}))
    improved_at = datetime.fromisoformat(store.get_job("slow-plateau")["stagnation"]["improved_at"])  # type: ignore[index]
    # When the sweep runs one second before the limit, and then at it
    world.amt.advance((improved_at + timedelta(minutes=25, seconds=-1) - world.amt.clock.now()).total_seconds())
    world.deliveries.extend(deliver_all(world.amt.drain_events(), world.env.services))
    assert [d for d in run_sweep(world)["decisions"] if d["rule"] == "stagnation"] == []
    world.amt.advance(1)
    world.deliveries.extend(deliver_all(world.amt.drain_events(), world.env.services))
    [swept] = [d for d in run_sweep(world)["decisions"] if d["rule"] == "stagnation"]
    # Then the sweep stops it, and the numbers say minutes tripped
    assert swept["action"] == "stopped"
    [decision] = stagnation_decisions(world, "slow-plateau")
    numbers = decision["numbers"]
    assert (numbers["measure"], numbers["limit"]) == ("minutes", 25)
    assert numbers["minutes_since_improvement"] == 25
    assert stops == ["slow-plateau"]


def test_dollars_since_the_last_improvement_stop_the_job(world: World) -> None:
    # Given $0.20 without improvement as the limit, and trials of about $0.08 (ml.m5.xlarge, 20 minutes)
    use_policy(world, "mode: enforce\ndefaults: {stagnation_usd: 0.20}\n")
    stops = record_stop_calls(world)
    launch(world, per_definition_request("costly-plateau", max_jobs=10), [0.5] + [0.6] * 9, 1200.0)
    world.run_until_idle()
    [decision] = stagnation_decisions(world, "costly-plateau")
    numbers = decision["numbers"]
    assert numbers["measure"] == "usd"
    assert numbers["limit"] == Decimal("0.2")
    spent_since = numbers["usd_since_improvement"]
    assert spent_since >= Decimal("0.20")
    # judged at the first trial event that reached it: less than one more trial's cost past the limit
    trial_costs = [r.cost_usd for r in world.env.services.store.trial_records("costly-plateau") if r.cost_usd]
    assert spent_since - Decimal("0.20") < max(trial_costs)
    assert spent_since == numbers["spent_usd"] - numbers["spent_at_improvement_usd"]
    assert stops == ["costly-plateau"]


# -- tags ------------------------------------------------------------------------------------------------
def tag_reports(world: World) -> list[dict[str, Any]]:
    return [m for m in world.env.sns_messages() if str(m.get("Subject", "")).endswith(": tags")]


def budget_job(world: World, name: str, tags: dict[str, str]) -> None:
    """Half-hour trials on 3 x ml.m5.xlarge (about $0.35 each), one at a time, run to the end."""
    launch(world, per_definition_request(name, max_jobs=6, tags=tags, instance_count=3), [0.5] * 6, 1800.0)
    world.run_until_idle()


@pytest.mark.parametrize("spelling", ["1", "1.00", "1 USD", "USD 1", "usd 1"])
def test_each_budget_tag_spelling_sets_the_budget(world: World, spelling: str) -> None:
    # Given a job tagged with a $1 budget in one of the spellings people use (and SageMaker accepts:
    # its tag values may not contain "$" or ",", so those spellings are covered by the unit tests)
    use_policy(world, "mode: enforce\ndefaults: {budget_usd: 1000}\n")
    stops = record_stop_calls(world)
    budget_job(world, "tagged", {"governance:budget-usd": spelling})
    # Then the tag is the budget, and nothing warns about it
    [breach] = [d for d in decisions(world, "tagged") if d["rule"] == "budget" and d["verdict"] == "breach"]
    assert breach["numbers"]["budget_usd"] == Decimal(1)
    assert stops == ["tagged"]
    assert [d for d in decisions(world, "tagged") if d["rule"] == "tags"] == []
    assert tag_reports(world) == []


def test_a_bad_budget_tag_is_reported_once_and_the_next_budget_source_applies(world: World) -> None:
    # Given a $1 default budget and a job tagged with a budget the governor cannot read
    use_policy(world, "mode: enforce\ndefaults: {budget_usd: 1}\n")
    stops = record_stop_calls(world)
    budget_job(world, "bad-tag", {"governance:budget-usd": "fifty"})
    run_sweep(world)
    run_sweep(world)
    # Then one warning names the tag and its value, and the default budget stopped the job
    [warning] = [d for d in decisions(world, "bad-tag") if d["rule"] == "tags"]
    assert (warning["verdict"], warning["action"]) == ("warning", "warned")
    assert warning["numbers"]["tags"]["governance:budget-usd"]["value"] == "fifty"
    assert "fifty" in warning["message"]
    [report] = tag_reports(world)
    assert "fifty" in report["Message"]
    [breach] = [d for d in decisions(world, "bad-tag") if d["rule"] == "budget" and d["verdict"] == "breach"]
    assert breach["numbers"]["budget_usd"] == Decimal(1)
    assert stops == ["bad-tag"]


def test_a_mis_cased_exemption_key_is_not_honoured_and_is_reported_once(world: World) -> None:
    # Given an enforcing $1 budget and a job tagged Governance:Exempt=true (AWS tag keys are case-sensitive)
    use_policy(world, "mode: enforce\ndefaults: {budget_usd: 1}\n")
    stops = record_stop_calls(world)
    budget_job(world, "shouty", {"Governance:Exempt": "true"})
    run_sweep(world)
    # Then the job is not exempt: it is stopped at its budget, and the key is reported once
    [breach] = [d for d in decisions(world, "shouty") if d["rule"] == "budget" and d["verdict"] == "breach"]
    assert breach["action"] == "stopped"
    assert stops == ["shouty"]
    [warning] = [d for d in decisions(world, "shouty") if d["rule"] == "tags"]
    assert "Governance:Exempt" in warning["numbers"]["tags"]
    assert len(tag_reports(world)) == 1


def test_two_trials_racing_on_the_same_stagnation_state_are_both_counted_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two trials of one job that finished together, their terminal events not yet recorded
    request = per_definition_request("race", max_jobs=2)
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = 2
    launch(world, request, [0.5, 0.4])
    held: list[dict[str, Any]] = []
    for _ in range(120):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            detail = event["detail"]
            if detail.get("TrainingJobStatus") == "Completed":
                held.append(event)
            elif "TrainingJobStatus" in detail or detail.get("HyperParameterTuningJobStatus") == "InProgress":
                deliver_event(event, world.env.services)
        if len(held) == 2:
            break
    assert len(held) == 2
    services = world.env.services
    # When both invocations read the job item before either writes (the second one's state is stale)
    meta = services.store.get_job("race")
    rereads: list[str] = []
    read_job = services.store.get_job

    def counting_get_job(key: str) -> dict[str, Any] | None:
        rereads.append(key)
        return read_job(key)

    monkeypatch.setattr(services.store, "get_job", counting_get_job)
    recorded = []
    for event in held:
        trial = services.sagemaker.describe_training_job(event["detail"]["TrainingJobName"])
        record = build_trial_record(
            trial,
            job_key="race",
            region="us-east-1",
            objective_name=RMSE,
            catalog=services.catalog,
            event_id=event["id"],
            event_time=trial.training_end_time or world.amt.clock.now(),
        )
        recorded.append((record, trial))
        assert record_trial(record, trial, job_state(meta), team=None, services=services)
    # Then the second found the state changed, re-read the item once and applied its trial on top
    assert rereads == ["race"]
    monkeypatch.undo()
    state = StagnationState.from_item((services.store.get_job("race") or {})["stagnation"])
    assert state is not None
    assert (state.trials_seen, state.best_objective, state.trials_since) == (2, 0.4, 0)
    # And a redelivered trial is a duplicate: counted neither in the totals nor in the state
    record, trial = recorded[0]
    assert not record_trial(record, trial, job_state(meta), team=None, services=services)
    again = services.store.get_job("race") or {}
    assert int(again["trials_recorded"]) == 2
    assert int(again["stagnation"]["trials_seen"]) == 2


def test_judging_stagnation_on_a_trial_event_reads_no_trial_records(world: World) -> None:
    # Given every stagnation measure on, and a job of 12 trials
    use_policy(world, "defaults: {stagnation_trials: 50, stagnation_minutes: 1000, stagnation_usd: 1000}\n")
    launch(world, per_definition_request("lean", max_jobs=12), [1.0 - i / 100 for i in range(12)], 300.0)
    queries: list[dict[str, Any]] = []
    training_event = [False]

    def seen(params: dict[str, Any], **_: Any) -> None:
        if training_event[0]:
            queries.append(params)

    client = world.env.services.store._client  # counting the adapter's own calls
    client.meta.events.register("provide-client-params.dynamodb.Query", seen)
    trial_events = 0
    for _ in range(600):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            training_event[0] = event["detail-type"] == "SageMaker Training Job State Change"
            trial_events += training_event[0] and event["detail"].get("TrainingJobStatus") == "Completed"
            deliver_event(event, world.env.services)
            training_event[0] = False
        if world.amt.idle():
            break
    # Then the twelve trials were judged without a Query over the job's trials
    assert trial_events == 12
    assert [q for q in queries if "TRIAL#" in str(q.get("ExpressionAttributeValues"))] == []
    state = (world.env.services.store.get_job("lean") or {})["stagnation"]
    assert int(state["trials_seen"]) == 12
